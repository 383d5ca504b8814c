"""Which matrix element each `mma.sync` fragment register holds, as data from the PTX ISA.

A warp's `mma` spreads the A, B, C and D matrices over its 32 lanes; the PTX ISA gives the
placement per shape and type in section 9.7.14.5, "Matrix Fragments for mma.mMnNkK" (the
subsection is named on every table entry below). Users need it to know what each register
crossing a cut holds, and a native body needs it to build or read fragments.

Every rule has the ISA's form: with groupID = lane >> 2 and threadID_in_group = lane % 4,

    row = sum(coefficient x lane feature) + row_offset[i]
    col = sum(coefficient x lane feature) + col_offset[i]

where i is the ISA's element number (a_i, b_i, c_i, "low to high": register i // per_reg,
element i % per_reg inside it, element 0 in the low bits). The lane features are
g = groupID, t = threadID_in_group, and for m8n8k4 h = lane >> 4 (high group), l0 = lane & 1,
l1 = lane & 2. m8n8k4 runs four independent 8x8x4 products, one per quad pair
(lanes 4q..4q+3 and 16+4q..16+4q+3); its slots carry that `instance` q.

The API, stable for callers:

    layout(shape, matrix, dtype, order=None) -> Layout     # matrix in "A", "B", "C", "D"
    mma_layouts(mma) -> {"A": Layout, ...}                   # from an rrsplice.analysis.mma.Mma
    Layout.coord(lane, reg, elem) -> (row, col)
    Layout.owner(row, col, instance=0) -> (lane, reg, elem)
    Layout.slots -> tuple of Slot(lane, reg, elem, row, col, instance)
    Layout.rule -> one line saying the rule, for generated headers
    SUPPORTED -> every (shape, matrix, dtypes, order) the table covers

Unsupported combinations raise LayoutError (a ValueError) naming what was asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_ISA = "PTX ISA 9.7.14.5"
_EIGHT_BIT = ("s8", "u8", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
_HALF = ("f16", "bf16")


class LayoutError(ValueError):
    """No fragment layout is known for the requested shape, matrix and type."""


@dataclass(frozen=True)
class Slot:
    """One element of one lane's fragment and where it sits in the matrix."""
    lane: int
    reg: int          # index into the operand's register vector ({%r0, %r1, ...})
    elem: int         # element inside the register, low bits first
    row: int
    col: int
    instance: int = 0  # m8n8k4: which of the four quad-pair products; else 0


@dataclass(frozen=True)
class _Rule:
    """The ISA's row/col formula for one fragment, as coefficients and per-element offsets."""
    section: str
    rows: int
    cols: int
    regs: int
    per_reg: int
    elem_bits: int
    row_lane: tuple          # ((feature, coefficient), ...)
    row_off: tuple           # per element i
    col_lane: tuple
    col_off: tuple
    instances: int = 1


def _rep(seq, times):
    return tuple(seq) * times


# ---------------------------------------------------------------- the table
# Key: (shape, matrix, order) -> list of (dtypes, rule). `order` is None where the ISA has one
# layout (A .row, B .col); m8n8k4 distinguishes "row" and "col" for A and B.
# Element offsets are written out from the ISA formula quoted in each comment.

_S16832 = f"{_ISA}.10 Matrix Fragments for mma.m16n8k32"
_S16816I = f"{_ISA}.9 Matrix Fragments for mma.m16n8k16 with integer type"
_S16816F = f"{_ISA}.8 Matrix Fragments for mma.m16n8k16 with floating point type"
_S1688 = f"{_ISA}.7 Matrix Fragments for mma.m16n8k8"
_S8816 = f"{_ISA}.3 Matrix Fragments for mma.m8n8k16"
_S884 = f"{_ISA}.1 Matrix Fragments for mma.m8n8k4 with .f16 floating point type"

_G = (("g", 1),)
_T = (("t", 1),)

# C/D of every m16n8kK shape: row = g (c0,c1) / g+8 (c2,c3); col = 2t + (i & 1).
_C16_ROW = (0, 0, 8, 8)
_C16_COL = (0, 1, 0, 1)


def _c16(section, kind):
    """The m16n8 accumulator: four 32-bit registers, or two f16x2 registers."""
    if kind == "f16":
        return _Rule(section, 16, 8, 2, 2, 16, _G, _C16_ROW, (("t", 2),), _C16_COL)
    return _Rule(section, 16, 8, 4, 1, 32, _G, _C16_ROW, (("t", 2),), _C16_COL)


_TABLE: dict = {
    # m16n8k32, 8-bit A/B (Figure 88, 90, 91, 92):
    #   A: row = g for 0<=i<4 || 8<=i<12, else g+8; col = 4t + (i&3) (+16 for i>=8)
    #   B: row = 4t + (i&3) (+16 for i>=4); col = g
    ("m16n8k32", "A", None): [(_EIGHT_BIT, _Rule(
        _S16832, 16, 32, 4, 4, 8, _G, (0,) * 4 + (8,) * 4 + (0,) * 4 + (8,) * 4,
        (("t", 4),), _rep((0, 1, 2, 3), 2) + _rep((16, 17, 18, 19), 2)))],
    ("m16n8k32", "B", None): [(_EIGHT_BIT, _Rule(
        _S16832, 32, 8, 2, 4, 8, (("t", 4),), (0, 1, 2, 3, 16, 17, 18, 19), _G, (0,) * 8))],
    ("m16n8k32", "C", None): [(("f32", "s32"), _c16(_S16832, "32")),
                              (("f16",), _c16(_S16832, "f16"))],
    # m16n8k16, 8-bit A/B (Figures 84, 85, 86):
    #   A: row = g for i<4, g+8 for i>=4; col = 4t + (i&3)
    #   B: row = 4t + i; col = g
    ("m16n8k16", "A", "8bit"): [(_EIGHT_BIT, _Rule(
        _S16816I, 16, 16, 2, 4, 8, _G, (0,) * 4 + (8,) * 4, (("t", 4),), _rep((0, 1, 2, 3), 2)))],
    ("m16n8k16", "B", "8bit"): [(_EIGHT_BIT, _Rule(
        _S16816I, 16, 8, 1, 4, 8, (("t", 4),), (0, 1, 2, 3), _G, (0,) * 4))],
    ("m16n8k16", "C", "8bit"): [(("f32", "s32"), _c16(_S16816I, "32")),
                                (("f16",), _c16(_S16816I, "f16"))],
    # m16n8k16, f16/bf16 A/B (Figures 79, 81, 83):
    #   A: row = g for 0<=i<2 || 4<=i<6, else g+8; col = 2t + (i&1) (+8 for i>=4)
    #   B: row = 2t + (i&1) (+8 for i>=2); col = g
    ("m16n8k16", "A", "half"): [(_HALF, _Rule(
        _S16816F, 16, 16, 4, 2, 16, _G, (0, 0, 8, 8, 0, 0, 8, 8),
        (("t", 2),), (0, 1, 0, 1, 8, 9, 8, 9)))],
    ("m16n8k16", "B", "half"): [(_HALF, _Rule(
        _S16816F, 16, 8, 2, 2, 16, (("t", 2),), (0, 1, 8, 9), _G, (0,) * 4))],
    ("m16n8k16", "C", "half"): [(("f32",), _c16(_S16816F, "32")),
                                (("f16",), _c16(_S16816F, "f16"))],
    # m16n8k8 (Figures 71, 72, 74, 75, 77):
    #   A f16/bf16: row = g (a0,a1) / g+8 (a2,a3); col = 2t + (i&1)
    #   A tf32: row = g (a0,a2) / g+8 (a1,a3); col = t (a0,a1) / t+4 (a2,a3)
    #   B f16/bf16: row = 2t + i; col = g.   B tf32: row = t (b0) / t+4 (b1); col = g
    ("m16n8k8", "A", "half"): [(_HALF, _Rule(
        _S1688, 16, 8, 2, 2, 16, _G, (0, 0, 8, 8), (("t", 2),), (0, 1, 0, 1)))],
    ("m16n8k8", "A", "tf32"): [(("tf32",), _Rule(
        _S1688, 16, 8, 4, 1, 32, _G, (0, 8, 0, 8), _T, (0, 0, 4, 4)))],
    ("m16n8k8", "B", "half"): [(_HALF, _Rule(
        _S1688, 8, 8, 1, 2, 16, (("t", 2),), (0, 1), _G, (0, 0)))],
    ("m16n8k8", "B", "tf32"): [(("tf32",), _Rule(
        _S1688, 8, 8, 2, 1, 32, _T, (0, 4), _G, (0, 0)))],
    ("m16n8k8", "C", None): [(("f32",), _c16(_S1688, "32")), (("f16",), _c16(_S1688, "f16"))],
    # m8n8k16, 8-bit integer (Figures 56, 57, 58):
    #   A: row = g; col = 4t + i.   B: row = 4t + i; col = g.   C: row = g; col = 2t + i
    ("m8n8k16", "A", None): [(("s8", "u8"), _Rule(
        _S8816, 8, 16, 1, 4, 8, _G, (0,) * 4, (("t", 4),), (0, 1, 2, 3)))],
    ("m8n8k16", "B", None): [(("s8", "u8"), _Rule(
        _S8816, 16, 8, 1, 4, 8, (("t", 4),), (0, 1, 2, 3), _G, (0,) * 4))],
    ("m8n8k16", "C", None): [(("s32",), _Rule(
        _S8816, 8, 8, 2, 1, 32, _G, (0, 0), (("t", 2),), (0, 1)))],
    # m8n8k4 .f16, four quad-pair products (Figures 46-52); h = lane >> 4:
    #   A row-major: row = lane%4 + 4h; col = i.     A col-major: row = i + 4h; col = lane%4
    #   B row-major: row = lane%4; col = i + 4h.     B col-major: row = i; col = lane%4 + 4h
    #   C f16: row = lane%4 + 4h; col = i
    #   C f32: row = (lane&1) + (i&2) + 4h; col = (i&4) + (lane&2) + (i&1)
    ("m8n8k4", "A", "row"): [(("f16",), _Rule(
        _S884, 8, 4, 2, 2, 16, (("t", 1), ("h", 4)), (0,) * 4, (), (0, 1, 2, 3), 4))],
    ("m8n8k4", "A", "col"): [(("f16",), _Rule(
        _S884, 8, 4, 2, 2, 16, (("h", 4),), (0, 1, 2, 3), _T, (0,) * 4, 4))],
    ("m8n8k4", "B", "row"): [(("f16",), _Rule(
        _S884, 4, 8, 2, 2, 16, _T, (0,) * 4, (("h", 4),), (0, 1, 2, 3), 4))],
    ("m8n8k4", "B", "col"): [(("f16",), _Rule(
        _S884, 4, 8, 2, 2, 16, (), (0, 1, 2, 3), (("t", 1), ("h", 4)), (0,) * 4, 4))],
    ("m8n8k4", "C", None): [
        (("f16",), _Rule(_S884, 8, 8, 4, 2, 16, (("t", 1), ("h", 4)), (0,) * 8,
                         (), tuple(range(8)), 4)),
        (("f32",), _Rule(_S884, 8, 8, 8, 1, 32, (("l0", 1), ("h", 4)),
                         tuple(i & 2 for i in range(8)),
                         (("l1", 1),), tuple((i & 4) + (i & 1) for i in range(8)), 4))],
}

# Which `order` key a type selects where one shape has several A/B/C families.
_FAMILY = {**{t: "8bit" for t in _EIGHT_BIT}, **{t: "half" for t in _HALF}, "tf32": "tf32"}
# The accumulator family of m16n8k16 follows the multiplicands' family.
_M16N8K16_C_FAMILY = {"8bit": "8bit", "half": "half"}


def _features(lane: int) -> dict:
    return {"g": lane >> 2, "t": lane & 3, "h": lane >> 4, "l0": lane & 1, "l1": lane & 2}


def _instance(shape: str, lane: int) -> int:
    return (lane >> 2) & 3 if shape == "m8n8k4" else 0


def _term_text(terms) -> str:
    return " + ".join(f"{c}{f}" if c != 1 else f for f, c in terms) or "0"


@dataclass(frozen=True)
class Layout:
    """The placement of one fragment (A, B, C or D) of one mma shape and element type."""
    shape: str
    matrix: str
    dtype: str
    order: str | None
    rule_data: _Rule = field(repr=False)

    @property
    def section(self) -> str:
        return self.rule_data.section

    @property
    def rows(self) -> int:
        return self.rule_data.rows

    @property
    def cols(self) -> int:
        return self.rule_data.cols

    @property
    def regs(self) -> int:
        return self.rule_data.regs

    @property
    def per_reg(self) -> int:
        return self.rule_data.per_reg

    @property
    def elem_bits(self) -> int:
        return self.rule_data.elem_bits

    @property
    def instances(self) -> int:
        return self.rule_data.instances

    def coord(self, lane: int, reg: int, elem: int) -> tuple[int, int]:
        """(row, col) of element `elem` of register `reg` in lane `lane`."""
        r = self.rule_data
        if not (0 <= lane < 32 and 0 <= reg < r.regs and 0 <= elem < r.per_reg):
            raise LayoutError(f"{self.shape} {self.matrix}: no slot lane {lane} reg {reg} "
                              f"elem {elem} (regs {r.regs}, elements per register {r.per_reg})")
        f = _features(lane)
        i = reg * r.per_reg + elem
        row = sum(c * f[n] for n, c in r.row_lane) + r.row_off[i]
        col = sum(c * f[n] for n, c in r.col_lane) + r.col_off[i]
        return row, col

    @property
    def slots(self) -> tuple:
        """Every (lane, register, element) with its matrix position, lane-major."""
        return _slots(self)

    def owner(self, row: int, col: int, instance: int = 0) -> tuple:
        """(lane, reg, elem) holding matrix element (row, col) of product `instance`."""
        got = _owners(self).get((instance, row, col))
        if got is None:
            raise LayoutError(f"{self.shape} {self.matrix}: ({row}, {col}) instance {instance} "
                              f"is outside the {self.rows}x{self.cols} matrix")
        return got

    @property
    def rule(self) -> str:
        """The rule in one line: 'row = g + [0,0,8,8][i]; col = 2t + [0,1,0,1][i]'."""
        r = self.rule_data
        return (f"i = {r.per_reg}*reg + elem; row = {_term_text(r.row_lane)} + "
                f"{list(r.row_off)}[i]; col = {_term_text(r.col_lane)} + {list(r.col_off)}[i] "
                f"(g = lane>>2, t = lane%4"
                + (", h = lane>>4, l0 = lane&1, l1 = lane&2" if self.shape == "m8n8k4" else "")
                + f"; {r.elem_bits}-bit elements, low bits first; {r.section})")

    def to_json(self) -> dict:
        return {"shape": self.shape, "matrix": self.matrix, "dtype": self.dtype,
                "order": self.order, "rows": self.rows, "cols": self.cols, "regs": self.regs,
                "per_reg": self.per_reg, "elem_bits": self.elem_bits,
                "instances": self.instances, "section": self.section, "rule": self.rule}


_SLOT_CACHE: dict = {}
_OWNER_CACHE: dict = {}


def _slots(lay: Layout) -> tuple:
    key = (lay.shape, lay.matrix, lay.dtype, lay.order)
    got = _SLOT_CACHE.get(key)
    if got is None:
        r = lay.rule_data
        got = tuple(Slot(lane, reg, e, *lay.coord(lane, reg, e), _instance(lay.shape, lane))
                    for lane in range(32) for reg in range(r.regs) for e in range(r.per_reg))
        _SLOT_CACHE[key] = got
    return got


def _owners(lay: Layout) -> dict:
    key = (lay.shape, lay.matrix, lay.dtype, lay.order)
    got = _OWNER_CACHE.get(key)
    if got is None:
        got = {(s.instance, s.row, s.col): (s.lane, s.reg, s.elem) for s in _slots(lay)}
        _OWNER_CACHE[key] = got
    return got


def _order_key(shape: str, matrix: str, dtype: str, order: str | None, family: str):
    if shape == "m8n8k4" and matrix in ("A", "B"):
        return order or ("row" if matrix == "A" else "col")
    if shape == "m16n8k16":
        return family
    if shape == "m16n8k8" and matrix in ("A", "B"):
        return "tf32" if family == "tf32" else "half"
    return None


def layout(shape: str, matrix: str, dtype: str, order: str | None = None,
           operand_type: str | None = None) -> Layout:
    """The layout of `matrix` ("A", "B", "C" or "D") of `mma.<shape>` with element `dtype`.

    `order` is "row"/"col" for m8n8k4's A and B (defaults: A row, B col, the layouts
    the other shapes require). For C/D of m16n8k16, `operand_type` (the A type) picks the
    integer or floating-point section; it defaults to the accumulator's natural family.
    """
    shape = shape.lstrip(".")
    dtype = dtype.lstrip(".")
    m = matrix.upper()
    key_matrix = "C" if m == "D" else m
    if key_matrix not in ("A", "B", "C"):
        raise LayoutError(f"matrix must be A, B, C or D, not {matrix!r}")
    if key_matrix == "C":
        fam = _FAMILY.get((operand_type or "").lstrip("."),
                          "8bit" if dtype == "s32" else "half")
    else:
        fam = _FAMILY.get(dtype, "")
    okey = _order_key(shape, key_matrix, dtype, order, fam)
    if shape == "m16n8k16" and key_matrix == "C":
        okey = _M16N8K16_C_FAMILY.get(fam, fam)
    for dtypes, rule in _TABLE.get((shape, key_matrix, okey), ()):
        if dtype in dtypes:
            return Layout(shape, m, dtype, okey if okey in ("row", "col") else None, rule)
    raise LayoutError(f"no fragment layout for mma.{shape} {m} of type .{dtype}"
                      + (f" ({okey})" if okey else "")
                      + f"; supported: {', '.join(sorted({s for s, _, _, _ in SUPPORTED}))}")


def mma_layouts(mma) -> dict:
    """{"A", "B", "C", "D"} -> Layout for an rrsplice.analysis.mma.Mma (or anything with its fields)."""
    lay = tuple(getattr(mma, "layouts", ()) or ())
    a_order = lay[0] if len(lay) > 0 else None
    b_order = lay[1] if len(lay) > 1 else None
    return {"A": layout(mma.shape, "A", mma.a_type, a_order),
            "B": layout(mma.shape, "B", mma.b_type, b_order),
            "C": layout(mma.shape, "C", mma.c_type, operand_type=mma.a_type),
            "D": layout(mma.shape, "D", mma.d_type, operand_type=mma.a_type)}


SUPPORTED: tuple = tuple(
    (shape, matrix, dtypes, order if order in ("row", "col") else None)
    for (shape, matrix, order), entries in sorted(_TABLE.items(), key=lambda kv: str(kv[0]))
    for dtypes, _ in entries)
