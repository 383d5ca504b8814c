"""Basic blocks and edges."""

from __future__ import annotations

from pathlib import Path

from rrsplice import parse
from rrsplice.analysis.cfg import build_cfg

FIX = Path(__file__).resolve().parent.parent / "corpus_fixtures" / "small"

HEADER = """.version 8.7
.target sm_89
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred \t%p<8>;
\t.reg .b32 \t%r<40>;
\t.reg .b64 \t%rd<8>;
"""


def cfg_of(body: str):
    m = parse(HEADER + body + "\n}\n")
    fn = m.functions[0]
    return fn, build_cfg(fn)


def shape(cfg):
    return [(b.first, b.last, sorted(cfg.blocks[s].first for s in b.succs)) for b in cfg.blocks]


def test_cfg_loops_blocks():
    fn = parse(FIX / "cfg_loops.ptx").functions[0]
    cfg = build_cfg(fn)
    # leaders: s1, the labels s18/s24/s29/s32/s45, and the statement after each branch,
    # ret or exit
    assert shape(cfg) == [
        (1, 14, [15, 24]),       # @%p1 bra $L__BB0_3: side entry, and fall-through
        (15, 17, [18]),
        (18, 22, [18, 23]),      # the loop's back edge
        (23, 23, [24]),          # @%p2 mov (guarded definition, no branch)
        (24, 26, [27, 29]),      # @%p4 bra.uni $L__BB0_5
        (27, 28, [32]),          # bra.uni $L__BB0_6 (the join)
        (29, 31, [32]),
        (32, 35, [36, 45]),      # @%p5 bra $L__BB0_8
        (36, 42, [43]),          # @%p6 exit: guarded, falls through
        (43, 44, []),            # ret
        (45, 47, []),            # exit
    ]
    assert cfg.unresolved == []
    assert [b.id for b in cfg.exits()] == [9, 10]
    for b in cfg.blocks:
        for s in b.succs:
            assert b.id in cfg.blocks[s].preds
    assert cfg.stmt_succs(14) == [24, 15]
    assert sorted(cfg.stmt_preds(24)) == [14, 23]
    assert cfg.stmt_preds(16) == [15]
    assert cfg.block(20).first == 18


def test_reverse_postorder_starts_at_entry_and_covers_all():
    fn = parse(FIX / "cfg_loops.ptx").functions[0]
    cfg = build_cfg(fn)
    rpo = cfg.reverse_postorder()
    assert rpo[0] == 0 and sorted(rpo) == list(range(len(cfg.blocks)))
    pos = {b: i for i, b in enumerate(rpo)}
    # every forward (non-back) edge goes later in reverse postorder
    assert pos[1] < pos[2] < pos[3] < pos[4]


def test_brx_idx_targets_from_branchtargets():
    fn = parse(FIX / "shapes_operands.ptx").functions[0]
    cfg = build_cfg(fn)
    brx = next(s for s in fn.statements if s.base == "brx")
    b = cfg.block(brx.index)
    assert b.last == brx.index
    targets = sorted(fn.statements[cfg.blocks[s].first - 1].label for s in b.succs)
    assert targets == ["$L__BB0_1", "$L__BB0_2"]
    assert cfg.unresolved == []


def test_call_does_not_end_a_block_and_ret_exit_trap_do():
    fn, cfg = cfg_of("\tcall.uni g;\n\tadd.s32 %r1, %r2, 1;\n\t@%p1 ret;\n"
                     "\tadd.s32 %r1, %r1, 1;\n\t@%p2 trap;\n\tmov.u32 %r3, 0;\n\texit;\n"
                     "\tmov.u32 %r4, 0;")
    assert shape(cfg) == [(1, 3, [4]), (4, 5, [6]), (6, 7, []), (8, 8, [])]
    # s8 follows an unguarded exit: unreachable, no predecessors
    assert cfg.blocks[3].preds == []
    assert cfg.reverse_postorder()[-1] == 3


def test_guarded_branch_has_two_successors_and_unguarded_one():
    fn, cfg = cfg_of("$L0:\n\tadd.s32 %r1, %r1, 1;\n\t@!%p1 bra $L0;\n\tbra.uni $L1;\n"
                     "\tmov.u32 %r2, 1;\n$L1:\n\tret;")
    assert shape(cfg) == [(1, 3, [1, 4]), (4, 4, [6]), (5, 5, [6]), (6, 7, [])]
    assert cfg.blocks[0].preds == [0]


def test_unknown_branch_target_is_reported():
    fn, cfg = cfg_of("\t@%p1 bra $Lnowhere;\n\tret;")
    assert cfg.unresolved == [(1, "$Lnowhere")]
    assert shape(cfg) == [(1, 1, [2]), (2, 2, [])]


def test_empty_body():
    m = parse(HEADER + "}\n")
    cfg = build_cfg(m.functions[0])
    assert cfg.blocks == [] and cfg.reverse_postorder() == []
