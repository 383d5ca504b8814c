"""Every fragment layout of the table against an independent transcription of the PTX ISA's
fragment text (PTX ISA 8.7, 9.7.14.5 "Matrix Fragments for mma.m*n*k*": the row/col rules
under each figure, in the ISA's own form -- conditions on the element index i, groupID =
%laneid >> 2, threadID_in_group = %laneid % 4), for every lane, register and element: a
permutation that still places every element exactly once fails here."""

from __future__ import annotations

import pytest

from rrsplice.fragments.layout import SUPPORTED, layout


def _gt(lane):
    return lane >> 2, lane % 4


# 9.7.14.5.10 mma.m16n8k32, .s8/.u8/.e4m3/.e5m2 (A: a0..a15, B: b0..b7)
def k32_a(lane, i):
    g, t = _gt(lane)
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    col = t * 4 + (i & 0x3) + (16 if i >= 8 else 0)
    return row, col


def k32_b(lane, i):
    g, t = _gt(lane)
    return t * 4 + (i & 0x3) + (16 if i >= 4 else 0), g


# the m16n8kK accumulators (c0..c3), 9.7.14.5.7-10: row = groupID for c0, c1, else + 8;
# col = threadID_in_group * 2 + (i & 0x1)
def m16_c(lane, i):
    g, t = _gt(lane)
    return (g if i < 2 else g + 8), t * 2 + (i & 0x1)


# 9.7.14.5.9 mma.m16n8k16 with integer type (A: a0..a7, B: b0..b3)
def k16i_a(lane, i):
    g, t = _gt(lane)
    return (g if i < 4 else g + 8), t * 4 + (i & 0x3)


def k16i_b(lane, i):
    g, t = _gt(lane)
    return t * 4 + i, g


# 9.7.14.5.8 mma.m16n8k16 with floating point type (A: a0..a7, B: b0..b3)
def k16f_a(lane, i):
    g, t = _gt(lane)
    row = g if (i < 2 or 4 <= i < 6) else g + 8
    return row, t * 2 + (i & 0x1) + (8 if i >= 4 else 0)


def k16f_b(lane, i):
    g, t = _gt(lane)
    return t * 2 + (i & 0x1) + (8 if i >= 2 else 0), g


# 9.7.14.5.7 mma.m16n8k8: .f16/.bf16 A a0..a3, B b0..b1; .tf32 A a0..a3, B b0..b1
def k8h_a(lane, i):
    g, t = _gt(lane)
    return (g if i < 2 else g + 8), t * 2 + (i & 0x1)


def k8h_b(lane, i):
    g, t = _gt(lane)
    return t * 2 + i, g


def k8t_a(lane, i):
    g, t = _gt(lane)
    return (g if i in (0, 2) else g + 8), (t if i < 2 else t + 4)


def k8t_b(lane, i):
    g, t = _gt(lane)
    return (t if i == 0 else t + 4), g


# 9.7.14.5.3 mma.m8n8k16 (.s8/.u8): A a0..a3, B b0..b3, C c0..c1
def m8k16_a(lane, i):
    g, t = _gt(lane)
    return g, t * 4 + i


def m8k16_b(lane, i):
    g, t = _gt(lane)
    return t * 4 + i, g


def m8k16_c(lane, i):
    g, t = _gt(lane)
    return g, t * 2 + i


# 9.7.14.5.1 mma.m8n8k4 .f16: lanes 0-15 and 16-31 hold rows (or columns) +0 / +4
def _hi(lane):
    return 4 if lane >= 16 else 0


def m884_a_row(lane, i):
    return lane % 4 + _hi(lane), i


def m884_a_col(lane, i):
    return i + _hi(lane), lane % 4


def m884_b_row(lane, i):
    return lane % 4, i + _hi(lane)


def m884_b_col(lane, i):
    return i, lane % 4 + _hi(lane)


def m884_c_f16(lane, i):
    return lane % 4 + _hi(lane), i


def m884_c_f32(lane, i):
    return (lane & 0b1) + (i & 0b10) + _hi(lane), (i & 0b100) + (lane & 0b10) + (i & 0b1)


HALF = ("f16", "bf16")


def transcription(shape, matrix, dtype, order):
    if shape == "m16n8k32":
        return {"A": k32_a, "B": k32_b, "C": m16_c}[matrix]
    if shape == "m16n8k16":
        if matrix == "C":
            return m16_c
        f = dtype in HALF
        return {"A": k16f_a if f else k16i_a, "B": k16f_b if f else k16i_b}[matrix]
    if shape == "m16n8k8":
        if matrix == "C":
            return m16_c
        t = dtype == "tf32"
        return {"A": k8t_a if t else k8h_a, "B": k8t_b if t else k8h_b}[matrix]
    if shape == "m8n8k16":
        return {"A": m8k16_a, "B": m8k16_b, "C": m8k16_c}[matrix]
    if shape == "m8n8k4":
        if matrix == "C":
            return m884_c_f32 if dtype == "f32" else m884_c_f16
        return {("A", "row"): m884_a_row, ("A", "col"): m884_a_col,
                ("B", "row"): m884_b_row, ("B", "col"): m884_b_col}[(matrix, order)]
    raise KeyError(shape)


CASES = [(s, m, d, o) for s, m, ds, o in SUPPORTED for d in ds]


def test_every_table_entry_is_transcribed():
    shapes = {s for s, *_ in CASES}
    assert shapes == {"m16n8k32", "m16n8k16", "m16n8k8", "m8n8k16", "m8n8k4"}
    assert len(CASES) >= 20


def _operand_type(shape, matrix, dtype):
    """The A type that picks the accumulator's section (m16n8k16: integer or float)."""
    if matrix == "C" and shape == "m16n8k16":
        return "s8" if dtype == "s32" else "f16"
    return None


@pytest.mark.parametrize("shape,matrix,dtype,order", CASES,
                         ids=["-".join(str(x) for x in c if x) for c in CASES])
def test_layout_is_the_isa_text_for_every_slot(shape, matrix, dtype, order):
    lay = layout(shape, matrix, dtype, order, operand_type=_operand_type(shape, matrix, dtype))
    isa = transcription(shape, matrix, dtype, order)
    for lane in range(32):
        for reg in range(lay.regs):
            for e in range(lay.per_reg):
                i = reg * lay.per_reg + e
                assert lay.coord(lane, reg, e) == isa(lane, i), (lane, reg, e)


def test_m16n8k16_accumulator_follows_the_operand_family():
    """s32 accumulators come from the integer section, f16/f32 from the floating one; the
    two place c0..c3 alike (9.7.14.5.8 and .9), so only the sections differ."""
    a = layout("m16n8k16", "C", "s32", operand_type="s8")
    b = layout("m16n8k16", "C", "f32", operand_type="f16")
    assert "integer" in a.section and "floating" in b.section
