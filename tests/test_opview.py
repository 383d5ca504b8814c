"""The PTX type table (rrsplice.ptx.isa.TYPES) and the typed opcode view (Statement.view),
checked against facts of the PTX ISA 9.0 written out here: section 5.2 "Types" for the
table, the instruction syntax lines of chapter 9 for the view."""

from __future__ import annotations

import textwrap

import pytest

from rrsplice import parse
from rrsplice.ptx.isa import TYPES, ptx_type
from rrsplice.ptx.model import Decl

# (name, kind, bits, lanes, bytes) -- PTX ISA 5.2.1 (fundamental types), 5.2.3 (alternate
# floating-point formats), 5.2.4 (packed types)
ISA_TYPES = [
    ("pred", "pred", 1, 1, 0), ("b8", "bits", 8, 1, 1), ("b16", "bits", 16, 1, 2),
    ("b32", "bits", 32, 1, 4), ("b64", "bits", 64, 1, 8), ("b128", "bits", 128, 1, 16),
    ("u8", "unsigned", 8, 1, 1), ("u64", "unsigned", 64, 1, 8), ("s16", "signed", 16, 1, 2),
    ("s32", "signed", 32, 1, 4), ("f16", "float", 16, 1, 2), ("f32", "float", 32, 1, 4),
    ("f64", "float", 64, 1, 8), ("bf16", "float", 16, 1, 2), ("tf32", "float", 32, 1, 4),
    ("f16x2", "float", 32, 2, 4), ("bf16x2", "float", 32, 2, 4),
    ("e4m3", "float", 8, 1, 1), ("e5m2", "float", 8, 1, 1),
    ("e4m3x2", "float", 16, 2, 2), ("e5m2x2", "float", 16, 2, 2),
    ("e4m3x4", "float", 32, 4, 4), ("e2m1x2", "float", 8, 2, 1),
]


@pytest.mark.parametrize("name,kind,bits,lanes,nbytes", ISA_TYPES)
def test_type_table_rows_are_the_isa_types(name, kind, bits, lanes, nbytes):
    t = ptx_type("." + name)
    assert (t.name, t.kind, t.bits, t.lanes, t.bytes) == (name, kind, bits, lanes, nbytes)
    assert ptx_type(name) is t
    assert t.element_bits * t.lanes == t.bits


def test_every_row_is_a_whole_number_of_bytes_except_pred():
    for t in TYPES.values():
        assert t.kind == "pred" or t.bits % 8 == 0, t


def test_not_a_type():
    assert ptx_type(".v4") is None and ptx_type("rn") is None and ptx_type(None) is None


@pytest.mark.parametrize("ty,dims,vec,size", [
    (".bf16", (), None, 2), (".f16x2", (4,), None, 16), (".b128", (), None, 16),
    (".b8", (9600,), None, 9600), (".f32", (2, 3), ".v4", 96), (".pred", (), None, None),
    (".b32", (None,), None, None)])
def test_decl_byte_size_reads_the_type_table(ty, dims, vec, size):
    d = Decl(space=".shared", type=ty, name="x", attrs=(), dims=dims, vector=vec)
    assert d.byte_size == size


_PTX = textwrap.dedent("""\
    .version 8.7
    .target sm_90
    .address_size 64
    .func (.param .b32 r) callee(.param .b32 a, .param .b32 b) { ret; }
    .visible .entry k(.param .u64 p)
    {
        .reg .pred %p<3>;
        .reg .b32 %r<9>;
        .reg .b64 %rd<3>;
        .reg .f32 %f<4>;
        .reg .b16 %h<3>;
    $L0:
        ld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1];
        ld.shared::cta.u32 %r5, [%rd1];
        cvt.rn.satfinite.relu.e4m3x2.f16x2 %h1, %r1;
        cvt.rzi.ftz.s32.f32 %r6, %f1;
        add.cc.u32 %r1, %r2, %r3;
        mul.wide.s32 %rd2, %r1, %r2;
        mad.hi.u32 %r7, %r1, %r2, %r3;
        setp.lt.and.f32 %p1|%p2, %f1, %f2, %p0;
        ex2.approx.ftz.f32 %f3, %f1;
        div.full.f32 %f3, %f1, %f2;
        fma.rn.sat.f32 %f3, %f1, %f2, %f3;
        call (%r8), callee, (%r1, %r2);
        @%p1 bra $L0;
        st.global.v2.f32 [%rd1], {%f1, %f2};
        ret;
    }
    """)


@pytest.fixture(scope="module")
def stmts():
    m = parse(_PTX.encode(), filename="view.ptx")
    return {st.opcode: st for st in m.function("k").statements if st.opcode}


def _v(stmts, op):
    return stmts[op].view


def test_view_of_loads_and_stores(stmts):
    v = _v(stmts, "ld.global.nc.v4.u32")
    assert (v.family, v.space, v.vector, v.type.name, v.bits) == ("ld", "global", 4, "u32", 32)
    assert _v(stmts, "ld.shared::cta.u32").space == "shared"
    v = _v(stmts, "st.global.v2.f32")
    assert (v.space, v.vector, v.type.name, v.type.is_float) == ("global", 2, "f32", True)
    assert v.row.memory == "write"


def test_view_of_conversions(stmts):
    v = _v(stmts, "cvt.rn.satfinite.relu.e4m3x2.f16x2")
    assert [t.name for t in v.types] == ["e4m3x2", "f16x2"]
    assert (v.dtype.name, v.type.name, v.rounding, v.sat, v.relu, v.ftz) == \
        ("e4m3x2", "f16x2", "rn", True, True, False)
    v = _v(stmts, "cvt.rzi.ftz.s32.f32")
    assert (v.rounding, v.ftz, v.sat, v.dtype.is_signed) == ("rzi", True, False, True)


def test_view_of_integer_forms(stmts):
    assert _v(stmts, "add.cc.u32").cc is True
    assert _v(stmts, "mul.wide.s32").width == "wide"
    assert _v(stmts, "mad.hi.u32").width == "hi"
    assert _v(stmts, "mad.hi.u32").cc is False


def test_view_of_setp_and_transcendentals(stmts):
    v = _v(stmts, "setp.lt.and.f32")
    assert (v.compare, v.bool_op, v.type.name) == ("lt", "and", "f32")
    assert _v(stmts, "ex2.approx.ftz.f32").precision == "approx"
    assert _v(stmts, "div.full.f32").precision == "full"
    assert _v(stmts, "fma.rn.sat.f32").sat is True


def test_view_of_call_and_branch(stmts):
    v = _v(stmts, "call")
    assert v.callee == "callee"
    assert [str(x) for x in v.call_returns] == ["%r8"]
    assert [str(x) for x in v.call_args] == ["%r1", "%r2"]
    assert _v(stmts, "bra").targets == ("$L0",)
    assert _v(stmts, "ret").targets == ()


def test_view_is_built_once_and_only_on_demand(stmts):
    st = stmts["mul.wide.s32"]
    assert st.view is st.view
    m = parse(_PTX.encode(), filename="view2.ptx")
    assert all(s._view is None for s in m.function("k").statements)
