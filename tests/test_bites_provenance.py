"""Value provenance through each integer operation, with the values worked out by hand:
shifts, masks, differences, negation, multiply-add, the high half of a product and carry
arithmetic (not folded), floating-point conversion (not folded), vector parameter loads."""

from __future__ import annotations

from test_provenance import fa_of, sid

from rrsplice.analysis.provenance import Const, Param, SharedAddr, Unknown, value_of

OPS = ("\tmov.u32 %r1, 100;\n"
       "\tshl.b32 %r2, %r1, 2;\n"
       "\tshr.u32 %r3, %r1, 1;\n"
       "\tand.b32 %r4, %r1, 12;\n"
       "\txor.b32 %r5, %r1, 7;\n"
       "\tsub.s32 %r6, %r1, 30;\n"
       "\tneg.s32 %r7, %r1;\n"
       "\tmad.lo.s32 %r8, %r1, 3, 5;\n"
       "\tmul.hi.u32 %r9, %r1, %r1;\n"
       "\tadd.cc.u32 %r10, %r1, 1;\n"
       "\tor.b32 %r11, %r1, 3;\n"
       "\tcvt.rn.f32.u32 %f1, %r1;\n"
       "\tcvt.u64.u32 %rd1, %r1;\n"
       "\tld.param.v2.u32 {%r12, %r13}, [k_param_0+8];\n"
       "\tmov.u32 %r14, smem;\n"
       "\tadd.s32 %r15, %r14, 40;\n"
       "\tsub.s32 %r16, %r15, %r14;\n"
       "\tret;\n")


def test_integer_operations_fold_to_their_values():
    fa = fa_of(OPS)
    end = sid(fa, "ret")
    want = {"%r2": 400, "%r3": 50, "%r4": 4, "%r5": 99, "%r6": 70, "%r7": -100, "%r8": 305,
            "%r11": 103, "%rd1": 100}
    got = {r: value_of(fa, end, r) for r in want}
    assert got == {r: Const(v) for r, v in want.items()}


def test_operations_that_do_not_fold():
    fa = fa_of(OPS)
    end = sid(fa, "ret")
    for reg, why in (("%r9", "high half"), ("%r10", "carry"), ("%f1", "floating-point"),
                     ("%r16", "difference of addresses")):
        v = value_of(fa, end, reg)
        assert isinstance(v, Unknown) and why in v.reason, (reg, v)


def test_vector_parameter_load_elements_and_shared_offsets():
    fa = fa_of(OPS)
    end = sid(fa, "ret")
    assert value_of(fa, end, "%r12") == Param("k_param_0", 8)
    assert value_of(fa, end, "%r13") == Param("k_param_0", 12)
    assert value_of(fa, end, "%r15") == SharedAddr("smem", 40)


def test_each_shared_array_has_its_own_uses_on_one_analysis():
    """`symbol_uses` is remembered per analysis and per array: asking for a second array on
    the same analysis never returns the first one's accesses."""
    from rrsplice.analysis.dataflow import analyze
    from rrsplice.analysis.provenance import symbol_uses
    from rrsplice.ptx.parser import parse
    text = (".version 8.7\n.target sm_89\n.address_size 64\n"
            ".shared .align 4 .b8 aa[64];\n.shared .align 4 .b8 bb[64];\n"
            ".visible .entry k()\n{\n\t.reg .b32 %r<9>;\n"
            "\tst.shared.u32 [aa+4], %r1;\n"
            "\tmov.u32 %r2, bb;\n"
            "\tld.shared.u32 %r3, [%r2+8];\n"
            "\tld.shared.u32 %r4, [bb+12];\n"
            "\tret;\n}\n")
    fa = analyze(parse(text).functions[0])
    a, b = symbol_uses(fa, "aa"), symbol_uses(fa, "bb")
    assert [(x.line, x.kind) for x in a.accesses] == [(9, "write")]
    assert [(x.line, x.kind) for x in b.accesses if x.kind != "address"] == \
        [(11, "read"), (12, "read")]
    assert symbol_uses(fa, "aa") is a          # remembered, not recomputed
