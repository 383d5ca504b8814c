"""Property test: liveness over programs with nested `{ }` scopes that redeclare (shadow)
registers, with predicate-pair (`%r|%p`) and sink (`_|%p`) destinations, agrees with a
brute-force path search.

The ground truth is written by the generator beside each instruction: it keeps its own
scope environment (name -> the register that name means here) while it writes the text, so
every instruction carries the *identities* it reads, writes and kills. A register declared
in a nested block is identified as `NAME@B<k>`, k counting the blocks that declare registers
in the order the generator writes them (the key format is rrsplice.ptx.scopes').
Only the parser is shared with the code under test.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_liveness_property import Reference  # the brute-force path search

from rrsplice import parse
from rrsplice.analysis.dataflow import FunctionAnalysis
from rrsplice.ptx.select import StatementRange

HEADER = [".version 8.7", ".target sm_90", ".address_size 64", "",
          ".visible .entry k()", "{",
          "\t.reg .pred \t%p<4>;", "\t.reg .b32 \t%r<5>;"]
OUTER = {"%rd0": "%rd0", "%r1": "%r1", "%r2": "%r2", "%r3": "%r3", "%r4": "%r4",
         "%p1": "%p1", "%p2": "%p2", "%p3": "%p3"}
# names a nested block may declare: (name, type); `t`/`q` are declared without '%'
SCOPED = [("%r2", ".b32"), ("%r3", ".b32"), ("t", ".b32"), ("%p1", ".pred"), ("q", ".pred")]


class Line:
    """One generated line. Instructions and labels carry their ground truth: the register
    *names* they read, write and kill (turned into identities when the text is laid out)."""

    def __init__(self, text, kind="plain", uses=(), defs=(), kills=(), target=None,
                 guarded=False, label=None):
        self.text = text
        self.kind = kind            # plain | bra | ret | label
        self.uses = frozenset(uses)
        self.defs = frozenset(defs)
        self.kills = frozenset(kills)
        self.target = target
        self.guarded = guarded
        self.label = label


class Scope:
    """A nested `{ }` block: the registers it declares, then its items."""

    def __init__(self, decls, items):
        self.decls = decls
        self.items = items


PREDS = {"%p1", "%p2", "%p3", "q"}


@st.composite
def instruction(draw, visible, nlabels):
    ints = sorted(n for n in visible if n not in PREDS and n != "%rd0")
    preds = sorted(n for n in visible if n in PREDS)
    r = lambda: draw(st.sampled_from(ints))       # noqa: E731
    p = lambda: draw(st.sampled_from(preds))      # noqa: E731
    kind = draw(st.integers(0, 12 if nlabels else 9))
    if kind == 0:
        x = r()
        return Line(f"mov.u32 {x}, {draw(st.integers(0, 9))};", defs={x}, kills={x})
    if kind == 1:
        x, y, z = r(), r(), r()
        return Line(f"add.s32 {x}, {y}, {z};", uses={y, z}, defs={x}, kills={x})
    if kind == 2:
        g, x, y = p(), r(), r()
        # a guarded write may not happen: it reads the old value and kills nothing
        return Line(f"@{g} add.s32 {x}, {y}, 1;", uses={g, y, x}, defs={x})
    if kind == 3:
        a = p()
        others = [n for n in preds if n != a]
        x, y = r(), r()
        if not others:
            return Line(f"setp.lt.s32 {a}, {x}, {y};", uses={x, y}, defs={a}, kills={a})
        b = draw(st.sampled_from(others))
        return Line(f"setp.lt.s32 {a}|{b}, {x}, {y};", uses={x, y}, defs={a, b},
                    kills={a, b})
    if kind == 4:
        d, g, x = r(), p(), r()
        return Line(f"shfl.sync.bfly.b32 {d}|{g}, {x}, 1, 31, -1;", uses={x}, defs={d, g},
                    kills={d, g})
    if kind == 5:
        g = p()
        return Line(f"elect.sync _|{g}, -1;", defs={g}, kills={g})
    if kind == 6:
        d, g = r(), p()
        return Line(f"elect.sync {d}|{g}, -1;", defs={d, g}, kills={d, g})
    if kind == 7:
        x, y, g = r(), r(), p()
        return Line(f"selp.b32 {x}, {y}, 7, {g};", uses={y, g}, defs={x}, kills={x})
    if kind == 8:
        x = r()
        return Line(f"st.global.u32 [%rd0], {x};", uses={x, "%rd0"})
    if kind == 9:
        return Line("ret;", "ret")
    lab = f"$L{draw(st.integers(0, nlabels - 1))}"
    if kind == 10:
        return Line(f"bra.uni {lab};", "bra", target=lab)
    g = p()
    return Line(f"@{g} bra {lab};", "bra", uses={g}, target=lab, guarded=True)


@st.composite
def program(draw):
    """The statements of a function body with nested scopes that shadow registers, laid
    out as PTX lines; returns (ptx text, [Line] with identities, in statement order)."""
    nlabels = draw(st.integers(0, 3))

    def block(visible, depth):
        items = []
        for _ in range(draw(st.integers(1, 6))):
            if depth < 3 and draw(st.integers(0, 3)) == 0:
                decls = draw(st.lists(st.sampled_from(SCOPED), max_size=3, unique=True))
                items.append(Scope(decls, block(visible | {n for n, _ in decls},
                                                depth + 1)))
            else:
                items.append(draw(instruction(visible, nlabels)))
        return items

    top = block(set(OUTER), 0)
    for k in range(nlabels):     # labels are function-wide: branches leave and enter blocks
        top.insert(draw(st.integers(0, len(top))), Line(f"$L{k}:", "label", label=f"$L{k}"))
    return layout(top)


def layout(top):
    """PTX text and the statements with their ground truth in identities: a name means the
    innermost enclosing declaration of it, `NAME@B<k>` for the k-th declaring block's."""
    text = HEADER + ["\t.reg .b64 \t%rd<1>;"]
    stmts = []
    blocks = [0]

    def emit(items, env):
        for it in items:
            if isinstance(it, Scope):
                text.append("\t{")
                inner = dict(env)
                if it.decls:
                    blocks[0] += 1
                for name, typ in it.decls:
                    text.append(f"\t.reg {typ} {name};")
                    inner[name] = f"{name}@B{blocks[0]}"
                emit(it.items, inner)
                text.append("\t}")
                continue
            text.append(it.text if it.kind == "label" else "\t" + it.text)
            ids = lambda names: {env[n] for n in names}    # noqa: E731
            stmts.append(Line(it.text, it.kind, ids(it.uses), ids(it.defs), ids(it.kills),
                              it.target, it.guarded, it.label))

    emit(top, dict(OUTER))
    return "\n".join(text + ["}", ""]), stmts


# ---------------------------------------------------------------- the reference

def _analysis(text, stmts):
    fn = parse(text).functions[0]
    assert [s.sid for s in fn.statements] == [f"s{i}" for i in range(1, len(stmts) + 1)]
    return FunctionAnalysis(fn)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program())
@pytest.mark.slow
def test_scoped_statement_liveness_matches_path_search(prog):
    text, stmts = prog
    fa = _analysis(text, stmts)
    ref = Reference(stmts)
    for i, s in enumerate(stmts, 1):
        got = fa.du[i - 1]
        assert set(got.uses) == s.uses and set(got.defs) == s.defs, (i, s.text)
        assert set(got.kills) == s.kills, (i, s.text)
        assert set(fa.live_in_at(i)) == ref.live_in(i), (i, s.text, text)
        assert set(fa.live_out_at(i)) == ref.live_out(i), (i, s.text, text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program(), st.data())
@pytest.mark.slow
def test_scoped_range_liveness_matches_path_search(prog, data):
    text, stmts = prog
    fa = _analysis(text, stmts)
    ref = Reference(stmts)
    a = data.draw(st.integers(1, len(stmts)))
    b = data.draw(st.integers(a, len(stmts)))
    rng = StatementRange(a, b)
    assert set(fa.range_live_in(rng)) == ref.range_live_in(a, b), text
    assert set(fa.range_live_out(rng)) == ref.range_live_out(a, b), text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program())
@pytest.mark.slow
def test_generated_programs_are_ptx_that_ptxas_accepts(tmp_path_factory, prog):
    """The generator writes real PTX (scoped redeclarations, bare names, pairs, sinks)."""
    exe = shutil.which("ptxas")
    if exe is None:
        assert os.environ.get("RRSPLICE_REQUIRE_PTXAS") != "1", "ptxas not found"
        return
    text, _ = prog
    path = tmp_path_factory.mktemp("scoped") / "k.ptx"
    path.write_text(text)
    res = subprocess.run([exe, "-arch=sm_90", "-c", str(path), "-o", os.devnull],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + text
