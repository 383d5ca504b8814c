"""The def/use table: one PTX ISA form per case, parsed from real PTX text."""

from __future__ import annotations

import pytest

from rrsplice import parse
from rrsplice.analysis.semantics import (
    OPCODE_ROLES,
    def_use,
    family_of,
    is_pseudo,
    operand_roles,
    register_sort_key,
    sort_registers,
    uncovered,
)
from rrsplice.ptx.scopes import is_scoped, source_name

HEADER = """.version 8.7
.target sm_89
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .pred \t%p<8>;
\t.reg .b16 \t%rs<8>;
\t.reg .b32 \t%r<40>;
\t.reg .f32 \t%f<8>;
\t.reg .b64 \t%rd<8>;
"""


def stmts(body: str):
    m = parse(HEADER + body + "\n}\n")
    return m.functions[0].statements


def du(line: str):
    (st,) = [s for s in stmts("\t" + line) if not s.is_label]
    return def_use(st)


def check(line, defs, uses, kills=None, covered=True):
    d = du(line)
    assert set(d.defs) == set(defs), d
    assert set(d.uses) == set(uses), d
    assert set(d.kills) == set(defs if kills is None else kills), d
    assert d.covered is covered
    return d


# ---------------------------------------------------------------- destinations

def test_mma_defines_every_register_of_d():
    d = check("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%r1, %r2}, "
              "{%r3, %r4, %r5, %r6}, {%r7, %r8}, {%r9, %r9};",
              {"%r1", "%r2"}, {"%r3", "%r4", "%r5", "%r6", "%r7", "%r8", "%r9"})
    assert d.uses.count("%r9") == 1


def test_mma_four_line_form():
    text = ("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%r10, %r11},\n"
            "\t{%r1, %r2, %r3, %r4},\n\t{%r5, %r6},\n\t{%r10, %r11};")
    check(text, {"%r10", "%r11"}, {"%r1", "%r2", "%r3", "%r4", "%r5", "%r6", "%r10", "%r11"})


def test_vector_load_defines_all():
    check("ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1+16];",
          {"%r1", "%r2", "%r3", "%r4"}, {"%rd1"})


def test_unpack_defines_both_halves_and_pack_uses_both():
    check("mov.b32 {%rs1, %rs2}, %r1;", {"%rs1", "%rs2"}, {"%r1"})
    check("mov.b32 %r1, {%rs1, %rs2};", {"%r1"}, {"%rs1", "%rs2"})
    check("mov.b32 {%rs1, _}, %r1;", {"%rs1"}, {"%r1"})


def test_scoped_bare_registers():
    sts = stmts("\t{\n\t.reg .f16 low, high;\n\tmov.b32 {low, high}, %r9;\n"
                "\tmov.b16 %rs1, high;\n\t}")
    defs = def_use(sts[0]).defs
    assert {source_name(k) for k in defs} == {"low", "high"} and all(map(is_scoped, defs))
    (high,) = def_use(sts[1]).uses
    assert source_name(high) == "high" and high in defs


def test_setp_pair_defines_both():
    check("setp.lt.s32 %p1|%p2, %r1, %r2;", {"%p1", "%p2"}, {"%r1", "%r2"})
    check("setp.lt.and.s32 %p1|%p2, %r1, %r2, %p3;", {"%p1", "%p2"}, {"%r1", "%r2", "%p3"})
    check("set.lt.u32.s32 %r1, %r2, %r3;", {"%r1"}, {"%r2", "%r3"})


def test_shfl_with_predicate_destination():
    check("shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;", {"%r1", "%p1"}, {"%r2"})
    check("shfl.sync.idx.b32 %r1, %r2, %r3, 0x1f, %r4;", {"%r1"}, {"%r2", "%r3", "%r4"})


# ---------------------------------------------------------------- uses only

@pytest.mark.parametrize("line,uses", [
    ("st.global.v2.u32 [%rd2+8], {%r1, %r2};", {"%rd2", "%r1", "%r2"}),
    ("st.shared.u32 [%r5+-8], %r3;", {"%r5", "%r3"}),
    ("red.global.add.u32 [%rd2+4], %r1;", {"%rd2", "%r1"}),
    ("sust.b.2d.v2.b16.zero [%rd2, {%r2, %r4}], {%rs1, %rs2};",
     {"%rd2", "%r2", "%r4", "%rs1", "%rs2"}),
    ("bar.sync 0;", set()),
    ("bar.sync %r1, 64;", {"%r1"}),
    ("bar.warp.sync -1;", set()),
    ("membar.gl;", set()),
    ("fence.proxy.async.shared::cta;", set()),
    ("cp.async.ca.shared.global [%r1], [%rd1], 16;", {"%r1", "%rd1"}),
    ("cp.async.commit_group;", set()),
    ("cp.async.wait_group 0;", set()),
    ("ret;", set()),
    ("exit;", set()),
    ("trap;", set()),
    ("brx.idx %r3, $L__BRX_0;", {"%r3"}),
    ("prefetch.global.L2 [%rd1];", {"%rd1"}),
])
def test_use_only_forms(line, uses):
    check(line, set(), uses)


def test_bra_uses_nothing_but_its_guard():
    sts = stmts("\t@%p1 bra $L1;\n$L1:\n\tret;")
    assert def_use(sts[0]) .uses == ("%p1",)
    assert def_use(sts[0]).defs == ()


def test_bar_red_has_a_destination():
    check("bar.red.popc.u32 %r1, 0, %p1;", {"%r1"}, {"%p1"})


def test_atom_defines_destination_and_uses_the_rest():
    check("atom.global.add.u32 %r1, [%rd2], %r3;", {"%r1"}, {"%rd2", "%r3"})
    check("atom.shared.cas.b32 %r1, [%r5+4], %r9, %r15;", {"%r1"}, {"%r5", "%r9", "%r15"})


def test_addresses_are_uses():
    check("ld.shared.u32 %r1, [ %r5 + 0 ];", {"%r1"}, {"%r5"})
    check("ld.global.u32 %r1, [sym+16];", {"%r1"}, set())


# ---------------------------------------------------------------- guards, specials

def test_guarded_definition_uses_destination_and_kills_nothing():
    check("@%p1 mov.u32 %r1, 5;", {"%r1"}, {"%p1", "%r1"}, kills=set())
    check("@!%p2 ld.global.v2.u32 {%r1, %r2}, [%rd1];", {"%r1", "%r2"},
          {"%p2", "%r1", "%r2", "%rd1"}, kills=set())


def test_read_modify_write_still_kills():
    check("add.s32 %r1, %r1, 1;", {"%r1"}, {"%r1"})


def test_special_registers_are_not_variables():
    check("mov.u32 %r1, %tid.x;", {"%r1"}, set())
    check("mov.u32 %r1, %laneid;", {"%r1"}, set())
    check("mov.u32 %r2, %ctaid.y;", {"%r2"}, set())


# ---------------------------------------------------------------- the rest of the families

@pytest.mark.parametrize("line,defs,uses", [
    ("tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [texref, {%f5, %f6}];",
     {"%f1", "%f2", "%f3", "%f4"}, {"%f5", "%f6"}),
    ("suld.b.2d.v2.b32.trap {%r1, %r2}, [%rd1, {%r3, %r4}];", {"%r1", "%r2"},
     {"%rd1", "%r3", "%r4"}),
    ("vote.sync.ballot.b32 %r1, %p1, -1;", {"%r1"}, {"%p1"}),
    ("vote.sync.any.pred %p2, !%p1, -1;", {"%p2"}, {"%p1"}),
    ("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1, %r2, %r3, %r4}, [%r5];",
     {"%r1", "%r2", "%r3", "%r4"}, {"%r5"}),
    ("movmatrix.sync.aligned.m8n8.trans.b16 %r1, %r2;", {"%r1"}, {"%r2"}),
    ("cvt.rn.f16x2.f32 %r1, %f1, %f2;", {"%r1"}, {"%f1", "%f2"}),
    ("cvt.rn.satfinite.e4m3x2.f16x2 %rs1, %r2;", {"%rs1"}, {"%r2"}),
    ("prmt.b32 %r1, %r2, %r3, 0x5410;", {"%r1"}, {"%r2", "%r3"}),
    ("selp.b32 %r1, %r2, %r3, %p1;", {"%r1"}, {"%r2", "%r3", "%p1"}),
    ("slct.s32.s32 %r1, %r2, %r3, %r4;", {"%r1"}, {"%r2", "%r3", "%r4"}),
    ("mad.lo.s32 %r1, %r2, %r3, %r4;", {"%r1"}, {"%r2", "%r3", "%r4"}),
    ("fma.rn.f32 %f1, %f2, %f3, %f4;", {"%f1"}, {"%f2", "%f3", "%f4"}),
    ("cvta.to.global.u64 %rd2, %rd1;", {"%rd2"}, {"%rd1"}),
    ("ld.param.u64 %rd1, [k_param_0+40];", {"%rd1"}, set()),
    ("ex2.approx.ftz.f32 %f1, %f2;", {"%f1"}, {"%f2"}),
    ("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%r1, %r2}, [%rd1], %r3;",
     {"%r1", "%r2"}, {"%rd1", "%r3"}),
    ("elect.sync %r1|%p1, -1;", {"%r1", "%p1"}, set()),
    ("mbarrier.arrive.shared::cta.b64 %rd3, [%r4];", {"%rd3"}, {"%r4"}),
    ("mbarrier.init.shared::cta.b64 [%r4], 128;", set(), {"%r4"}),
    ("mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], %r9;", {"%p2"}, {"%r4", "%r9"}),
])
def test_families(line, defs, uses):
    check(line, defs, uses)


def test_wmma_store_only_uses():
    check("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%rd1], {%f1, %f2}, %r1;", set(),
          {"%rd1", "%f1", "%f2", "%r1"})


def test_carry_chain_is_a_pseudo_register():
    d = check("add.cc.u32 %r1, %r2, %r3;", {"%r1", "cc:CF"}, {"%r2", "%r3"})
    assert is_pseudo("cc:CF")
    d = du("addc.u32 %r4, %r5, %r6;")
    assert "cc:CF" in d.uses and "cc:CF" not in d.defs


# ---------------------------------------------------------------- calls and .param

CALL_BLOCK = """\t{
\t.param .b32 param0;
\tst.param.b32 [param0], %r1;
\t.param .align 8 .b8 param1[8];
\tst.param.b32 [param1], %r2;
\tst.param.b32 [param1+4], %r3;
\t.param .b32 retval0;
\tcall.uni (retval0), f, (param0, param1);
\tld.param.b32 %r4, [retval0];
\t}
"""


def test_call_block_values_flow_through_param_symbols():
    sts = stmts(CALL_BLOCK)
    d = [def_use(s) for s in sts]
    assert d[0].defs == ("param:param0",) and d[0].kills == ("param:param0",)
    assert d[0].uses == ("%r1",)
    # a partial write of an 8-byte param keeps the rest: it does not kill
    assert d[1].defs == ("param:param1",) and d[1].kills == ()
    assert "param:param1" in d[1].uses and "%r2" in d[1].uses
    assert d[3].defs == ("param:retval0",)
    assert set(d[3].uses) == {"param:param0", "param:param1"}
    assert d[4].uses == ("param:retval0",) and d[4].defs == ("%r4",)


def test_call_forms():
    text = CALL_BLOCK.replace("call.uni (retval0), f, (param0, param1);",
                              "call (retval0), %rd3, (param0, param1), proto;")
    sts = stmts(text)
    assert "%rd3" in def_use(sts[3]).uses
    (st,) = stmts("\tcall.uni g;")
    assert def_use(st).defs == () and def_use(st).uses == ()
    (st,) = stmts("\tcall.uni g, (%r1, %r2);")
    assert set(def_use(st).uses) == {"%r1", "%r2"}
    assert operand_roles(st) == ["use", "use"]


def test_kernel_parameters_are_not_modelled():
    check("ld.param.u64 %rd1, [k_param_0];", {"%rd1"}, set())


# ---------------------------------------------------------------- conservative fallback

def test_unknown_opcode_is_conservative_and_reported():
    sts = stmts("\tfrobnicate.b32 %r1, %r2, [%rd1];\n\tfrobnicate.b32 %r3, %r1;\n"
                "\tadd.s32 %r4, %r3, 1;")
    d = def_use(sts[0])
    assert d.covered is False
    assert set(d.defs) == {"%r1"}
    assert set(d.uses) == {"%r1", "%r2", "%rd1"}
    assert d.kills == ()
    assert uncovered(sts[0].function) == {"frobnicate.b32": [1, 2]}


@pytest.mark.slow
def test_every_fixture_opcode_is_covered():
    from pathlib import Path
    fixtures = Path(__file__).resolve().parent.parent / "corpus_fixtures"
    paths = sorted(p for p in fixtures.rglob("*.ptx") if "bad" not in p.relative_to(fixtures).parts)
    assert len(paths) >= 15, paths          # the small, seed and real fixtures are all there
    missing = {}
    for p in paths:
        m = parse(p)                          # every good fixture parses
        for fn in m.functions:
            for op, idx in uncovered(fn).items():
                missing.setdefault(op, []).append(f"{p}:{fn.name}:s{idx[0]}")
    assert not missing


def test_table_keys_are_families():
    for key, pattern in OPCODE_ROLES.items():
        assert key == key.lower()
        assert pattern in ("D U*", "U*", "M U*", "A?")


def test_labels_are_empty():
    sts = stmts("$L1:\n\tret;")
    assert def_use(sts[0]).defs == () and def_use(sts[0]).uses == ()
    assert family_of(sts[0]) is None


# ---------------------------------------------------------------- ordering

def test_register_sort_key_is_natural():
    names = ["%rd1", "%r10", "%p2", "%r2", "%p1", "%rs1", "%f3", "param:x", "%r1"]
    assert sort_registers(names) == ["%f3", "%p1", "%p2", "%r1", "%r2", "%r10", "%rd1",
                                     "%rs1", "param:x"]
    assert register_sort_key("%r19360") < register_sort_key("%r19361")
