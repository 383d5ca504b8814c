"""Control flow and liveness answers a user reads, on small kernels whose answers are
worked out by hand (written beside each kernel): statement successors and predecessors,
range live-in/live-out lists free of pseudo-registers, guarded and unknown-opcode
definitions, the carry flag, reaching definitions and first uses after a range."""

from __future__ import annotations

import textwrap

import pytest

from rrsplice import parse
from rrsplice.analysis.cfg import build_cfg
from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.semantics import def_use, is_block_barrier, sort_registers, uncovered
from rrsplice.ptx.select import StatementRange

HEAD = textwrap.dedent("""\
    .version 8.7
    .target sm_89
    .address_size 64
    .extern .func (.param .b32 f_ret) f (.param .b32 f_a);
    .visible .entry k(
    \t.param .u64 k_param_0
    )
    {
    \t.reg .pred \t%p<8>;
    \t.reg .b32 \t%r<40>;
    \t.reg .b64 \t%rd<8>;
    """)


def fn_of(*lines: str):
    return parse(HEAD + "".join(f"\t{ln}\n" for ln in lines) + "}\n").functions[-1]


# s1 mov; s2 @%p1 bra L2; s3 add; s4 bra L3; s5 L2:; s6 sub; s7 L3:; s8 @%p2 ret;
# s9 mul; s10 ret
BRANCHY = ("mov.u32 %r1, %tid.x;", "@%p1 bra L2;", "add.s32 %r2, %r1, 1;", "bra L3;", "L2:",
           "sub.s32 %r2, %r1, 1;", "L3:", "@%p2 ret;", "mul.lo.s32 %r3, %r2, 3;", "ret;")
SUCCS = {1: [2], 2: [5, 3], 3: [4], 4: [7], 5: [6], 6: [7], 7: [8], 8: [9], 9: [10], 10: []}
PREDS = {1: [], 2: [1], 3: [2], 4: [3], 5: [2], 6: [5], 7: [4, 6], 8: [7], 9: [8], 10: [9]}


def test_statement_successors_and_predecessors():
    cfg = build_cfg(fn_of(*BRANCHY))
    for i, want in SUCCS.items():
        assert sorted(cfg.stmt_succs(i)) == sorted(want), f"s{i}"
    for i, want in PREDS.items():
        assert sorted(cfg.stmt_preds(i)) == sorted(want), f"s{i}"


def test_exits_are_blocks_without_successors():
    cfg = build_cfg(fn_of(*BRANCHY))
    assert sorted(b.last for b in cfg.exits()) == [10]


def test_unresolved_branch_and_unreachable_block():
    fn = fn_of("bra NOWHERE;", "add.s32 %r1, %r1, 1;", "ret;")
    cfg = build_cfg(fn)
    assert cfg.unresolved == [(1, "NOWHERE")]
    assert cfg.stmt_succs(1) == []
    # the block after the branch is unreachable but still ordered
    assert sorted(cfg.reverse_postorder()) == list(range(len(cfg.blocks)))


def test_brx_idx_reaches_every_table_label():
    fn = fn_of("ts: .branchtargets A, B;", "brx.idx %r1, ts;", "A:", "add.s32 %r2, %r2, 1;",
               "ret;", "B:", "ret;")
    cfg = build_cfg(fn)
    # s1 brx.idx, s2 A:, s3 add, s4 ret, s5 B:, s6 ret
    assert sorted(cfg.stmt_succs(1)) == [2, 5]
    assert cfg.unresolved == []


def test_guarded_branch_falls_through_unguarded_does_not():
    cfg = build_cfg(fn_of("@%p1 bra A;", "add.s32 %r1, %r1, 1;", "A:", "ret;"))
    assert sorted(cfg.stmt_succs(1)) == [2, 3]
    cfg = build_cfg(fn_of("bra A;", "add.s32 %r1, %r1, 1;", "A:", "ret;"))
    assert cfg.stmt_succs(1) == [3]


# the carry chain and a call block: the range s2-s3 cuts `add.cc` from `addc`, and a
# .param slot of the call block is written inside it
CARRY = ("mov.u32 %r1, %tid.x;",            # s1
         "add.cc.u32 %r2, %r1, 7;",         # s2  writes cc:CF
         "mul.lo.s32 %r5, %r1, 3;",         # s3
         "addc.u32 %r3, %r1, 0;",           # s4  reads cc:CF
         "add.s32 %r4, %r3, %r2;",          # s5
         "add.s32 %r6, %r4, %r5;",          # s6
         "st.global.u32 [%rd1], %r6;",      # s7
         "ret;")


def test_pseudo_registers_stay_out_of_range_lists():
    fa = analyze(fn_of(*CARRY))
    rng = StatementRange(2, 3)
    assert fa.range_live_out(rng) == ["%r2", "%r5"]
    assert fa.range_live_out(rng, pseudo=True) == ["%r2", "%r5", "cc:CF"]
    assert fa.range_live_in(rng) == ["%r1"]
    assert fa.range_defs(rng) == ["%r2", "%r5"]
    assert fa.range_defs(rng, pseudo=True) == ["%r2", "%r5", "cc:CF"]
    assert "cc:CF" in fa.live_out_at(2)
    # %r1 and %rd1 are live across the range without being written in it
    assert fa.range_live_through(rng) == ["%r1", "%rd1"]
    assert fa.range_pass_in_for_out(rng) == []
    # the carry is read at s4 only
    assert fa.range_live_in(StatementRange(4, 5), pseudo=True) == ["%r1", "%r2", "cc:CF"]
    assert fa.range_live_in(StatementRange(4, 5)) == ["%r1", "%r2"]


CALL = ("mov.u32 %r1, %tid.x;",                      # s1
        "{",
        ".param .b32 a;",
        ".param .b32 r;",
        "st.param.b32 [a+0], %r1;",                    # s2 writes param:a
        "call.uni (r), f, (a);",                       # s3 reads param:a, writes param:r
        "ld.param.b32 %r2, [r+0];",                    # s4
        "}",
        "add.s32 %r3, %r2, %r1;",                      # s5
        "st.global.u32 [%rd1], %r3;",                  # s6
        "ret;")


def test_call_block_params_are_pseudo_registers():
    fn = fn_of(*CALL)
    fa = analyze(fn)
    assert def_use(fn.statement(3)).uses == ("param:a",)
    assert def_use(fn.statement(3)).defs == ("param:r",)
    rng = StatementRange(2, 3)
    assert fa.range_live_out(rng) == []
    assert fa.range_live_out(rng, pseudo=True) == ["param:r"]
    assert fa.range_live_in(rng) == ["%r1"]
    assert fa.range_live_in(StatementRange(3, 4), pseudo=True) == ["param:a"]


def test_guarded_definition_keeps_the_old_value_live():
    fn = fn_of("mov.u32 %r1, 5;",                 # s1
               "@%p1 mov.u32 %r1, 7;",            # s2
               "st.global.u32 [%rd1], %r1;",      # s3
               "ret;")
    fa = analyze(fn)
    du = def_use(fn.statement(2))
    assert du.uses == ("%p1", "%r1") and du.defs == ("%r1",) and du.kills == ()
    assert fa.range_live_in(StatementRange(2, 3)) == ["%p1", "%r1", "%rd1"]
    assert fa.reaching_defs(3, "%r1") == [1, 2]
    assert fa.reaching_defs(2, "%r1") == [1]


def test_unguarded_redefinition_kills():
    fn = fn_of("mov.u32 %r1, 5;", "mov.u32 %r1, 7;", "st.global.u32 [%rd1], %r1;", "ret;")
    fa = analyze(fn)
    assert fa.reaching_defs(3, "%r1") == [2]
    assert fa.range_live_in(StatementRange(2, 3)) == ["%rd1"]
    assert "%r1" not in fa.live_in_at(2)
    assert fa.live_in_at(3) == frozenset({"%r1", "%rd1"})
    assert fa.reaches_from_entry(3, "%rd1")
    assert not fa.reaches_from_entry(3, "%r1")


def test_read_then_write_in_one_statement():
    fn = fn_of("add.s32 %r1, %r1, 1;", "st.global.u32 [%rd1], %r1;", "ret;")
    fa = analyze(fn)
    assert fa.range_live_in(StatementRange(1, 1)) == ["%r1"]
    assert fa.live_in_at(1) == frozenset({"%r1", "%rd1"})


def test_unknown_opcode_is_conservative():
    fn = fn_of("mov.u32 %r1, 1;", "frobnicate.b32 %r1, %r2;", "st.global.u32 [%rd1], %r1;",
               "ret;")
    du = def_use(fn.statement(2))
    assert not du.covered
    assert du.defs == ("%r1",) and set(du.uses) == {"%r1", "%r2"} and du.kills == ()
    fa = analyze(fn)
    assert fa.reaching_defs(3, "%r1") == [1, 2]
    assert uncovered(fn) == {"frobnicate.b32": [2]}


@pytest.mark.parametrize("text,defs,uses,kills", [
    ("mad.lo.s32 %r1, %r2, %r3, %r4;", ["%r1"], ["%r2", "%r3", "%r4"], ["%r1"]),
    ("st.global.u32 [%rd1+4], %r2;", [], ["%rd1", "%r2"], []),
    ("atom.global.add.u32 %r1, [%rd1], %r2;", ["%r1"], ["%rd1", "%r2"], ["%r1"]),
    ("ld.global.v2.u32 {%r1, %r2}, [%rd1];", ["%r1", "%r2"], ["%rd1"], ["%r1", "%r2"]),
    ("mov.u32 %r1, %tid.x;", ["%r1"], [], ["%r1"]),
    ("setp.lt.s32 %p1|%p2, %r1, 3;", ["%p1", "%p2"], ["%r1"], ["%p1", "%p2"]),
    ("bar.red.popc.u32 %r1, 0, %p1;", ["%r1"], ["%p1"], ["%r1"]),
    ("vote.sync.all.pred %p1, !%p2, -1;", ["%p1"], ["%p2"], ["%p1"]),
    # registers inside an address are read, whatever the position's role
    ("atom.global.add.u32 [%rd1+4], %r2, 1;", [], ["%rd1", "%r2"], []),
])
def test_def_use_by_opcode(text, defs, uses, kills):
    du = def_use(fn_of(text, "ret;").statement(1))
    assert list(du.defs) == defs and sorted(du.uses) == sorted(uses)
    assert list(du.kills) == kills and du.covered


@pytest.mark.parametrize("text,whole", [("bar.sync 0;", True), ("barrier.sync 0;", True),
                                        ("bar.sync 1, 64;", False), ("@%p1 bar.sync 0;", False),
                                        ("bar.warp.sync -1;", False)])
def test_block_barriers(text, whole):
    assert is_block_barrier(fn_of(text, "ret;").statement(1)) is whole


def test_register_order_is_numeric():
    assert sort_registers(["%r10", "%r2", "%rd1", "%p1", "cc:CF", "%r1"]) == \
        ["%p1", "%r1", "%r2", "%r10", "%rd1", "cc:CF"]


def test_first_uses_after_a_range():
    fn = fn_of("mov.u32 %r1, 1;",                # s1
               "mov.u32 %r2, 2;",                # s2  range s1-s2
               "mov.u32 %r1, 3;",                # s3  redefines %r1 (no use)
               "add.s32 %r3, %r2, %r1;",         # s4  uses %r2 (and the new %r1)
               "st.global.u32 [%rd1], %r3;",
               "ret;")
    fa = analyze(fn)
    rng = StatementRange(1, 2)
    assert fa.first_uses_after(rng, "%r2") == [4]
    assert fa.first_uses_after(rng, "%r1") == []
    assert fa.range_live_out(rng) == ["%r2"]


def test_range_entered_by_a_branch_from_outside():
    fn = fn_of("@%p1 bra L;",                 # s1
               "mov.u32 %r1, 1;",             # s2  range s2-s4
               "L:",                          # s3
               "add.s32 %r2, %r1, 1;",        # s4
               "st.global.u32 [%rd1], %r2;",  # s5
               "ret;")
    fa = analyze(fn)
    rng = StatementRange(2, 4)
    assert sorted(fa.range_entries(rng)) == [2, 3]
    # entered at L, %r1 has not been written: it is live in
    assert fa.range_live_in(rng) == ["%r1"]
    assert fa.range_exits(rng) == [(4, 5)]


def test_range_ending_inside_a_block_exits_to_the_next_statement():
    fa = analyze(fn_of(*CARRY))
    assert fa.range_exits(StatementRange(2, 3)) == [(3, 4)]


def test_register_written_on_one_path_is_passed_in_for_out():
    # %r2 is written only when %p1 is false; read after the range: the caller must pass it
    # in (the other path keeps it) and take it back out
    fn = fn_of("mov.u32 %r2, 1;",                # s1
               "@%p1 bra L;",                    # s2  range s2-s4
               "mov.u32 %r2, 5;",                # s3
               "L:",                             # s4
               "st.global.u32 [%rd1], %r2;",     # s5
               "ret;")
    fa = analyze(fn)
    rng = StatementRange(2, 4)
    assert fa.range_live_in(rng) == ["%p1"]
    assert fa.range_live_through(rng) == ["%p1", "%r2", "%rd1"]
    assert fa.range_live_out(rng) == ["%r2"]
    assert fa.range_pass_in_for_out(rng) == ["%r2"]


def test_statement_indices_start_at_one():
    fa = analyze(fn_of("mov.u32 %r1, 1;", "ret;"))
    with pytest.raises(IndexError):
        fa.live_in_at(0)
    with pytest.raises(IndexError):
        fa.live_out_at(3)
    assert fa.live_in_at(2) == frozenset()
