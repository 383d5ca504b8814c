"""Which matrix element each gfx12 (RDNA4) WMMA operand register holds, as data.

The NVIDIA fragment layouts are in rrsplice.fragments.layout; this is the same kind of table for
the wave32 instruction `v_wmma_f32_16x16x16_fp8_fp8` (clang builtin
`__builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12`, signature `v8f32 (v2i32 a, v2i32 b,
v8f32 c)`), which the gfx12 body computes one m16n8k32 e4m3 mma pair with.

Sources (the facts, not code):

* AMD GPUOpen, "Using the Matrix Cores of AMD RDNA 4 architecture GPUs"
  (https://gpuopen.com/learn/using_matrix_core_amd_rdna4/): on RDNA4 the A/B operands are
  no longer replicated across the two half-waves; lane l works on row (A) or column (B)
  l % 16, the half-wave l / 16 holds the upper half of k, and accumulator VGPR v of lane l
  is row v + 8 * (l / 16), column l % 16.
* LLVM, clang's AMDGPU builtins (BuiltinsAMDGPU.def, the gfx12 WMMA group) and the AMDGPU
  backend's intrinsic `llvm.amdgcn.wmma.f32.16x16x16.fp8.fp8`: A and B are eight e4m3 bytes
  packed into two 32-bit registers (`<2 x i32>`), C/D eight f32.

Every rule has one form: with i = lane & 15 and h = lane >> 4,

    row = sum(coefficient x lane feature) + row_offset[e]
    col = sum(coefficient x lane feature) + col_offset[e]

where e = per_reg * reg + elem (element 0 in a register's low bits). A is M x K (row = m,
col = k), B is K x N (row = k, col = n), C/D M x N.

    layout(matrix) -> Layout             # "A", "B", "C" or "D"
    Layout.coord(lane, reg, elem) -> (row, col)
    Layout.owner(row, col) -> (lane, reg, elem)
    Layout.slots -> every (lane, reg, elem, row, col)
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = ("AMD GPUOpen, 'Using the Matrix Cores of AMD RDNA 4 architecture GPUs'; LLVM "
          "BuiltinsAMDGPU.def (gfx12 WMMA)")
INSTRUCTION = "v_wmma_f32_16x16x16_fp8_fp8"
BUILTIN = "__builtin_amdgcn_wmma_f32_16x16x16_fp8_fp8_w32_gfx12"
M = N = K = 16


class RDNA4LayoutError(ValueError):
    """No WMMA layout is tabled for the requested matrix."""


@dataclass(frozen=True)
class Rule:
    matrix: str
    rows: int
    cols: int
    regs: int
    per_reg: int
    elem_bits: int
    row_lane: tuple      # ((feature, coefficient), ...) over i = lane & 15, h = lane >> 4
    row_off: tuple       # per element e
    col_lane: tuple
    col_off: tuple


_K8 = tuple(range(8))    # the eight k of one lane's two operand registers, in byte order

# The table. A: row = i, k = 8h + e (e = 4 * reg + byte: two registers of four k each).
#            B: k = 8h + e, col = i.  C/D (f32, one element per VGPR): row = 8h + v, col = i.
_TABLE = {
    "A": Rule("A", M, K, 2, 4, 8, (("i", 1),), (0,) * 8, (("h", 8),), _K8),
    "B": Rule("B", K, N, 2, 4, 8, (("h", 8),), _K8, (("i", 1),), (0,) * 8),
    "C": Rule("C", M, N, 8, 1, 32, (("h", 8),), _K8, (("i", 1),), (0,) * 8),
}


def _features(lane: int) -> dict:
    return {"i": lane & 15, "h": lane >> 4}


@dataclass(frozen=True)
class Slot:
    lane: int
    reg: int
    elem: int
    row: int
    col: int


@dataclass(frozen=True)
class Layout:
    matrix: str
    rule_data: Rule

    @property
    def regs(self) -> int:
        return self.rule_data.regs

    @property
    def per_reg(self) -> int:
        return self.rule_data.per_reg

    @property
    def rows(self) -> int:
        return self.rule_data.rows

    @property
    def cols(self) -> int:
        return self.rule_data.cols

    def coord(self, lane: int, reg: int, elem: int) -> tuple:
        r = self.rule_data
        if not (0 <= lane < 32 and 0 <= reg < r.regs and 0 <= elem < r.per_reg):
            raise RDNA4LayoutError(f"WMMA {self.matrix}: no slot lane {lane} reg {reg} elem "
                                   f"{elem}")
        f = _features(lane)
        e = r.per_reg * reg + elem
        return (sum(c * f[n] for n, c in r.row_lane) + r.row_off[e],
                sum(c * f[n] for n, c in r.col_lane) + r.col_off[e])

    @property
    def slots(self) -> tuple:
        r = self.rule_data
        return tuple(Slot(lane, reg, e, *self.coord(lane, reg, e))
                     for lane in range(32) for reg in range(r.regs) for e in range(r.per_reg))

    def owner(self, row: int, col: int) -> tuple:
        for s in self.slots:
            if (s.row, s.col) == (row, col):
                return s.lane, s.reg, s.elem
        raise RDNA4LayoutError(f"WMMA {self.matrix}: ({row}, {col}) is outside the "
                               f"{self.rows}x{self.cols} matrix")

    @property
    def rule(self) -> str:
        r = self.rule_data

        def terms(t):
            return " + ".join(f"{c}{f}" if c != 1 else f for f, c in t) or "0"
        return (f"e = {r.per_reg}*reg + elem; row = {terms(r.row_lane)} + {list(r.row_off)}[e];"
                f" col = {terms(r.col_lane)} + {list(r.col_off)}[e] (i = lane&15, h = "
                f"lane>>4; {r.elem_bits}-bit elements, low bits first; {INSTRUCTION})")


def layout(matrix: str) -> Layout:
    """The WMMA layout of `matrix` ("A", "B", "C" or "D": C and D share one layout)."""
    m = matrix.upper()
    key = "C" if m == "D" else m
    if key not in _TABLE:
        raise RDNA4LayoutError(f"matrix must be A, B, C or D, not {matrix!r}")
    return Layout(m, _TABLE[key])
