"""The opcode registry (rrsplice.ptx.isa): the whole PTX ISA instruction index has def/use roles
and the other per-opcode facts, and the analyses read them from there."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rrsplice import parse
from rrsplice.analysis.semantics import def_use, uncovered
from rrsplice.ptx.isa import ADDRESS_ARITH, INT_EVAL, PURE, REGISTRY, TERMINATORS, info, memory_effect, state_space

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "corpus_fixtures" / "conformance"

# The instruction index of the PTX ISA (9.0, chapter "Instructions"), one name per entry as
# the ISA titles it, written out here independently of the registry.
ISA_INDEX = """
add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi
szext bmsk dp4a dp2a
add.cc addc sub.cc subc mad.cc madc
testp copysign fma rcp rcp.approx.ftz.f64 sqrt rsqrt rsqrt.approx.ftz.f64 sin cos lg2 ex2
tanh
set setp selp slct
and or xor not cnot lop3 shf shl shr
mov shfl shfl.sync prmt ld ld.global.nc ldu st st.async st.bulk multimem.ld_reduce
multimem.st multimem.red multimem.cp.async.bulk multimem.cp.reduce.async.bulk prefetch
prefetchu applypriority discard createpolicy isspacep cvta cvt cvt.pack mapa getctarank
cp.async cp.async.commit_group cp.async.wait_group cp.async.wait_all cp.async.bulk
cp.reduce.async.bulk cp.async.bulk.prefetch cp.async.bulk.tensor
cp.reduce.async.bulk.tensor cp.async.bulk.prefetch.tensor cp.async.bulk.commit_group
cp.async.bulk.wait_group tensormap.replace ldmatrix stmatrix movmatrix
clusterlaunchcontrol.try_cancel clusterlaunchcontrol.query_cancel
tex tld4 txq istypep suld sust sured suq
bra brx.idx call ret exit
bar barrier bar.sync bar.arrive bar.red barrier.sync barrier.arrive barrier.red
bar.warp.sync barrier.cluster.arrive barrier.cluster.wait membar fence fence.proxy
atom red red.async vote vote.sync match.sync activemask redux.sync griddepcontrol
elect.sync mbarrier.init mbarrier.inval mbarrier.expect_tx mbarrier.complete_tx
mbarrier.arrive mbarrier.arrive_drop cp.async.mbarrier.arrive mbarrier.test_wait
mbarrier.try_wait mbarrier.pending_count tensormap.cp_fenceproxy setmaxnreg
wmma.load wmma.store wmma.mma mma mma.sp
wgmma.mma_async wgmma.mma_async.sp wgmma.fence wgmma.commit_group wgmma.wait_group
tcgen05.alloc tcgen05.dealloc tcgen05.relinquish_alloc_permit tcgen05.ld tcgen05.st
tcgen05.wait tcgen05.cp tcgen05.shift tcgen05.mma tcgen05.mma.sp tcgen05.mma.ws
tcgen05.mma.ws.sp tcgen05.fence tcgen05.commit
stacksave stackrestore alloca
vadd vsub vabsdiff vmin vmax vshl vshr vmad vset
vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2
vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4
brkpt nanosleep pmevent trap
""".split()


@pytest.mark.parametrize("name", ISA_INDEX)
def test_every_instruction_of_the_isa_index_has_a_registry_row(name):
    row = info(name)
    assert row is not None, name
    assert row.roles in ("D U*", "U*", "M U*", "A?")


def _one(line: str, target: str = "sm_100a"):
    src = textwrap.dedent(f"""\
        .version 8.7
        .target {target}
        .address_size 64
        .visible .entry k()
        {{
        .reg .b32 %r<9>;
        .reg .b64 %rd<9>;
        .reg .pred %p<4>;
        {line}
        }}
        """)
    (st,) = [s for s in parse(src).functions[0].statements if not s.is_label]
    return st


# forms from the ISA's syntax blocks: (instruction, registers written, registers read)
FORMS = [
    ("tcgen05.ld.sync.aligned.16x64b.x2.b32 {%r1, %r2}, [%r3];", {"%r1", "%r2"}, {"%r3"}),
    ("tcgen05.st.sync.aligned.16x64b.x2.b32 [%r3], {%r1, %r2};", set(), {"%r1", "%r2", "%r3"}),
    ("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;", set(), {"%r1"}),
    ("tcgen05.mma.cta_group::1.kind::f16 [%r1], %rd1, %rd2, %r2, %p1;", set(),
     {"%r1", "%rd1", "%rd2", "%r2", "%p1"}),
    ("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%rd1];", set(),
     {"%rd1"}),
    ("mbarrier.arrive.shared::cta.b64 %rd1, [%r1];", {"%rd1"}, {"%r1"}),
    ("mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;", {"%p1"}, {"%r1", "%r2"}),
    ("mbarrier.init.shared::cta.b64 [%r1], %r2;", set(), {"%r1", "%r2"}),
    ("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%r1], %r2;", set(), {"%r1", "%r2"}),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
     "[%r1], [%rd1, {%r2, %r3}], [%r4];", set(), {"%r1", "%rd1", "%r2", "%r3", "%r4"}),
    ("elect.sync _|%p1, -1;", {"%p1"}, set()),
    ("match.all.sync.b32 %r1|%p1, %r2, -1;", {"%r1", "%p1"}, {"%r2"}),
    ("vote.sync.ballot.b32 %r1, %p1, -1;", {"%r1"}, {"%p1"}),
    ("redux.sync.add.u32 %r1, %r2, -1;", {"%r1"}, {"%r2"}),
    ("activemask.b32 %r1;", {"%r1"}, set()),
    ("st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%r1], %r2, [%r3];", set(),
     {"%r1", "%r2", "%r3"}),
    ("vadd4.u32.u32.u32.sat %r1, %r2, %r3, %r4;", {"%r1"}, {"%r2", "%r3", "%r4"}),
    ("clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p1, %rd1;", {"%p1"}, {"%rd1"}),
    ("stacksave.u64 %rd1;", {"%rd1"}, set()),
    ("alloca.u64 %rd1, %rd2;", {"%rd1"}, {"%rd2"}),
    ("setmaxnreg.inc.sync.aligned.u32 232;", set(), set()),
]


@pytest.mark.parametrize("line,defs,uses", FORMS, ids=[f[0].split()[0] for f in FORMS])
def test_roles_of_isa_forms(line, defs, uses):
    du = def_use(_one(line))
    assert du.covered
    assert set(du.defs) == defs and set(du.uses) == uses


def test_wgmma_accumulator_is_read_and_written():
    du = def_use(_one("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
                      "{%r1, %r2, %r3, %r4}, %rd1, %rd2, 1, 1, 1, 0, 0;", "sm_90a"))
    assert set(du.defs) == {"%r1", "%r2", "%r3", "%r4"}
    assert {"%r1", "%rd1", "%rd2"} <= set(du.uses)


def test_memory_effects_and_state_spaces():
    assert memory_effect("ld.global.nc.v4.u32") == "read"
    assert state_space("ld.global.nc.v4.u32") == "global"
    assert state_space("st.shared::cta.b32") == "shared"
    assert state_space("ld.u32") == "generic"
    assert memory_effect("cp.async.bulk.tensor.2d.shared::cluster.global") == "copy"
    assert memory_effect("atom.global.add.u32") == "atomic"
    assert memory_effect("add.s32") == "" and state_space("add.s32") is None
    assert info("bar.sync").barrier == "block" and info("bar.warp.sync").barrier == "warp"
    assert info("wgmma.wait_group.sync.aligned").barrier == "async"
    assert info("cp.async.bulk.tensor.1d.global.shared::cta").is_async


def test_the_facts_the_analyses_read():
    assert TERMINATORS == {"bra", "brx", "ret", "exit", "trap"}
    assert {"mov", "cvta", "cvt", "add", "sub", "mad", "and", "or", "xor", "selp"} == \
        ADDRESS_ARITH
    assert INT_EVAL["mad"](3, 4, 5) == 17 and INT_EVAL["neg"](7) == -7
    with pytest.raises(ValueError):
        INT_EVAL["shl"](1, -1)
    # warp-collective and carry-reading opcodes are never recomputed per thread
    assert not {"mma", "shfl", "movmatrix", "addc", "ld", "vote"} & PURE
    assert {"add", "mad", "cvt", "selp", "lop3", "prmt"} <= PURE
    for key, row in REGISTRY.items():
        assert row.section and row.roles, key


@pytest.mark.slow
def test_uncovered_is_empty_on_the_conformance_corpus():
    files = sorted(CONFORMANCE.rglob("*.ptx"))
    assert len(files) >= 50
    missing = {}
    seen = set()
    for p in files:
        for fn in parse(p).functions:
            seen.update(st.base for st in fn.statements if not st.is_label)
            for op, idx in uncovered(fn).items():
                missing.setdefault(op, f"{p.relative_to(ROOT)}:{fn.name}:s{idx[0]}")
    assert not missing
    assert {"wgmma", "tcgen05", "mbarrier", "cp", "elect", "match", "redux"} <= seen
