"""The fragment layout table: every matrix element held exactly once, and ISA figure facts."""

from __future__ import annotations

import pytest

from rrsplice.fragments.layout import SUPPORTED, LayoutError, layout, mma_layouts

ALL = [(shape, matrix, dtype, order)
       for shape, matrix, dtypes, order in SUPPORTED for dtype in dtypes]


@pytest.mark.parametrize("shape,matrix,dtype,order", ALL,
                         ids=[f"{s}-{m}-{d}-{o}" for s, m, d, o in ALL])
def test_every_element_exactly_once(shape, matrix, dtype, order):
    lay = layout(shape, matrix, dtype, order)
    slots = lay.slots
    assert len(slots) == 32 * lay.regs * lay.per_reg
    assert lay.elem_bits * lay.per_reg == 32         # a register is 32 bits of elements
    seen = [(s.instance, s.row, s.col) for s in slots]
    assert len(set(seen)) == len(seen), "some element is held twice"
    want = {(q, r, c) for q in range(lay.instances)
            for r in range(lay.rows) for c in range(lay.cols)}
    assert set(seen) == want
    for s in slots[::7]:
        assert lay.owner(s.row, s.col, s.instance) == (s.lane, s.reg, s.elem)


def test_required_combinations_present():
    for shape, matrix, dtype in [
            ("m16n8k32", "A", "e4m3"), ("m16n8k32", "B", "e5m2"), ("m16n8k32", "C", "f16"),
            ("m16n8k32", "D", "f32"), ("m16n8k32", "A", "s8"), ("m16n8k32", "B", "u8"),
            ("m16n8k32", "C", "s32"), ("m16n8k16", "A", "f16"), ("m16n8k16", "B", "bf16"),
            ("m16n8k16", "D", "f32"), ("m16n8k8", "A", "tf32"), ("m16n8k8", "B", "tf32"),
            ("m16n8k8", "C", "f32"), ("m8n8k4", "A", "f16"), ("m8n8k4", "C", "f32")]:
        assert layout(shape, matrix, dtype).rows > 0


# Literal facts read off the ISA's figures (not recomputed from the table's formulas).
FIGURE_FACTS = [
    # m16n8k32 A, Figure 88: T0 a0..a3 = row 0 cols 0-3, a4..a7 row 8, a8.. row 0 cols 16-19
    ("m16n8k32", "A", "e4m3", 0, 0, 0, (0, 0)), ("m16n8k32", "A", "e4m3", 0, 1, 3, (8, 3)),
    ("m16n8k32", "A", "e4m3", 0, 2, 0, (0, 16)), ("m16n8k32", "A", "e4m3", 0, 3, 2, (8, 18)),
    ("m16n8k32", "A", "e4m3", 1, 0, 0, (0, 4)), ("m16n8k32", "A", "e4m3", 31, 3, 3, (15, 31)),
    # m16n8k32 B, Figures 90/91: T0 b0..b3 rows 0-3 col 0, b4..b7 rows 16-19; T4 col 1
    ("m16n8k32", "B", "e4m3", 0, 1, 0, (16, 0)), ("m16n8k32", "B", "e4m3", 4, 0, 2, (2, 1)),
    ("m16n8k32", "B", "e4m3", 3, 0, 1, (13, 0)),
    # m16n8k32 C, Figure 92 (f32: one element per register; f16: two per register)
    ("m16n8k32", "C", "f32", 0, 2, 0, (8, 0)), ("m16n8k32", "C", "f32", 1, 1, 0, (0, 3)),
    ("m16n8k32", "C", "f16", 1, 1, 1, (8, 3)), ("m16n8k32", "C", "f16", 4, 0, 0, (1, 0)),
    # m16n8k16 f16, Figures 79/81
    ("m16n8k16", "A", "f16", 0, 1, 0, (8, 0)), ("m16n8k16", "A", "f16", 0, 2, 1, (0, 9)),
    ("m16n8k16", "B", "f16", 1, 1, 1, (11, 0)),
    # m16n8k8 tf32, Figures 72/75
    ("m16n8k8", "A", "tf32", 0, 1, 0, (8, 0)), ("m16n8k8", "A", "tf32", 5, 2, 0, (1, 5)),
    ("m16n8k8", "B", "tf32", 6, 1, 0, (6, 1)),
    # m8n8k4 f32 accumulators, Figure 51: T0 c2 = (2,0), c4 = (0,4); T2 c0 = (0,2); T16 +4 rows
    ("m8n8k4", "C", "f32", 0, 2, 0, (2, 0)), ("m8n8k4", "C", "f32", 0, 4, 0, (0, 4)),
    ("m8n8k4", "C", "f32", 2, 0, 0, (0, 2)), ("m8n8k4", "C", "f32", 17, 1, 0, (5, 1)),
]


@pytest.mark.parametrize("shape,matrix,dtype,lane,reg,elem,want", FIGURE_FACTS)
def test_isa_figure_facts(shape, matrix, dtype, lane, reg, elem, want):
    assert layout(shape, matrix, dtype).coord(lane, reg, elem) == want


def test_m8n8k4_quad_pairs_are_separate_products():
    lay = layout("m8n8k4", "A", "f16", "row")
    assert {s.instance for s in lay.slots if s.lane in (4, 5, 20)} == {1}
    assert lay.owner(4, 0, instance=1) == (20, 0, 0)


def test_mma_layouts_from_a_parsed_mma():
    from rrsplice import parse
    from rrsplice.analysis.mma import mma_of
    src = """.version 8.7
.target sm_89
.address_size 64
.visible .entry k()
{
  .reg .b32 %r<20>;
  .reg .f32 %f<8>;
  mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1, %r2, %r3}, \
{%r4, %r5}, {%f4, %f5, %f6, %f7};
  ret;
}
"""
    fn = parse(src, filename="x.ptx").functions[0]
    mma = mma_of(fn.statements[0])
    lays = mma_layouts(mma)
    assert lays["A"].dtype == "e4m3" and lays["A"].regs == len(mma.a) == 4
    assert lays["B"].regs == len(mma.b) == 2
    assert lays["C"].regs == len(mma.c) == 4 and lays["D"].matrix == "D"
    assert "9.7.14.5.10" in lays["A"].section


def test_unknown_combination_is_a_clear_error():
    with pytest.raises(LayoutError, match="m16n8k32 A of type .f64"):
        layout("m16n8k32", "A", "f64")
    with pytest.raises(LayoutError, match="lane 32"):
        layout("m16n8k32", "A", "e4m3").coord(32, 0, 0)
    with pytest.raises(LayoutError, match="matrix must be"):
        layout("m16n8k32", "E", "e4m3")


def test_rule_text_names_section_and_offsets():
    rule = layout("m16n8k32", "C", "f32").rule
    assert "row = g + [0, 0, 8, 8][i]" in rule and "col = 2t + [0, 1, 0, 1][i]" in rule
    assert "9.7.14.5.10" in rule
