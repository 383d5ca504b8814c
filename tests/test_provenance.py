"""Value provenance, `.shared` symbol uses and live-in classification."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_mma import A_REGS, C_REGS, DEC1, DEC1_A, DEC1_SEEDS, DEC2, SMALL, body, need

from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.mma import phases
from rrsplice.analysis.provenance import (
    Const,
    Load,
    Param,
    ParamBlock,
    SharedAddr,
    Special,
    Unknown,
    WeightImage,
    classify_live_in,
    def_value,
    symbol_uses,
    value_of,
    weight_offset,
)
from rrsplice.cli import main
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange

SCRATCH2 = "_ZZ33cuda_dldn_engine_swin_dec2_kernel33DldnEngineSwinEncParamsStructBaseE4smem"


def fa_of(text: str):
    """The snippets have no mma, so provenance finds no weight pointer: name the DLSS one,
    as a recipe's W_PARAM = "+40" does."""
    from rrsplice.analysis.paramroles import name_weight, parse_ref, weight_param
    fn = parse(body(text).encode(), filename="t.ptx").functions[0]
    fa = analyze(fn)
    if weight_param(fa) is None and fn.params:
        name_weight(fa, parse_ref(fn, "+40"))
    return fa


def sid(fa, needle: str) -> int:
    """The statement number of the first statement whose text contains `needle`."""
    for st in fa.fn.statements:
        if needle in st.text:
            return st.index
    raise AssertionError(needle)


PROLOGUE = ("\tcvta.param.u64 %rd7, k_param_0;\n"
            "\tld.param.u64 %rd8, [k_param_0+40];\n"
            "\tcvta.to.global.u64 %rd32, %rd8;\n")


# ---------------------------------------------------------------- values

def test_parameter_block_weight_image_and_vector_lanes():
    fa = fa_of(PROLOGUE + "\tld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd32+1024];\n"
               "\tadd.s32 %r5, %r1, %r4;\n")
    end = sid(fa, "add.s32 %r5")
    assert value_of(fa, end, "%rd7") == ParamBlock("k_param_0")
    assert value_of(fa, end, "%rd8") == Param("k_param_0", 40)
    assert value_of(fa, end, "%rd32") == WeightImage()
    v = value_of(fa, end, "%r3")
    assert isinstance(v, Load) and v.space == "global" and v.base == WeightImage()
    assert (v.offset, v.index, v.width) == (1024, 2, 4)
    assert [weight_offset(fa, end, f"%r{i}") for i in (1, 2, 3, 4)] == [1024, 1028, 1032, 1036]
    assert weight_offset(fa, end, "%rd32") is None


def test_offsets_through_pointer_arithmetic():
    fa = fa_of(PROLOGUE
               + "\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 4;\n\tadd.s32 %r3, %r2, 512;\n"
               "\tcvt.u64.u32 %rd1, %r3;\n\tadd.s64 %rd2, %rd32, %rd1;\n"
               "\tadd.s64 %rd3, %rd2, 256;\n\tsub.s64 %rd4, %rd3, 16;\n"
               "\tld.global.nc.u32 %r10, [%rd4+8];\n"
               "\tmov.u64 %rd5, %rd8;\n\tmad.wide.u32 %rd6, %r1, 4, %rd5;\n"
               "\tld.global.nc.u32 %r11, [%rd6+64];\n\tret;\n")
    end = sid(fa, "ret")
    # 512 + 256 - 16 + 8 for lane 0; the lane part is runtime
    v = value_of(fa, end, "%r10")
    assert isinstance(v, Load) and v.dynamic and v.offset == 760
    assert weight_offset(fa, end, "%r10") == 760
    # the raw param_0+40 pointer, used without cvta, is the weight image too
    assert weight_offset(fa, end, "%r11") == 64
    assert value_of(fa, end, "%r1") == Special("%tid.x")


def test_register_reuse_resolves_at_the_program_point():
    fa = fa_of(PROLOGUE
               + "\tld.global.nc.u32 %r7, [%rd32+16];\n\tadd.s32 %r20, %r7, 1;\n"
               "\tld.global.nc.u32 %r7, [%rd32+32];\n\tadd.s32 %r21, %r7, 1;\n")
    assert weight_offset(fa, sid(fa, "%r20"), "%r7") == 16
    assert weight_offset(fa, sid(fa, "%r21"), "%r7") == 32


def test_shared_symbol_addresses():
    fa = fa_of("\tmov.u32 %r1, smem;\n\tadd.s32 %r2, %r1, 16;\n\tmov.u32 %r3, %laneid;\n"
               "\tmad.lo.s32 %r4, %r3, 48, %r2;\n\tcvta.shared.u64 %rd1, smem;\n\tret;\n")
    end = sid(fa, "ret")
    assert value_of(fa, end, "%r2") == SharedAddr("smem", 16)
    assert value_of(fa, end, "%r4") == SharedAddr("smem", 16, True)
    assert value_of(fa, end, "%rd1") == SharedAddr("smem", 0)


def test_several_definitions_and_loops():
    fa = fa_of("\tmov.u32 %r1, 5;\n\t@%p1 mov.u32 %r1, 5;\n\tmov.u32 %r2, 5;\n"
               "\t@%p1 mov.u32 %r2, 6;\n\tadd.s32 %r3, %r1, %r2;\n"
               "$L__BB0_1:\n\tadd.s32 %r4, %r4, 1;\n\t@%p2 bra $L__BB0_1;\n\tret;\n")
    at = sid(fa, "add.s32 %r3")
    assert value_of(fa, at, "%r1") == Const(5)          # both definitions agree
    v = value_of(fa, at, "%r2")
    assert isinstance(v, Unknown) and "2 definitions" in v.reason
    assert isinstance(value_of(fa, sid(fa, "ret"), "%r4"), Unknown)
    assert isinstance(value_of(fa, at, "%r9"), Unknown)  # never defined
    assert def_value(fa, at, "%r3") == Unknown("2 definitions of %r2 reach with different "
                                               "values (s3, s4)")


def test_small_fixture_values():
    fn = parse(SMALL).functions[0]
    fa = analyze(fn)
    first_mma = next(st.index for st in fn.statements if st.base == "mma")
    assert value_of(fa, first_mma, "%rd2") == WeightImage()
    assert value_of(fa, first_mma, "%rd1") == Param("_Z16small_mma_kernel6Params_param_0", 40)
    assert weight_offset(fa, first_mma, "%r9") == 8192
    assert weight_offset(fa, first_mma, "%r7") == 2048
    assert value_of(fa, first_mma, "%r44") == Special("%tid.x")


# ---------------------------------------------------------------- symbol uses

def test_symbol_uses_small_fixture():
    fn = parse(SMALL).functions[0]
    su = symbol_uses(analyze(fn), "_ZZ16small_mma_kernel6ParamsE4smem")
    kinds = [(a.sid, a.kind, a.via) for a in su.accesses]
    assert kinds == [("s33", "address", None), ("s34", "address", "%r47"),
                     ("s35", "write", "%r48"), ("s50", "address", "%r47"),
                     ("s51", "read", "%r51")]
    assert su.derived_registers == ["%r47", "%r48", "%r51"]
    assert su.last_access.sid == "s51" and su.last_access.line == 123
    assert su.last_write.sid == "s35"


def test_symbol_uses_direct_and_escaping():
    fa = fa_of("\tst.shared.u32 [smem+8], %r1;\n\tmov.u32 %r2, smem;\n"
               "\tld.shared.u32 %r3, [%r2+4];\n\tst.global.u32 [%rd1], %r2;\n"
               "\tatom.shared.add.u32 %r4, [%r2], 1;\n\tret;\n")
    su = symbol_uses(fa, "smem")
    assert [(a.index, a.kind) for a in su.accesses] == [(1, "write"), (2, "address"),
                                                       (3, "read"), (4, "escape"),
                                                       (5, "atomic")]
    assert su.last_access.index == 5 and su.last_read.index == 5


@pytest.mark.slow
def test_dec2_scratch_uses():
    fn = parse(need(DEC2)).functions[0]
    fa = analyze(fn)
    su = symbol_uses(fa, SCRATCH2)
    # "The prologue never touches SCRATCH": nothing before the first mma (s452)
    assert min(a.index for a in su.accesses) > 452
    # the final epilogue stages phase 38's accumulators through it (after s15510)
    assert su.last_access.index > 15510
    assert any(a.kind == "write" and a.index > 15510 for a in su.accesses)
    assert all(a.via is None or a.via in su.derived_registers for a in su.accesses)


# ---------------------------------------------------------------- live-in classification

def test_classification_cfg_fixture():
    fn = parse(Path(SMALL).parent / "cfg_loops.ptx").functions[0]
    fa = analyze(fn)
    rng = StatementRange(15, 35)
    got = {x.reg: x for x in classify_live_in(fa, rng)}
    assert list(got) == ["%p2", "%r1", "%r3", "%r4", "%r5", "%r6", "%r8"]
    assert got["%p2"].klass == "other" and "predicate" in got["%p2"].detail
    assert all(got[r].klass == "passed" for r in ("%r1", "%r3", "%r4", "%r5", "%r6", "%r8"))
    # %r6 enters through the side entry with the prologue's value only
    assert got["%r6"].reaching_defs == (8,)
    got = {x.reg: x for x in classify_live_in(fa, rng, passed={"%r1", "%r5", "%p2"})}
    assert got["%r1"].klass == "passed" and got["%r5"].klass == "passed"
    assert got["%r3"].klass == "other" and got["%r3"].detail == "not passed"
    # a predicate the call passes (as an integer) counts as passed, as `check` counts it
    assert got["%p2"].klass == "passed" and "predicate" in got["%p2"].detail


def test_classification_derivable_special_undefined():
    fa = fa_of(PROLOGUE + "\tld.global.nc.u32 %r1, [%rd32+4096];\n\tmov.u32 %r2, %tid.x;\n"
               "\tld.global.u32 %r3, [%rd32+8];\n"
               "\tld.global.nc.v2.u32 {%r30, %r31}, [%rd32+64];\n"
               # the range
               "\tadd.s32 %r4, %r1, %r2;\n\tadd.s32 %r5, %r3, %r9;\n"
               "\tld.global.nc.u32 %r6, [%rd32+16];\n\tadd.s32 %r7, %r31, %r6;\n"
               "\tret;\n")
    first, last = sid(fa, "add.s32 %r4"), sid(fa, "add.s32 %r7")
    got = {x.reg: x for x in classify_live_in(fa, StatementRange(first, last))}
    assert set(got) == {"%r1", "%r2", "%r3", "%r9", "%r31", "%rd32"}
    assert got["%r1"].klass == "derivable"
    assert got["%r1"].detail == "ld.global.nc [%rd32+4096] (weight image +4096)"
    assert got["%r31"].klass == "derivable"
    assert got["%r31"].detail == "ld.global.nc.v2 [%rd32+64] element 1 (weight image +68)"
    assert got["%r2"].klass == "special" and got["%r2"].detail == "copy of %tid.x"
    assert got["%r3"].klass == "passed"          # plain ld.global: not read-only-looking
    assert got["%r9"].klass == "other" and "undefined" in got["%r9"].detail
    assert got["%rd32"].klass == "passed"
    # with `passed`, derivable means derivable from a passed pointer
    got = {x.reg: x for x in classify_live_in(fa, StatementRange(first, last),
                                              passed={"%r3"})}
    assert got["%r1"].klass == "other" and got["%r1"].detail == "not passed"
    assert got["%r3"].klass == "passed"


def test_classification_param_block_loads():
    fa = fa_of(PROLOGUE + "\tld.param.u32 %r1, [k_param_0+72];\n"
               "\tadd.s32 %r2, %r1, 1;\n\tld.u32 %r3, [%rd7+64];\n\tret;\n")
    first = sid(fa, "add.s32 %r2")
    got = {x.reg: x for x in classify_live_in(fa, StatementRange(first, first + 1))}
    assert got["%r1"].klass == "derivable"
    assert got["%r1"].detail == "ld.param [k_param_0+72] (parameter block %rd7 +72)"
    assert got["%rd7"].klass == "passed"


@pytest.fixture(scope="module")
def dec2_fa():
    fn = parse(need(DEC2)).functions[0]
    return analyze(fn)


@pytest.mark.slow
def test_dec2_live_in_with_the_recipe_arguments(dec2_fa):
    """The seed recipe passes A_REGS + C_REGS + %rd32 + %rd7: everything else live-in on
    s452-s15510 is a phase-1 B fragment the body reloads from the weight image."""
    fa = dec2_fa
    passed = set(A_REGS + C_REGS + ["%rd32", "%rd7"])
    li = classify_live_in(fa, StatementRange(452, 15510), passed=passed)
    assert len(li) == 158
    assert {x.reg for x in li if x.klass == "passed"} == passed
    derivable = [x for x in li if x.klass == "derivable"]
    assert len(derivable) == 96
    assert not [x for x in li if x.klass not in ("passed", "derivable")]
    offs = sorted(weight_offset(fa, 452, x.reg) for x in derivable)
    # 24 ld.global.nc.v4 at +0, +2048, ..., +47104: four words each
    assert offs == [o + 4 * i for o in range(0, 47104 + 1, 2048) for i in range(4)]
    for x in derivable:
        assert x.detail.startswith("ld.global.nc.v4 [%rd32+"), x
        assert "(weight image +" in x.detail


def test_dec2_live_in_without_passed(dec2_fa):
    """Left to itself the classification also finds the bias seeds reloadable (they are
    `ld.global.nc` from the weight image at +49152..+49328); the recipe chooses to pass
    them. The A fragments (computed from the plane arena) and both pointers are passed."""
    li = classify_live_in(dec2_fa, StatementRange(452, 15510))
    by = {x.reg: x for x in li}
    assert {r for r, x in by.items() if x.klass == "passed"} == set(A_REGS) | {"%rd32", "%rd7"}
    assert all(by[r].klass == "derivable" for r in C_REGS)
    assert by["%r1597"].detail == "ld.global.nc [%rd32+49152] (weight image +49152)"
    assert by["%rd32"].detail == "value (the weight image pointer)"
    assert by["%rd7"].detail == "value (the parameter block pointer)"
    assert sum(x.klass == "derivable" for x in li) == 96 + 12


@pytest.mark.slow
def test_dec1_live_in():
    fn = parse(need(DEC1)).functions[0]
    fa = analyze(fn)
    ps = phases(fn, fa)
    rng = StatementRange(ps[0].first, ps[-1].last)
    assert (rng.first, rng.last) == (403, 15988)
    passed = set(DEC1_A + DEC1_SEEDS + ["%rd3", "%rd8"])
    li = classify_live_in(fa, rng, passed=passed)
    assert len(li) == 150
    assert {x.reg for x in li if x.klass == "passed"} == passed
    assert sum(x.klass == "derivable" for x in li) == 96


# ---------------------------------------------------------------- CLI

def test_cli_uses():
    r = CliRunner().invoke(main, ["uses", str(SMALL), "_ZZ16small_mma_kernel6ParamsE4smem",
                                  "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["derived_registers"] == ["%r47", "%r48", "%r51"]
    assert data["last_access"]["sid"] == "s51"
    r = CliRunner().invoke(main, ["uses", str(SMALL), "_ZZ16small_mma_kernel6ParamsE4smem"])
    assert r.exit_code == 0 and "last access: s51" in r.output
    r = CliRunner().invoke(main, ["uses", str(SMALL), "no_such_symbol"])
    assert r.exit_code == 2
