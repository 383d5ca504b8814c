"""What every fragment register of a phase holds, in the phase's own matrices.

A phase (rrsplice.analysis.mma.Phase) is one GEMM of m-tiles x n-tiles x k-slices. Its chain for
(m-tile mt, n-tile nt) runs one mma per k-slice ks, so the mma's fragments are tiles of the
phase's matrices:

    A fragment of (mt, ks):  A[16*mt + r][32*ks + c]      (m16n8k32; generally m, k)
    B fragment of (ks, nt):  B[32*ks + r][8*nt + c]
    C (bias seed) and D of (mt, nt):  C/D[16*mt + r][8*nt + c]

where (r, c) is the ISA placement of (lane, register, element) from rrsplice.fragments.layout.
For B fragments and bias seeds loaded from the weight image, every element's byte offset
comes from the load's per-lane address (rrsplice.analysis.laneaddr): the weight-image layout map.

`phase_map(fn, fa, phase)` builds a PhaseMap; `FragReg.elements()` expands one register to
(lane, element, row, col, weight byte) rows; `FragReg.rule()` says it in one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..analysis.fragvalue import value_key
from ..analysis.laneaddr import LaneLoad, weight_load
from .layout import Layout, LayoutError, mma_layouts

if TYPE_CHECKING:
    from ..analysis.mma import Phase


@dataclass(frozen=True)
class FragReg:
    """One register of one fragment, placed in the phase's matrix."""
    reg: str
    matrix: str              # "A", "B", "C" (bias seed) or "D"
    tile: tuple              # A: (mt, ks); B: (ks, nt); C/D: (mt, nt)
    index: int               # position in the mma's operand vector
    row_base: int
    col_base: int
    layout: Layout
    mma: int                 # the mma statement it is read (A/B/C) or written (D) at
    line: int
    source: LaneLoad | None = None   # B / C: the weight-image load

    def elements(self) -> list:
        """[(lane, elem, row, col, weight_byte or None)] for every lane of warp 0."""
        lay = self.layout
        size = lay.elem_bits // 8
        out = []
        for lane in range(32):
            for e in range(lay.per_reg):
                r, c = lay.coord(lane, self.index, e)
                wb = None
                if self.source is not None:
                    wb = self.source.offset(lane) + e * size
                out.append((lane, e, self.row_base + r, self.col_base + c, wb))
        return out

    @property
    def rows(self) -> tuple:
        el = self.elements()
        return min(x[2] for x in el), max(x[2] for x in el)

    @property
    def cols(self) -> tuple:
        el = self.elements()
        return min(x[3] for x in el), max(x[3] for x in el)

    def rule(self) -> str:
        """'A[16..23][32..47]: row = 16 + g, k = 32 + 4t + e' style, one line."""
        lay = self.layout
        r = lay.rule_data
        i0 = self.index * lay.per_reg
        names = {"A": ("row", "k"), "B": ("k", "n"), "C": ("row", "n"), "D": ("row", "n")}
        rn, cn = names[self.matrix]

        def expr(base, lane_terms, offs):
            offs = offs[i0:i0 + lay.per_reg]
            const = base + offs[0]
            parts = [str(const)] if const else []
            parts += [f"{c}{f}" if c != 1 else f for f, c in lane_terms]
            steps = {offs[e] - offs[0] - e for e in range(len(offs))}
            if len(offs) > 1 and steps == {0}:
                parts.append("e")
            elif len(offs) > 1 and any(o != offs[0] for o in offs):
                parts.append(f"{[o - offs[0] for o in offs]}[e]")
            return " + ".join(parts) or "0"

        (r0, r1), (c0, c1) = self.rows, self.cols
        text = (f"{self.matrix}[{r0}..{r1}][{c0}..{c1}]: {rn} = "
                f"{expr(self.row_base, r.row_lane, r.row_off)}, {cn} = "
                f"{expr(self.col_base, r.col_lane, r.col_off)}")
        if self.source is not None:
            s = self.source
            stride = s.lane_stride
            lane_text = (f" + {stride}*lane" if stride else "") if stride is not None else \
                " + (per-lane: " + ", ".join(str(s.offset(i) - s.offset(0))
                                             for i in range(8)) + ", ...)[lane]"
            text += (f"; weight byte = {s.offset(0)}" + lane_text
                     + (f" + {s.warp_stride}*warp" if s.warp_stride else "")
                     + ((" + e" if lay.elem_bits == 8 else f" + {lay.elem_bits // 8}*e") if lay.per_reg > 1 else ""))
        return text

    def to_json(self, elements: bool = False) -> dict:
        d = {"reg": self.reg, "matrix": self.matrix, "tile": list(self.tile),
             "index": self.index, "row_base": self.row_base, "col_base": self.col_base,
             "rows": list(self.rows), "cols": list(self.cols), "mma": f"s{self.mma}",
             "line": self.line, "rule": self.rule()}
        if self.source is not None:
            s = self.source
            d["weight"] = {"offset": s.offset(0),
                           "lane_stride": s.lane_stride,
                           "warp_stride": s.warp_stride, "load": f"s{s.load}",
                           "load_bytes": s.width * s.vector}
        if elements:
            d["elements"] = [list(x) for x in self.elements()]
        return d


@dataclass
class PhaseMap:
    """Every fragment register of one phase, placed in the phase's A, B, C and D."""
    phase: Phase
    layouts: dict            # "A".."D" -> Layout
    a: list = field(default_factory=list)
    b: list = field(default_factory=list)
    c: list = field(default_factory=list)
    d: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def all(self) -> list:
        return self.a + self.b + self.c + self.d

    def find(self, reg: str) -> list:
        return [f for f in self.all() if f.reg == reg]

    def to_json(self, elements: bool = False) -> dict:
        p = self.phase
        return {"phase": p.index, "geometry": p.geometry, "shape": p.shape,
                "m": p.m, "n": p.n, "k": p.k, "m_tiles": p.m_tiles, "n_tiles": p.n_tiles,
                "k_slices": p.k_slices,
                "layouts": {k: v.to_json() for k, v in self.layouts.items()},
                "A": [f.to_json(elements) for f in self.a],
                "B": [f.to_json(elements) for f in self.b],
                "C": [f.to_json(elements) for f in self.c],
                "D": [f.to_json(elements) for f in self.d], "notes": self.notes}


class FragMapError(ValueError):
    """The phase's fragments cannot be placed (unknown layout, irregular chains)."""


def _key(fa, index: int, regs: tuple) -> tuple:
    """Each register with the identity of its value (rrsplice.analysis.fragvalue), so a fragment
    loaded again into a new register is the same tile."""
    return tuple((r, value_key(fa, index, r)) for r in regs)


def phase_map(fn, fa, phase) -> PhaseMap:
    """Place every A, B, C (bias seed) and D register of `phase` (see the module doc)."""
    first = phase.mmas[0]
    try:
        lays = mma_layouts(first)
    except LayoutError as exc:
        raise FragMapError(f"phase {phase.index}: {exc}") from None
    by_index = {m.index: m for m in phase.mmas}
    m_ids: dict = {}
    n_ids: dict = {}
    pm = PhaseMap(phase=phase, layouts=lays)
    seen: set = set()
    mm_, nn_, kk_ = first.m, first.n, first.k
    for chain in phase.chains:
        mmas = [by_index[i] for i in chain]
        a_seq = tuple(_key(fa, m.index, m.a) for m in mmas)
        b_seq = tuple(_key(fa, m.index, m.b) for m in mmas)
        a_ids = tuple(tuple(v for _, v in x) for x in a_seq)
        b_ids = tuple(tuple(v for _, v in x) for x in b_seq)
        mt = m_ids.setdefault(a_ids, len(m_ids))
        nt = n_ids.setdefault(b_ids, len(n_ids))
        for ks, m in enumerate(mmas):
            for j, r in enumerate(m.a):
                key = ("A", r, a_seq[ks][j][1])
                if key not in seen:
                    seen.add(key)
                    pm.a.append(FragReg(r, "A", (mt, ks), j, mm_ * mt, kk_ * ks, lays["A"],
                                        m.index, m.line))
            for j, r in enumerate(m.b):
                key = ("B", r, b_seq[ks][j][1])
                if key not in seen:
                    seen.add(key)
                    pm.b.append(FragReg(r, "B", (ks, nt), j, kk_ * ks, nn_ * nt, lays["B"],
                                        m.index, m.line, weight_load(fa, m.index, r)))
        head, tail = mmas[0], mmas[-1]
        if head.c and not _from_mma(fa, head, by_index):
            for j, r in enumerate(head.c):
                pm.c.append(FragReg(r, "C", (mt, nt), j, mm_ * mt, nn_ * nt, lays["C"],
                                    head.index, head.line, weight_load(fa, head.index, r)))
        for j, r in enumerate(tail.d):
            pm.d.append(FragReg(r, "D", (mt, nt), j, mm_ * mt, nn_ * nt, lays["D"],
                                tail.index, tail.line))
    if len(m_ids) != phase.m_tiles or len(n_ids) != phase.n_tiles:
        pm.notes.append(f"tiles placed {len(m_ids)} x {len(n_ids)}, phase says "
                        f"{phase.m_tiles} x {phase.n_tiles}")
    return pm


def _from_mma(fa, mma, by_index) -> bool:
    """True when mma's C value is some mma's D (a continued accumulator, not a seed)."""
    for r in mma.c:
        defs = fa.reaching_defs(mma.index, r)
        if not defs or any(fa.fn.statements[d - 1].base != "mma" for d in defs):
            return False
    return True


def phase_maps(fn, fa, phases=None) -> list:
    """PhaseMap of every phase of `fn` (phases from rrsplice.analysis.mma.phases unless given)."""
    if phases is None:
        from ..analysis.mma import phases as find_phases
        phases = find_phases(fn, fa)
    return [phase_map(fn, fa, p) for p in phases]

