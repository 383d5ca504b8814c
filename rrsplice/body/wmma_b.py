"""WMMA B operands read straight from the weight image, where the region loads B itself.

Why: when the cut holds the phase's own B loads (`ld.global.nc` at `[%rd + offset]`, as nvcc
interleaves them with the mma), every B element's weight byte is known per lane
(rrsplice.fragments.fragmap: the load's per-lane address, rrsplice.analysis.laneaddr). The
body then need not repeat the NVIDIA-layout loads and stage them through LDS: each lane loads
its WMMA B operand registers (rrsplice.fragments.rdna4_layout: k = 8 (lane >> 4) + 4 reg +
byte, n = lane & 15) as 4-byte words from the weight image directly.

Addresses are relative to the address argument `R` the call passes (the loads' base): word
(n16 block, k16 block kb, register r) of lane l is at `R(l) + L(l) + c`, where
`L(l) = sum(a_b x bit b of l)` is one per-lane offset shared by every operand word and `c` a
per-word constant. Both are fitted from the fragment map and checked for every lane and for
two warps (a term that depends on the warp or block cancels, as both sides carry it). A phase
whose bytes do not fit that form (four k bytes not consecutive, a per-lane offset that is not
one function of the lane bits for all words, loads from different bases) keeps the LDS
staging of the loaded words; `DirectB.why` says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..fragments import rdna4_layout as rl


@dataclass
class DirectB:
    """How every WMMA B operand word is addressed from the base argument."""
    base: str                          # the C++ name of the address argument
    lane_bits: tuple = ()              # a_b for lane bits 0..4: L(l) = sum(a_b x bit b of l)
    words: dict = field(default_factory=dict)   # (n0, kb) -> (c for reg 0, c for reg 1)
    aligned8: dict = field(default_factory=dict)  # (n0, kb) -> both words one 8-byte load
    why: str | None = None             # not possible: the reason

    def lane_offset(self, lane: int) -> int:
        return sum(a * ((lane >> b) & 1) for b, a in enumerate(self.lane_bits))


def _element_bytes(frags) -> dict:
    """{(k, n): (weight byte in warp 0, in warp 1)} of every B element."""
    out = {}
    for f in frags:
        lay, src = f.layout, f.source
        for lane in range(32):
            for e in range(lay.per_reg):
                r, c = lay.coord(lane, f.index, e)
                out[(f.row_base + r, f.col_base + c)] = (src.offset(lane, 0) + e,
                                                         src.offset(lane, 1) + e)
    return out


def _base_offsets(plan) -> tuple | None:
    """R(l) - root for every lane, warps 0 and 1, from every B load of the plan (all must
    agree), and the 8-byte-aligned word addresses ({(warp-0 byte) of an element word})."""
    base_of: tuple | None = None
    aligned: set = set()
    bases = set()
    for ld in plan.loads:
        for pos, name in enumerate(ld.names):
            f = plan.loaded.get(name)
            if f is None or f.matrix != "B":
                continue
            bases.add(ld.base)
            got = tuple(tuple(f.source.offset(lane, w) - ld.offset - 4 * pos for lane in range(32))
                        for w in (0, 1))
            if base_of is None:
                base_of = got
            elif got != base_of:
                return None
            if len(ld.dsts) in (2, 4) and pos % 2 == 0:
                aligned.update(f.source.offset(lane, 0) for lane in range(32))
    if base_of is None or len(bases) != 1:
        return None
    return bases.pop(), base_of, aligned


def _fit(delta: list) -> tuple | None:
    """(c, (a_0..a_4)) with delta[l] = c + sum(a_b x bit b of l) for all 32 lanes, or None."""
    c = delta[0]
    a = tuple(delta[1 << b] - c for b in range(5))
    if any(c + sum(x * ((lane >> b) & 1) for b, x in enumerate(a)) != delta[lane]
           for lane in range(32)):
        return None
    return c, a


def direct_b(plan, block_starts, k: int) -> DirectB:
    """The weight-image addressing of every WMMA B operand word of the phase (blocks at
    `block_starts`, k in steps of 16), or a DirectB with `why` set."""
    names = {b for s in plan.steps for b in s.b}
    frags = [plan.loaded.get(b) for b in names]
    if not names or any(f is None or f.source is None for f in frags):
        return DirectB("", why="some B operands are passed in registers, not loaded by the region")
    got = _base_offsets(plan)
    if got is None:
        return DirectB("", why="the B loads do not share one base address")
    base, rlin, aligned = got
    elem = _element_bytes(frags)
    lay = rl.layout("B")
    out = DirectB(base)
    for n0 in block_starts:
        for kb in range(k // 16):
            cs, ok8 = [], True
            for reg in range(lay.regs):
                delta = []
                for lane in range(32):
                    kk, nn = lay.coord(lane, reg, 0)
                    elems = [elem.get((16 * kb + kk + e, n0 + nn)) for e in range(lay.per_reg)]
                    if None in elems:
                        return DirectB("", why=f"B[{16 * kb + kk}][{n0 + nn}] is not loaded")
                    word = [x for x in elems if x is not None]
                    w0 = word[0]
                    if any(x != (w0[0] + e, w0[1] + e) for e, x in enumerate(word)):
                        return DirectB("", why="a WMMA B register's four k are not four "
                                       "consecutive weight bytes")
                    d0, d1 = w0[0] - rlin[0][lane], w0[1] - rlin[1][lane]
                    if d0 != d1:
                        return DirectB("", why="a B word's offset from the base depends on "
                                       "the warp")
                    delta.append(d0)
                    if reg == 0 and w0[0] not in aligned:
                        ok8 = False
                fit = _fit(delta)
                if fit is None:
                    return DirectB("", why="a B word's offset is not a sum of lane-bit terms")
                c, a = fit
                if out.lane_bits and a != out.lane_bits:
                    return DirectB("", why="the B words do not share one per-lane offset")
                out.lane_bits = a
                cs.append(c)
            out.words[(n0, kb)] = (cs[0], cs[1])
            out.aligned8[(n0, kb)] = ok8 and cs[1] == cs[0] + 4
    return out
