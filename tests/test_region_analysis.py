"""The one region analysis (rrsplice.analysis.regions.Region) that `check` and `outline` share: its
boundary edges, classified, on a kernel whose control flow is read off by hand; and, over
every statement range of kernels with loops, branch tables and exits, `check`'s control
findings and `outline`'s refusals agree ("check passes => outline accepts")."""

from __future__ import annotations

from pathlib import Path

import pytest

from rrsplice.analysis.dataflow import FunctionAnalysis
from rrsplice.analysis.exits import return_labels
from rrsplice.check.core import _check_control
from rrsplice.outline import OutlineError, region_needs
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange

ROOT = Path(__file__).resolve().parent.parent

# s1 ld.param  s2 cvta  s3 ld %r1  s4 mov %r2  s5 setp %p1  s6 @%p1 bra $L_b
# s7 $L_a:  s8 add %r2  s9 and %r3  s10 brx.idx %r3, ts (-> $L_b, $L_c)
# s11 $L_b:  s12 add %r4  s13 setp %p2  s14 @%p2 bra $L_a  s15 $L_c:  s16 st  s17 ret
BRX = """.version 8.7
.target sm_89
.address_size 64

.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred %p<4>;
\t.reg .b32 %r<12>;
\t.reg .b64 %rd<3>;

\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
\tld.global.u32 %r1, [%rd2];
\tmov.u32 %r2, 0;
\tsetp.gt.u32 %p1, %r1, 3;
\t@%p1 bra $L_b;
$L_a:
\tadd.u32 %r2, %r1, 1;
\tand.b32 %r3, %r1, 1;
ts: .branchtargets $L_b, $L_c;
\tbrx.idx %r3, ts;
$L_b:
\tadd.u32 %r4, %r2, 2;
\tsetp.lt.u32 %p2, %r4, 9;
\t@%p2 bra $L_a;
$L_c:
\tst.global.u32 [%rd2+4], %r4;
\tret;
}
"""


def _fa(text=BRX):
    return FunctionAnalysis(parse(text).functions[0])


def Region(*args):
    from rrsplice.analysis.regions import Region as _Region  # imported here: the agreement
    return _Region(*args)                                 # tests run on any checkout


def _edges(edges):
    return {(e.source, e.target, e.kind) for e in edges}


def test_boundary_edges_are_classified_as_read_off_the_kernel():
    fa = _fa()
    # the loop $L_b..s14: entered at its head label by the guarded bra at s6 and by the
    # branch table at s10 (the cut removes $L_b: both are errors unless the text keeps it)
    r = Region(fa, StatementRange(11, 14))
    assert _edges(r.entries) == {(6, 11, "head"), (10, 11, "head")}
    # s14 loops back to $L_a (outside: stray) or falls to $L_c, the statement after
    assert _edges(r.exits) == {(14, 7, "stray"), (14, 15, "fall")}
    assert r.indirect == [] and r.unresolved == []
    # the same cut with $L_a dispatched by the splice text
    r = Region(fa, StatementRange(11, 14), frozenset({"$L_a"}))
    assert _edges(r.exits) == {(14, 7, "dispatch"), (14, 15, "fall")}
    # s8-s12 begins and ends inside basic blocks; the bra at s6 enters it at $L_b (a
    # second entry); the table at s10 leaves it for $L_c
    r = Region(fa, StatementRange(8, 12))
    assert _edges(r.entries) == {(7, 8, "fall"), (6, 11, "side")}
    assert _edges(r.exits) == {(10, 15, "stray"), (12, 13, "fall")}
    assert r.indirect == [10]
    # whole loop with the table: both ways out reach $L_c, the statement after it
    r = Region(fa, StatementRange(7, 14))
    assert _edges(r.entries) == {(6, 7, "fall"), (6, 11, "side")}
    assert _edges(r.exits) == {(10, 15, "fall"), (14, 15, "fall")}


def test_return_labels_directly_after_the_region_are_returns():
    fa = _fa()
    r = Region(fa, StatementRange(7, 10))      # $L_a .. brx: exits to $L_b (s11), $L_c
    assert {(e.target, e.kind) for e in r.exits} == {(11, "fall"), (15, "stray")}
    r = Region(fa, StatementRange(7, 14))      # through the loop: $L_c (s15) is next
    assert {(e.target, e.kind) for e in r.exits} == {(15, "fall")}
    assert r.back == frozenset({"$L_c"})


def test_needs_at_exit_counts_the_registers_read_back_only_on_returning_paths():
    fa = _fa()
    r = Region(fa, StatementRange(12, 14))
    # %r4 is written at s12 before any read: not needed; %r2 is
    assert set(r.needs_at_exit({"%r4"})) == {"%r2"}
    # %r9 never written in the kernel: needed unchanged at the exit
    assert set(r.needs_at_exit({"%r9"})) == {"%r2", "%r9"}
    assert r.needs_at_exit({"%r9"})["%r9"] is None and r.needs_at_exit(set())["%r2"] == 12


class _Collect:
    def __init__(self, fa):
        self.analysis, self.target, self.found = fa, None, []

    def add(self, severity, code, message, st=None, line=None, registers=()):
        self.found.append((severity, code, message))


def _agree(text: str):
    """(ranges compared, ranges outline refused) over every range of `text`'s kernel;
    asserts that check's control errors and outline's refusals coincide."""
    fa = _fa(text)
    fn = fa.fn
    n = len(fn.statements)
    compared = refused = 0
    for a in range(1, n + 1):
        for b in range(a, n + 1):
            rng = StatementRange(a, b)
            head = fn.statements[a - 1]
            kept = {head.label} if head.is_label else set()
            rep = _Collect(fa)
            _check_control(rep, fn, rng, set(), kept)
            check_errors = [m for s, _c, m in rep.found if s == "error"]
            indirect = [m for _s, c, m in rep.found if "branch table" in m]
            try:
                region_needs(fn, rng, set(), frozenset(return_labels(fn, rng)))
                why = None
            except OutlineError as exc:
                why = str(exc)
            compared += 1
            refused += why is not None
            if check_errors:
                assert why is not None, (a, b, check_errors)
            if why is not None:
                # outline refuses only what check reports: an error, or its warning that
                # outline cannot take a branch table along
                assert check_errors or (indirect and "indirect branch" in why), (a, b, why)
    return compared, refused


def test_check_and_outline_agree_on_every_range_of_a_kernel_with_a_branch_table():
    compared, refused = _agree(BRX)
    assert compared == 17 * 18 // 2 and 0 < refused < compared


@pytest.mark.parametrize("name", ["cfg_loops.ptx"])
def test_check_and_outline_agree_on_every_range_of_the_loop_fixture(name):
    compared, refused = _agree((ROOT / "corpus_fixtures" / "small" / name).read_text())
    assert 0 < refused < compared


def test_a_branch_table_into_the_region_is_a_second_entry_for_outline_too():
    # s10's table enters s12-s17 at $L_c (s15), not at its first statement; the loop's
    # branch back to $L_a is taken as a dispatched exit
    fa = _fa()
    fn = fa.fn
    with pytest.raises(OutlineError, match=r"s10 .*branches to \$L_c .*second entry"):
        region_needs(fn, StatementRange(12, 17), set(), frozenset({"$L_a"}))
    with pytest.raises(OutlineError, match="indirect branch in the region"):
        region_needs(fn, StatementRange(10, 17), set(), frozenset())
