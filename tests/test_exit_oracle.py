"""The exit oracle: generated regions that leave through branches to the statement after
them and to two other labels are run by the reference interpreter (tests/ptx_interp.py)
once inside the kernel and once as the outlined body. The body must return the same values
and the exit index the call text dispatches to the label the kernel went to.

Ground truth is the interpreter's run of the kernel: which label control reached after the
region, and the registers' values there. The call text (written here, as `rrsplice recipe
new` writes it) dispatches `setp.eq.u32 %rrsq, %rrsx, K; @%rrsq bra EXITS[K-1];`.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptx_interp import Machine, Unsupported, _execute
from test_outline_oracle import HEAD, Gen, _dest, fresh_machine, region_and_body

from rrsplice.outline import OutlineError, build_outline
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange

EXITS = ["$X1", "$X2"]          # dispatched exits: index 1 and 2; "$RET" (0) follows the cut


def region_with_exits(g: Gen) -> list:
    r = g.r
    out = g.region()
    # branches out of the region: to the label right after it, and to the two others
    for _ in range(r.randrange(1, 4)):
        at = r.randrange(0, len(out) + 1)
        out.insert(at, g.guard() + f"bra {r.choice(['$RET'] + EXITS)};")
    if r.random() < 0.5:
        out.append(f"bra.uni {r.choice(['$RET'] + EXITS)};")
    return [s for s in out if not s.endswith("ret;")]     # leave only through the exits


def build(seed: int):
    g = Gen(random.Random(seed))
    pre = g.prefix()
    reg = region_with_exits(g)
    pre.append("ld.param.u32 %r13, [k_param_1];")   # passed: the region's parameter reads
    n_head = 3
    first = n_head + len(pre) + 1
    last = first + len(reg) - 1
    tail = ["$RET:", "\tadd.s32 %r30, %r2, 1;", "\tret;", "$X1:", "\tadd.s32 %r30, %r2, 2;",
            "\tret;", "$X2:", "\tadd.s32 %r30, %r2, 3;", "\tret;"]
    text = HEAD + "".join(f"\t{s}\n" if not s.startswith("$") else f"{s}\n" for s in pre + reg)
    text += "\n".join(tail) + "\n}\n"
    returned = []
    for s in reg:
        for d in _dest(s):
            if d.startswith("%r") and d not in returned:
                returned.append(d)
    rnd = random.Random(seed * 7 + 1)
    passed = ["%rd2", "%r13"] + [x for x in ["%r1"] + [f"%r{i}" for i in range(2, 13)]
                                 if rnd.random() < 0.85]
    return text, StatementRange(first, last), passed, returned


def call_text(passed, returned):
    lines = ["{", "\t.reg .b32 %rrsx;", "\t.reg .pred %rrsq;"]
    names = []
    for i, r in enumerate(passed):
        t = "b64" if r.startswith("%rd") else "b32"
        lines += [f"\t.param .{t} a{i};", f"\tst.param.{t} [a{i}+0], {r};"]
        names.append(f"a{i}")
    n = len(returned) + 1
    lines.append(f"\t.param .align 4 .b8 rv[{4 * n}];")
    lines.append(f"\tcall.uni (rv), body, ({', '.join(names)});")
    lines += [f"\tld.param.b32 {r}, [rv+{4 * i}];" for i, r in enumerate(returned)]
    lines.append(f"\tld.param.b32 %rrsx, [rv+{4 * len(returned)}];")
    for k, lab in enumerate(EXITS, 1):
        lines += [f"\tsetp.eq.u32 %rrsq, %rrsx, {k};", f"\t@%rrsq bra {lab};"]
    lines.append("}")
    params = ",\n".join(f"\t.param .{'b64' if r.startswith('%rd') else 'b32'} body_a{i}"
                        for i, r in enumerate(passed))
    ext = f".extern .func (.param .align 4 .b8 body_ret[{4 * n}]) body\n(\n{params}\n)\n;\n"
    return "\n".join(lines), ext


def run_region(fn, m: Machine, first: int, last: int) -> str:
    """Run statements first..last; the label control leaves to ("$RET" when it falls
    through the end)."""
    stmts = fn.statements
    labels = {s.label: s.index for s in stmts if s.is_label}
    i = first
    while i <= last:
        m.steps += 1
        if m.steps > 10000:
            raise Unsupported("too many steps")
        s = stmts[i - 1]
        i += 1
        if s.is_label:
            continue
        if s.guard is not None and m.pred(s.guard.reg) == s.guard.negated:
            continue
        if s.base == "bra":
            name = s.operands[0].name
            if not first <= labels[name] <= last:
                return name
            i = labels[name]
            continue
        _execute(s, s.base, s.modifiers, s.operands, m)
    return "$RET"


def outcome(seed: int):
    text, rng, passed, returned = build(seed)
    mod = parse(text)
    fn = mod.functions[0]
    call, ext = call_text(passed, returned)
    try:
        o = build_outline(mod, fn, rng, call, ext)
    except OutlineError as exc:
        return "refused", str(exc)
    kernel = fresh_machine(seed)
    went, bm = region_and_body(fn, rng, o, passed, kernel, run_region)
    got = {r: bm.mem["param"].get(("body_ret", 4 * i)) for i, r in enumerate(returned)}
    want = {r: kernel.regs[r] for r in returned}
    index = bm.mem["param"].get(("body_ret", 4 * len(returned)))
    where = f"seed {seed}\n{text}\nregion {rng}\n--- body ---\n{o.ptx.decode()}"
    assert (["$RET"] + EXITS)[index] == went, f"went to {went}, exit index {index}: {where}"
    assert got == want, f"values differ: {where}"
    assert bm.mem["global"] == kernel.mem["global"], f"global memory differs: {where}"
    return "same", went


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(st.integers(min_value=0, max_value=10 ** 6))
@pytest.mark.slow
def test_outlined_body_leaves_where_the_region_leaves(seed):
    outcome(seed)


@pytest.mark.slow
def test_the_exit_oracle_takes_every_exit():
    """Over a fixed set of kernels every exit is taken by some compared run."""
    went: dict = {}
    refused = 0
    for seed in range(150):
        kind, what = outcome(seed)
        if kind == "refused":
            refused += 1
            assert what
            continue
        went[what] = went.get(what, 0) + 1
    print(went, refused)
    assert set(went) == {"$RET", "$X1", "$X2"} and min(went.values()) >= 10, went
