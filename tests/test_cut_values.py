"""Values that cross a cut the way `recipe new` scaffolds it: predicates (passed and read
back as a 32-bit 1/0), vector registers (`.reg .v2 .b32 %v`), a `.reg` with a special
register's name, and a write before an inner block's own declaration.

For each kernel and cut, both return conventions: `check` passes, `apply` writes a module
ptxas assembles, `outline` accepts ("check passes => outline accepts") and writes a body
ptxas assembles, and the values survive: the reference interpreter (tests/ptx_interp.py)
runs the original kernel, and separately the applied kernel up to its call, the outlined
body with the call's parameters, and the applied kernel on from the call with the body's
returns; the global memory the two runs leave must be the same, on inputs chosen so that
every predicate takes both values."""

from __future__ import annotations

import random
import subprocess

import pytest
from ptx_interp import Machine, run

from rrsplice.check import check_recipe
from rrsplice.outline import outline_recipe
from rrsplice.ptx.model import ParenList, Symbol
from rrsplice.ptx.parser import parse
from rrsplice.workflow.scaffold import new_recipe
from rrsplice.workflow.splice import apply

G = 0x10000          # k_param_0's value: the global buffer
SMEM = 0x100         # where the interpreter puts the first .shared array

HEAD = """.version 8.7
.target sm_89
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<3>;
"""

# s1 ld.param, s2 cvta, s3 ld %r1, s4 setp %p1, s5 ld.v2 %v1, s6 add, s7 selp (%p1),
# s8 mov %v1.x, s9 add, s10 setp %p2, s11 mov %v1.y, s12 @%p2 add, s13 @%p1 st,
# s14 st.v2 %v1, s15 st %r5, s16 ret
PRED_VEC = HEAD + """\t.reg .v2 .b32 %v1;

\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.u32 %r1, [%rd2];
\tsetp.gt.u32 %p1, %r1, 10;
\tld.global.v2.u32 %v1, [%rd2+8];
\tadd.u32 %r2, %r1, 1;
\tselp.b32 %r3, %r2, %r1, %p1;
\tmov.b32 %r4, %v1.x;
\tadd.u32 %r5, %r3, %r4;
\tsetp.lt.u32 %p2, %r5, 100;
\tmov.u32 %r6, %v1.y;
\t@%p2 add.u32 %r6, %r6, 1;
\t@%p1 st.global.u32 [%rd2+4], %r6;
\tst.global.v2.u32 [%rd2+16], %v1;
\tst.global.u32 [%rd2+24], %r5;
\tret;
}
"""

# a four-wide vector register and a predicate both written in the cut (s4-s7), read after
PRED_VEC4 = HEAD + """\t.reg .v4 .b32 %w;

\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.u32 %r1, [%rd2];
\tld.global.v4.u32 %w, [%rd2+16];
\tsetp.ne.u32 %p3, %r1, 7;
\tmov.b32 %r2, %w.z;
\tadd.u32 %r3, %r2, %r1;
\t@%p3 st.global.u32 [%rd2+4], %r3;
\tst.global.v4.u32 [%rd2+32], %w;
\tret;
}
"""

# the cut s5-s6 reads only %p1, whose load the kernel's own store may overwrite: the body
# cannot recompute it, it must take the passed 1/0
PRED_LOAD = HEAD + """
	ld.param.u64 %rd1, [k_param_0];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.u32 %r1, [%rd2];
	setp.gt.u32 %p1, %r1, 10;
	mov.u32 %r2, 5;
	@%p1 mov.u32 %r2, 9;
	st.global.u32 [%rd2+4], %r2;
	ret;
}
"""

SPECIAL = HEAD + """\t.reg .b32 %smid;
\t.reg .b32 %envreg<40>;

\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.u32 %smid, [%rd2];
\tld.global.u32 %envreg32, [%rd2+8];
\tadd.u32 %r1, %smid, 1;
\txor.b32 %envreg32, %envreg32, %r1;
\tst.global.u32 [%rd2+4], %smid;
\tst.global.u32 [%rd2+12], %envreg32;
\tst.global.u32 [%rd2+16], %r1;
\tret;
}
"""

# s3 writes the OUTER %r3 (the block's own declaration follows it), s4-s5 the block's
SCOPED = HEAD + """
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\t{
\tld.global.u32 %r3, [%rd2];
\t.reg .b32 %r3;
\tld.global.u32 %r3, [%rd2+8];
\tst.global.u32 [%rd2+4], %r3;
\t}
\tst.global.u32 [%rd2+12], %r3;
\tret;
}
"""

CASES = {
    "pred-vec-out": (PRED_VEC, "s4-s9", None),
    "pred-vec-in": (PRED_VEC, "s6-s12", None),
    "pred-vec-through": (PRED_VEC, "s5-s13", None),
    "vec4-pred-out": (PRED_VEC4, "s4-s7", None),
    "pred-only-in": (PRED_LOAD, "s5-s6", None),
    "special-names": (SPECIAL, "s3-s6", None),
    "outer-write-before-decl": (SCOPED, "s3-s5", (15, 21)),
}


def _recipe(tmp_path, case: str, abi: str):
    text, rng, lines = CASES[case]
    mod = tmp_path / "m.ptx"
    mod.write_text(text)
    rec = tmp_path / f"r_{abi}.py"
    new_recipe(f"r_{abi}", mod, rng, abi=abi, out=rec)
    if lines is not None:       # the scaffold's cut takes in the block's braces
        assert _cut_call(rec.read_text()) == lines
    return rec


def _cut_call(text: str) -> tuple:
    line = next(x for x in text.splitlines() if x.startswith("CUT_CALL = ("))
    a, b = line.split("(", 1)[1].rstrip(")").split(",")
    return int(a), int(b)


def _machine(fn, module, seed: int, inputs: dict = None) -> Machine:
    """A thread at the kernel's entry: global words from `seed` (or `inputs`, byte offset
    -> value), every `.shared` array at an address of its own, `.param` names known."""
    rnd = random.Random(seed)
    m = Machine(special={"%tid.x": 5, "%tid.y": 0, "%tid.z": 0, "%laneid": 5,
                         "%ntid.x": 32, "%ntid.y": 1, "%ntid.z": 1})
    m.symbols["k_param_0"] = ("param", None)
    m.mem["param"][("k_param_0", 0)] = G
    # small values, so that `%r1 > 10`, `%r1 != 7`, `%r5 < 100` go both ways
    # the words the kernels read; G+4 stays unwritten unless a guarded store writes it
    m.mem["global"][G] = rnd.choice([3, 7, 11, 12, 50])
    for off in (8, 12, 16, 20, 24, 28):
        m.mem["global"][G + off] = rnd.choice([0, 3, 7, 11, 12, 50, 97, 200, 1 << 31])
    if inputs is not None:
        m.mem["global"] = {G + off: v for off, v in inputs.items()}
    addr = SMEM
    for d in list(module.decls) + list(fn.decls()):
        if d.space == ".shared":
            m.symbols[d.name] = ("shared", addr)
            addr += (d.byte_size or 4) + 16
        elif d.space == ".param":
            m.symbols[d.name] = ("param", None)
    return m


def _original(text: str, seed: int, inputs: dict = None) -> dict:
    mod = parse(text)
    fn = mod.functions[0]
    m = _machine(fn, mod, seed, inputs)
    assert run(fn, m) == "ret"
    return m.mem["global"]


def _spliced(applied: str, body_ptx: str, seed: int, inputs: dict = None) -> dict:
    """Global memory after the applied kernel runs with the outlined body as its callee."""
    mod = parse(applied)
    fn = next(f for f in mod.functions if f.has_body)
    call = next(st for st in fn.statements if st.base == "call")
    m = _machine(fn, mod, seed, inputs)
    assert run(fn, m, 1, call.index - 1) == "exit"
    bmod = parse(body_ptx)
    body = next(f for f in bmod.functions if f.has_body)
    ops = call.operands
    rets = ops[0].items if isinstance(ops[0], ParenList) else ()
    args = ops[-1].items if isinstance(ops[-1], ParenList) else ()
    bm = Machine(mem={**m.mem, "param": {}}, special=dict(m.special))
    bm.symbols.update({n: v for n, v in m.symbols.items() if v[0] == "shared"})
    pairs = [(a.name, p.name) for a, p in zip(args, body.params, strict=False) if isinstance(a, Symbol)]
    for (caller, callee) in pairs:
        bm.symbols[callee] = ("param", None)
        for (name, off), v in m.mem["param"].items():
            if name == caller:
                bm.mem["param"][(callee, off)] = v
    for p in body.ret_params:
        bm.symbols[p.name] = ("param", None)
    assert run(body, bm) == "ret"
    for a, p in zip(rets, body.ret_params, strict=False):
        for (name, off), v in bm.mem["param"].items():
            if name == p.name:
                m.mem["param"][(a.name, off)] = v
    assert run(fn, m, call.index + 1) == "ret"
    return m.mem["global"]


@pytest.mark.parametrize("abi", ["param", "scratch"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_scaffolded_cut_checks_outlines_and_delivers_every_value(case, abi, tmp_path):
    rec = _recipe(tmp_path, case, abi)
    rep = check_recipe(rec)
    assert rep.ok, [f.render() for f in rep.errors]
    res = apply(rec, out=tmp_path / "applied.ptx")
    body, _path, _rec = outline_recipe(rec)
    applied = res.output.read_text()
    changed = 0
    for seed in range(12):
        want = _original(CASES[case][0], seed)
        got = _spliced(applied, body.ptx.decode(), seed)
        assert got == want, (case, abi, seed, body.ptx.decode())
        before = _machine(parse(CASES[case][0]).functions[0], parse(CASES[case][0]),
                          seed).mem["global"]
        changed += sum(1 for a, v in want.items() if before.get(a) != v)
    # not vacuous: the kernel's stores change memory the comparison sees
    assert changed >= 12, changed


@pytest.mark.slow
@pytest.mark.parametrize("abi", ["param", "scratch"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_scaffolded_cut_and_body_assemble(case, abi, tmp_path, ptxas_path):
    rec = _recipe(tmp_path, case, abi)
    res = apply(rec, out=tmp_path / "applied.ptx")
    body, _path, _rec = outline_recipe(rec)
    (tmp_path / "body.ptx").write_bytes(body.ptx)
    for src in (res.output, tmp_path / "body.ptx"):
        r = subprocess.run([str(ptxas_path), "-arch=sm_89", "-c", str(src), "-o",
                            str(tmp_path / "o.cubin")], capture_output=True, text=True)
        assert r.returncode == 0, (src.name, r.stderr)


def test_the_predicates_take_both_values_on_the_inputs():
    """Not vacuous: over the seeds, %p1 (s13's guard) stores and skips."""
    guarded = {G + 4 in _original(PRED_VEC, seed) for seed in range(12)}
    assert guarded == {True, False}
    guarded = {G + 4 in _original(PRED_VEC4, seed) for seed in range(12)}
    assert guarded == {True, False}


def test_check_refuses_a_vector_register_moved_as_a_scalar(tmp_path):
    rec = _recipe(tmp_path, "pred-vec-out", "param")
    text = rec.read_text().replace('lines.append("\\tld.%s%s %s, %s;" % (space, t, part, src))',
                                   'lines.append("\\tld.%s.b32 %s, %s;" % (space, part, src))')
    assert text != rec.read_text()
    rec.write_text(text)
    rep = check_recipe(rec)
    assert [f.code for f in rep.errors] == ["call-types"], [f.render() for f in rep.errors]
    assert "%v1" in rep.errors[0].message and "vector size mismatch" in rep.errors[0].message


@pytest.mark.slow
@pytest.mark.parametrize("abi", ["param", "scratch"])
def test_verify_links_a_scaffolded_predicate_and_vector_cut(abi, tmp_path, ptxas_path,
                                                           nvlink_path):
    from click.testing import CliRunner

    from rrsplice.cli import main
    rec = _recipe(tmp_path, "pred-vec-through", abi)
    r = CliRunner().invoke(main, ["verify", str(rec), "--keep", str(tmp_path / "keep")])
    assert r.exit_code == 0, r.output
    assert "verified" in r.output
