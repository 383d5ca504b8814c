"""The gfx12 WMMA program of a body (`body new --lang hip --mma wmma`): the phase's mma paired
into 16x16 WMMA tiles, with every operand a plain load from an image.

Why: the translated kernel spends ~155 instructions per WMMA reassembling NVIDIA fragments
into WMMA operands with cross-lane permutes. Here each fragment is written once, at its
(row, k) / (k, n) / (row, n), into a per-warp LDS image at the phase boundary, and every WMMA
operand register is then one load in the RDNA4 layout (rrsplice.fragments.rdna4_layout).

One m16n8k32 e4m3 mma with f16 accumulators is the sequence ZLUDA lowers it to: C widened
to f32, two k16 WMMAs (k0..k0+15, then k0+16..k0+31), the result rounded to f16. Two mma
whose n8 tiles are the halves of one WMMA n16 tile (same rows, same k) share one WMMA pair;
each element's sum is the same as in its own mma.

The body works through the phase in n16 blocks: stage the block's B fragments (a 16 x K
image, n-major so a lane's eight k are contiguous) and its chains' C seeds (widened to f32,
row-major), load the block's B operands once, run every (row tile, k step) of the block,
and read the block's final D back in the NVIDIA D layout through a row-major f16 image. The
WMMAs compute each tile transposed (B's operand in the A position): a lane's accumulators
are then one row's eight consecutive columns, so seeds and D move as one vector per lane
and an NVIDIA C register (two adjacent columns of one row) as one word. Where the region
loads B itself from the weight image, the B operands are read from there in the WMMA layout instead
(rrsplice.body.wmma_b), and nothing of B is staged. A phase this program cannot express (a
chain that is not one (m, n) tile walked in k order, B fed from an earlier D, N not a
multiple of 16, an intermediate D returned) is a BodyError that says so; `--mma scalar`
still covers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn, cast

from ..fragments import rdna4_layout as rl
from .plan import BodyError, BodyPlan
from .wmma_b import DirectB, direct_b


@dataclass
class Pair:
    """One WMMA pair (two k16 WMMAs) of one 16x16 tile: the mma whose n8 halves it computes."""
    m0: int
    k0: int
    low: str          # the mma (sN) of columns n0..n0+7 of the block, or None
    high: str         # the mma of columns n0+8..n0+15, or None


@dataclass
class Block:
    """One n16 block of the phase: columns n0..n0+15."""
    n0: int
    b_stage: list = field(default_factory=list)   # (arg name, k0, n local, reg index)
    c_stage: list = field(default_factory=list)   # (arg name, m0, n local, reg index)
    c_rows: int = 0          # rows of the seed image: M, or 8 where every row block of
    #                          each n8 half is seeded by one register (a bias row)
    reads: list = field(default_factory=list)     # (ret index, m0, n local, reg index)
    pairs: list = field(default_factory=list)     # Pair


@dataclass
class WmmaProgram:
    m: int
    n: int
    k: int
    blocks: list
    wmmas: int
    direct: DirectB | None = None     # B operands from the weight image (else staged)
    notes: list = field(default_factory=list)
    slots: DirectD | None = None      # D stored straight into the return slots
    a_in_scratch: bool = False        # the A image overlays the warp's return slots
    seed: int = 4                     # bytes of a C seed image element (f32, or f16)


@dataclass
class DirectD:
    """D stored by the WMMA lanes straight into the NVIDIA lanes' return slots: the offset
    of tile (m0, n0)'s D register j of n8 half q is base[(m0, n0)] + q * dn + j * dr."""
    dn: int
    dr: int
    base: dict


def direct_d(p: BodyPlan, blocks: list) -> DirectD | None:
    """The slot offsets of every final D register as base + q dn + j dr, when every one is
    returned once, through per-thread slots, with no block barrier before the stores."""
    if p.slots != "thread" or p.barrier or not p.rets:
        return None
    lay = p.layouts["D"]               # the store's mapping (rr_wmma_store_d_slots), checked
    acc = rl.layout("C")
    for lane in range(32):
        for v in range(8):
            col, row = acc.coord(lane, v, 0)   # the tile is computed transposed
            if lay.owner(row % 16, col % 8) != (4 * (lane & 7) + v // 2, (lane >> 3) & 1, v & 1) \
                    or col // 8 != lane >> 4:
                return None
    off = {}
    for blk in blocks:
        for i, m0, nl, j in blk.reads:
            key = (m0, blk.n0, nl // 8, j)
            if key in off:
                return None
            off[key] = p.rets[i].offset
    tiles = {(m0, b.n0) for b in blocks for m0 in range(0, p.m, 16)}
    if len(off) != 4 * len(tiles):
        return None
    m0, n0 = min(tiles)
    dn, dr = off[(m0, n0, 1, 0)] - off[(m0, n0, 0, 0)], off[(m0, n0, 0, 1)] - off[(m0, n0, 0, 0)]
    base = {t: off[(*t, 0, 0)] for t in tiles}
    if any(off[(*t, q, j)] != base[t] + q * dn + j * dr for t in tiles for q in (0, 1)
           for j in (0, 1)):
        return None
    return DirectD(dn, dr, base)


def _unsupported(plan: BodyPlan, why: str) -> NoReturn:
    raise BodyError(f"phase {plan.phase.index}: {why}; the WMMA program needs "
                    "every chain to be one (m, n) tile walked in k order (`--mma scalar` "
                    "computes any phase)", path=plan.recipe)


def wmma_program(plan: BodyPlan) -> WmmaProgram:
    """The phase's mma as WMMA pairs per n16 block, checked against the chains' structure."""
    p = plan
    if p.n % 16:
        _unsupported(p, f"N = {p.n} is not a multiple of 16 (an n8 tile would have no partner)")
    tiles: dict = {}
    for s in p.steps:
        fb = [p.frag(b) for b in s.b]
        if any(f is None or f.matrix != "B" for f in fb):
            _unsupported(p, f"{s.sid} reads B {list(s.b)}, which are not passed or loaded B "
                         "fragments")
        fb = cast(list, fb)  # no None left: refused above
        if any(f.row_base != s.k0 or f.index != j for j, f in enumerate(fb)) or \
                fb[0].col_base != fb[1].col_base:
            _unsupported(p, f"{s.sid}: its B registers are not one k32 x n8 tile at k {s.k0}")
        tiles.setdefault((s.m0, fb[0].col_base), []).append(s)
    want = {(m0, n0) for m0 in range(0, p.m, 16) for n0 in range(0, p.n, 8)}
    if set(tiles) != want:
        _unsupported(p, f"the mma cover tiles {sorted(set(tiles) ^ want)[:4]} unevenly")
    final = {}
    for (m0, n0), steps in tiles.items():
        steps.sort(key=lambda s: s.k0)
        if [s.k0 for s in steps] != list(range(0, p.k, 32)):
            _unsupported(p, f"tile ({m0}, {n0}) is computed at k {[s.k0 for s in steps]}")
        for prev, s in zip([None] + steps, steps, strict=False):
            if prev is None:
                if any(p.frag(c) is None or p.frag(c).matrix != "C" for c in s.c):
                    _unsupported(p, f"{s.sid} starts tile ({m0}, {n0}) from {list(s.c)}, "
                                 "which are not passed C fragments")
            elif s.c != (f"{prev.var}[0]", f"{prev.var}[1]"):
                _unsupported(p, f"{s.sid} accumulates {list(s.c)}, not {prev.sid}'s D")
        final[steps[-1].var] = (m0, n0)
    blocks = [Block(n0) for n0 in range(0, p.n, 16)]
    staged = set()
    for (m0, n0), steps in sorted(tiles.items()):
        blk = blocks[n0 // 16]
        for s in steps:
            for j, b in enumerate(s.b):
                if b not in staged:
                    staged.add(b)
                    blk.b_stage.append((b, s.k0, n0 % 16, j))
        for j, c in enumerate(steps[0].c):
            blk.c_stage.append((c, m0, n0 % 16, j))
    for blk in blocks:
        halves: dict = {}
        for name, _m0, nl, _j in blk.c_stage:
            halves.setdefault(nl, set()).add(name)
        if all(len(v) == 1 for v in halves.values()):
            # every row of the block's seeds is the same per lane: stage eight rows once
            blk.c_stage = [(v.pop(), 0, nl, 0) for nl, v in sorted(halves.items())]
            blk.c_rows = 8
        else:
            blk.c_rows = p.m
    for i, r in enumerate(p.rets):
        var, _, j = r.expr.partition("[")
        if var not in final:
            _unsupported(p, f"the call text reads back {r.reg}, which is not the last D of its "
                         "chain")
        m0, n0 = final[var]
        blocks[n0 // 16].reads.append((i, m0, n0 % 16, int(j.rstrip("]"))))
    for blk in blocks:
        for m0 in range(0, p.m, 16):
            lo, hi = tiles[(m0, blk.n0)], tiles[(m0, blk.n0 + 8)]
            blk.pairs += [Pair(m0, a.k0, a.sid, b.sid) for a, b in zip(lo, hi, strict=False)]
    direct = direct_b(p, [b.n0 for b in blocks], p.k) if p.loads else None
    notes = []
    if direct is not None and direct.why is None:
        for blk in blocks:
            blk.b_stage = []                 # read from the weight image, not staged
    if direct is not None and direct.why is not None:
        notes.append(f"B: the region's loads, staged through LDS ({direct.why})")
        direct = None
    slots = direct_d(p, blocks)
    # the layout of the images: f32 seeds before f16 (a widening per element on the
    # WMMA side costs more than D's way out), then D straight into the slots (the A
    # image then out of them) before D through an image, but never at the cost of a
    # workgroup per WGP (LDS-limited, with the recipe's scratch array, which shares the
    # workgroup's LDS)
    own = (p.threads or 32 * p.warps) * p.stride
    choices = []
    for d_direct in ([True] if slots is not None else []) + [False]:
        for seed in (4, 2):
            a_scr = p.image_in_scratch and not d_direct
            total = own + lds_bytes(p, direct is not None, d_direct, a_scr, seed)
            if total <= LDS_LIMIT:
                choices.append((-(LDS_PER_WGP // total), -seed, not d_direct, d_direct, a_scr))
    d_direct, a_in_scratch, seed = (min(choices)[3], min(choices)[4], -min(choices)[1]) \
        if choices else (False, p.image_in_scratch, 2)
    if slots is not None and not d_direct:
        slots = None
        notes.append("D: through the D image and the call's slot reads (the A image stays in "
                     "the return slots: out of them it would cost occupancy)")
    if seed == 2:
        notes.append("C seeds: an f16 image (an f32 one would cost occupancy or not fit)")
    lds = lds_bytes(p, direct is not None, slots is not None, a_in_scratch, seed)
    if lds > LDS_LIMIT:
        raise BodyError(f"phase {p.phase.index}: the WMMA images need {lds} bytes of "
                        f"LDS for {p.warps} warps, more than gfx12's {LDS_LIMIT} per workgroup "
                        "(declare .maxntid in the kernel, or use `--mma scalar`)", path=p.recipe)
    return WmmaProgram(p.m, p.n, p.k, blocks, 2 * sum(len(b.pairs) for b in blocks), direct,
                       notes, slots, a_in_scratch, seed)


LDS_LIMIT = 65536     # bytes of LDS one gfx12 workgroup can allocate
# bytes of LDS of one gfx12 WGP (workgroups share it in WGP mode, llc's default): llc's
# `Occupancy` of a kernel follows it (4 waves per SIMD at 28,672 bytes of a 4-wave workgroup,
# 2 at 49,152)
LDS_PER_WGP = 131072


def lds_bytes(p: BodyPlan, b_direct: bool = False, d_direct: bool = False,
              a_in_scratch: bool | None = None, seed: int = 4) -> int:
    """The body's own LDS: per warp one block's B image (none when B comes from the weight
    image), its C seed image (`seed` bytes an element: f32, or f16 where that does not fit;
    the f16 D image overlays it once the seeds are read, or D goes straight into the return
    slots), and the A image unless it overlays the recipe's scratch slots."""
    if a_in_scratch is None:
        a_in_scratch = p.image_in_scratch
    return p.warps * ((0 if b_direct else 16 * p.k) + seed * 16 * p.m
                      + (0 if a_in_scratch else p.m * p.k))


# ------------------------------------------------------------------ the header's WMMA part

def _terms(terms, names=None) -> str:
    names = names or {"i": "(lane & 15)", "h": "(lane >> 4)"}
    return " + ".join(f"{c} * {names[f]}" if c != 1 else names[f] for f, c in terms) or "0"


def _contiguous(rule, which: str) -> bool:
    off = rule.col_off if which == "col" else rule.row_off
    return list(off) == list(range(len(off)))


def header_section(layouts: dict) -> str:
    """The WMMA part of rr_mma.h: operand loads, C/D image access, the k32 step, B/C staging
    from NVIDIA fragments, for the device (the builtin) and for a host wave emulation."""
    from .header import _place_fn
    ra, rb, rc = rl.layout("A").rule_data, rl.layout("B").rule_data, rl.layout("C").rule_data
    # one 8-byte load per operand: the lane's eight k must be consecutive in the image
    assert _contiguous(ra, "col") and ra.row_off == (0,) * 8
    assert _contiguous(rb, "row") and rb.col_off == (0,) * 8
    # one 32-byte load of the C seeds: a lane's eight accumulators are consecutive rows
    assert _contiguous(rc, "row") and rc.col_off == (0,) * 8
    # rr_read_d2: an NVIDIA D register's two f16 are one row's adjacent columns, the first even
    ld = layouts["D"]
    assert all(ld.coord(lane, r, 1) == (ld.coord(lane, r, 0)[0], ld.coord(lane, r, 0)[1] + 1)
               and ld.coord(lane, r, 0)[1] % 2 == 0 for lane in range(32) for r in range(ld.regs))
    # rr_stage_a_w / rr_stage_b_w: an NVIDIA A (B) register's four bytes are four
    # consecutive k of one row (column) of the image, the first a multiple of 4
    for name, kdim in (("A", 1), ("B", 0)):
        lay = layouts[name]
        assert lay.per_reg == 4 and all(
            lay.coord(lane, r, e)[kdim] == lay.coord(lane, r, 0)[kdim] + e
            and lay.coord(lane, r, e)[1 - kdim] == lay.coord(lane, r, 0)[1 - kdim]
            and lay.coord(lane, r, 0)[kdim] % 4 == 0
            for lane in range(32) for r in range(lay.regs) for e in range(4))
    return (_WMMA_TEMPLATE
            .replace("@PLACE_B@", _place_fn("rr_b", layouts["B"], "k, n within the tile"))
            .replace("@A_ROW@", _terms(ra.row_lane)).replace("@A_K@", _terms(ra.col_lane))
            .replace("@B_N@", _terms(rb.col_lane)).replace("@B_K@", _terms(rb.row_lane))
            .replace("@C_ROW@", _terms(rc.row_lane)).replace("@C_COL@", _terms(rc.col_lane))
            .replace("@RULE_A@", rl.layout("A").rule).replace("@RULE_B@", rl.layout("B").rule)
            .replace("@RULE_C@", rl.layout("C").rule).replace("@SOURCE@", rl.SOURCE)
            .replace("@BUILTIN@", rl.BUILTIN))


_WMMA_TEMPLATE = r"""
/* ---- the gfx12 WMMA path (`body new --mma wmma`): operands as plain loads from images.
 * RDNA4 layouts (rrsplice.fragments.rdna4_layout; @SOURCE@):
 *   A: @RULE_A@
 *   B: @RULE_B@
 *   C/D: @RULE_C@ */
#if defined(RR_HIP) || defined(RR_HOST_WAVE)
typedef unsigned short rr_u16;
#  if defined(RR_HIP)
typedef int rr_v2i __attribute__((ext_vector_type(2)));
typedef float rr_accf;              /* one accumulator */
typedef float rr_acc8 __attribute__((ext_vector_type(8)));
typedef _Float16 rr_h8 __attribute__((ext_vector_type(8)));
/* one k16 WMMA of the wave: D = A x B + C, f32 accumulators */
RR_FI rr_acc8 rr_wmma_fp8(rr_u64 a, rr_u64 b, rr_acc8 c, int lane)
{
    (void)lane;
    const rr_v2i va = {(int)(rr_u32)a, (int)(rr_u32)(a >> 32)};
    const rr_v2i vb = {(int)(rr_u32)b, (int)(rr_u32)(b >> 32)};
    return @BUILTIN@(va, vb, c);
}
/* each accumulator rounded to f16 (round to nearest even) and widened back */
RR_FI rr_acc8 rr_acc_round_f16(rr_acc8 x)
{
    return __builtin_convertvector(__builtin_convertvector(x, rr_h8), rr_acc8);
}
RR_FI rr_accf rr_acc_from_f16(rr_u16 h) { return (float)__builtin_bit_cast(_Float16, h); }
RR_FI rr_u16 rr_acc_to_f16(float x) { return __builtin_bit_cast(rr_u16, (_Float16)x); }
/* a 4-byte word of global memory at addr + off (addr: a .global address the call passes);
 * rr_ld_global_b64: two words, 8-byte aligned */
RR_FI rr_u32 rr_ld_global_b32(rr_u64 addr, int off)
{
    return *(const __attribute__((address_space(1))) rr_u32 *)(__SIZE_TYPE__)(addr + off);
}
RR_FI rr_u64 rr_ld_global_b64(rr_u64 addr, int off)
{
    return *(const __attribute__((address_space(1))) rr_u64 *)(__SIZE_TYPE__)(addr + off);
}
#  else
/* host wave emulation (tests): accumulators in double; the WMMA is the test's stand-in,
 * which sees every lane's operand registers */
typedef double rr_accf;
typedef double rr_acc8 __attribute__((vector_size(64)));
rr_acc8 rr_host_wmma_fp8(rr_u64 a, rr_u64 b, rr_acc8 c, int lane);
#    define rr_wmma_fp8 rr_host_wmma_fp8
RR_FI rr_acc8 rr_acc_round_f16(rr_acc8 x)
{
    for (int v = 0; v < 8; ++v)
        x[v] = rr_f16_to_f64(rr_f64_to_f16_bits(x[v]));
    return x;
}
RR_FI rr_accf rr_acc_from_f16(rr_u16 h) { return rr_f16_to_f64(h); }
RR_FI rr_u16 rr_acc_to_f16(double x) { return (rr_u16)rr_f64_to_f16_bits(x); }
RR_FI rr_u32 rr_ld_global_b32(rr_u64 addr, int off)
{
    rr_u32 v;
    __builtin_memcpy(&v, (const void *)(__SIZE_TYPE__)(addr + off), 4);
    return v;
}
RR_FI rr_u64 rr_ld_global_b64(rr_u64 addr, int off)
{
    rr_u64 v;
    __builtin_memcpy(&v, (const void *)(__SIZE_TYPE__)(addr + off), 8);
    return v;
}
#  endif

/* the lane's WMMA A operand of tile (m0, k0): eight consecutive k of one image row */
RR_FI rr_u64 rr_wmma_load_a(const rr_u8 *img, int ld, int lane, int m0, int k0)
{
    return *(const rr_u64 *)__builtin_assume_aligned(
        img + (m0 + @A_ROW@) * ld + k0 + @A_K@, 8);
}
/* the lane's WMMA B operand of k tile k0 from an n-major B image (ld bytes per column) */
RR_FI rr_u64 rr_wmma_load_b(const rr_u8 *bimg, int ld, int lane, int k0)
{
    return *(const rr_u64 *)__builtin_assume_aligned(bimg + (@B_N@) * ld + k0 + @B_K@, 8);
}
/* the lane's WMMA B operand from the weight image: its two words at wb + c0, wb + c1 (wb:
 * the passed address plus the lane's offset; rrsplice.body.wmma_b) */
RR_FI rr_u64 rr_wmma_load_b_global(rr_u64 wb, int c0, int c1)
{
    return (rr_u64)rr_ld_global_b32(wb, c0) | (rr_u64)rr_ld_global_b32(wb, c1) << 32;
}
/* The WMMAs compute each tile transposed, D^T = B^T A^T + C^T: a lane's B operand (column
 * i of B, eight k) is the A operand of B^T in the A layout, its A operand (row i of A) the
 * B operand of A^T, so the loads are the same, and the lane's eight accumulators are then
 * row i of D, eight consecutive columns: C seeds and D move through row-major images as
 * one vector each, and an NVIDIA C/D register's two halves (one row's adjacent columns)
 * as one word. Accumulator v of a lane is D[m0 + @C_COL@][@C_ROW@ + v]. */
/* the C seeds of rows m0..m0+15 of a block, from its row-major seed image (accumulator
 * type, 16 columns): a lane's eight accumulators, one vector load */
RR_FI rr_acc8 rr_wmma_load_c(const rr_accf *cs, int lane, int m0)
{
    return *(const rr_acc8 *)__builtin_assume_aligned(cs + (m0 + @C_COL@) * 16 + @C_ROW@,
                                                      sizeof(rr_acc8) / 2);
}
/* the same for a seed image of eight rows (every row block seeded by one register: row r
 * of any tile is image row r & 7) */
RR_FI rr_acc8 rr_wmma_load_c8(const rr_accf *cs, int lane)
{
    return *(const rr_acc8 *)__builtin_assume_aligned(cs + ((@C_COL@) & 7) * 16 + @C_ROW@,
                                                      sizeof(rr_acc8) / 2);
}
/* the same from an f16 seed image (where the f32 one does not fit in LDS): the lane's eight
 * f16 seeds one 16-byte load, widened (exactly) */
RR_FI rr_acc8 rr_wmma_widen_c16(const rr_u16 *at)
{
    const rr_u16 *row = (const rr_u16 *)__builtin_assume_aligned(at, 16);
    rr_acc8 c;
    for (int v = 0; v < 8; ++v)
        c[v] = rr_acc_from_f16(row[v]);
    return c;
}
RR_FI rr_acc8 rr_wmma_load_c16(const rr_u16 *cs, int lane, int m0)
{
    return rr_wmma_widen_c16(cs + (m0 + @C_COL@) * 16 + @C_ROW@);
}
RR_FI rr_acc8 rr_wmma_load_c16_8(const rr_u16 *cs, int lane)
{
    return rr_wmma_widen_c16(cs + ((@C_COL@) & 7) * 16 + @C_ROW@);
}
/* a tile's D, rounded to f16, into the block's row-major f16 D image (16 columns): the
 * lane's eight values are 16 consecutive bytes, one store */
RR_FI void rr_wmma_store_d(rr_u16 *dimg, int lane, int m0, rr_acc8 d)
{
    rr_u16 h[8];
    for (int v = 0; v < 8; ++v)
        h[v] = rr_acc_to_f16(d[v]);
    __builtin_memcpy(__builtin_assume_aligned(dimg + (m0 + @C_COL@) * 16 + @C_ROW@, 16), h, 16);
}
/* one m16n8k32 e4m3 step of a 16x16 tile (two NVIDIA n8 mma), transposed: C widened to f32
 * (the accumulators), two k16 WMMAs (B's operand first), the result rounded to f16 */
RR_FI rr_acc8 rr_wmma_k32(rr_acc8 acc, const rr_u8 *a_img, int lda, rr_u64 b0, rr_u64 b1,
                          int lane, int m0, int k0)
{
    const rr_u64 a0 = rr_wmma_load_a(a_img, lda, lane, m0, k0);
    const rr_u64 a1 = rr_wmma_load_a(a_img, lda, lane, m0, k0 + 16);
    acc = rr_wmma_fp8(b0, a0, acc, lane);
    acc = rr_wmma_fp8(b1, a1, acc, lane);
    return rr_acc_round_f16(acc);
}
/* one 16x16 tile of a block from its C seeds: `ksteps` k32 steps with the block's B
 * operands (bop[2 s], bop[2 s + 1] for step s); its D (each accumulator an f16 value) */
RR_FI rr_acc8 rr_wmma_tile(const rr_u8 *a_img, int lda, const rr_u64 *bop, rr_acc8 acc,
                           int lane, int m0, int ksteps)
{
#pragma unroll
    for (int s = 0; s < ksteps; ++s)
        acc = rr_wmma_k32(acc, a_img, lda, bop[2 * s], bop[2 * s + 1], lane, m0, 32 * s);
    return acc;
}
/* a tile's D straight into the return slots: accumulators 2t and 2t + 1 of this lane are
 * the two halves of NVIDIA lane 4 (i & 7) + t's D register i >> 3 of n8 half h (i = lane &
 * 15, h = lane >> 4), one 4-byte store each; `at` is the address for t = 0, `step` the
 * bytes of one slot */
RR_FI void rr_wmma_store_d_slots(rr_u32 at, rr_u32 step, rr_acc8 d)
{
    for (int t = 0; t < 4; ++t)
        rr_st_shared_b32(at + (rr_u32)t * step, (rr_u32)rr_acc_to_f16(d[2 * t])
                         | (rr_u32)rr_acc_to_f16(d[2 * t + 1]) << 16);
}

@PLACE_B@

/* one NVIDIA B fragment register (k tile k0, columns n0.. of the block) -> the n-major image */
RR_FI void rr_stage_b(rr_u8 *bimg, int ld, int lane, int k0, int n0, int reg, rr_u32 v)
{
    for (int e = 0; e < 4; ++e) {
        const int i = 4 * reg + e;
        bimg[(n0 + rr_b_col(lane, i)) * ld + k0 + rr_b_row(lane, i)] = (rr_u8)(v >> (8 * e));
    }
}
/* the same as one 4-byte store: the register's four bytes are consecutive k of one image
 * column, the first a multiple of 4 (checked for the layout when the header is written; ld
 * and k0 are multiples of 32) */
RR_FI void rr_stage_b_w(rr_u8 *bimg, int ld, int lane, int k0, int n0, int reg, rr_u32 v)
{
    rr_u8 *at = bimg + (n0 + rr_b_col(lane, 4 * reg)) * ld + k0 + rr_b_row(lane, 4 * reg);
    __builtin_memcpy(__builtin_assume_aligned(at, 4), &v, 4);
}
/* one NVIDIA A register -> the row-major A image as one 4-byte store (rr_stage_a's bytes:
 * consecutive k of one row, the first a multiple of 4, checked as for rr_stage_b_w) */
RR_FI void rr_stage_a_w(rr_u8 *img, int ld, int lane, int m0, int k0, int reg, rr_u32 v)
{
    rr_u8 *at = img + (m0 + rr_a_row(lane, 4 * reg)) * ld + k0 + rr_a_col(lane, 4 * reg);
    __builtin_memcpy(__builtin_assume_aligned(at, 4), &v, 4);
}
/* one NVIDIA C (f16x2) register of tile (m0, n0 of the block) -> the block's row-major
 * seed image, widened (exactly) to the accumulator type: its two halves are one row's
 * adjacent columns, the first even (checked as for rr_read_d2), one 2-element store */
RR_FI void rr_stage_c(rr_accf *cs, int lane, int m0, int n0, int reg, rr_u32 v)
{
    const rr_accf pair[2] = {rr_acc_from_f16((rr_u16)v), rr_acc_from_f16((rr_u16)(v >> 16))};
    __builtin_memcpy(__builtin_assume_aligned(
        cs + (m0 + rr_d_row(lane, 2 * reg)) * 16 + n0 + rr_d_col(lane, 2 * reg),
        2 * sizeof(rr_accf)), pair, 2 * sizeof(rr_accf));
}
/* the same into an f16 seed image (kept as f16): the register itself, one 4-byte store */
RR_FI void rr_stage_c16(rr_u16 *cs, int lane, int m0, int n0, int reg, rr_u32 v)
{
    __builtin_memcpy(__builtin_assume_aligned(
        cs + (m0 + rr_d_row(lane, 2 * reg)) * 16 + n0 + rr_d_col(lane, 2 * reg), 4), &v, 4);
}
/* the block's D image -> one NVIDIA D (f16x2) register of tile (m0, n0 of the block) */
RR_FI rr_u32 rr_read_d(const rr_u16 *dimg, int lane, int m0, int n0, int reg)
{
    rr_u32 v = 0;
    for (int e = 0; e < 2; ++e) {
        const int i = 2 * reg + e;
        v |= (rr_u32)dimg[(m0 + rr_d_row(lane, i)) * 16 + n0 + rr_d_col(lane, i)] << (16 * e);
    }
    return v;
}
/* the same as one 4-byte load: a register's two f16 are one row's adjacent columns, the
 * first even (checked for the layout when the header is written) */
RR_FI rr_u32 rr_read_d2(const rr_u16 *dimg, int lane, int m0, int n0, int reg)
{
    return *(const rr_u32 *)__builtin_assume_aligned(
        dimg + (m0 + rr_d_row(lane, 2 * reg)) * 16 + n0 + rr_d_col(lane, 2 * reg), 4);
}
#endif
"""


# ------------------------------------------------------------------ the body

def lane_offset_expr(bits) -> str:
    """C for sum(a_b x bit b of lane), the lane's offset of the direct B words."""
    parts = [f"{a} * ((lane >> {b}) & 1)" if b else f"{a} * (lane & 1)"
             for b, a in enumerate(bits) if a]
    return " + ".join(parts) or "0"


def _load_lines(p: BodyPlan, used: set) -> list:
    """The region's loads whose words the body uses (as the PTX has them: each lane's own
    address), one local per word."""
    out = []
    for ld in p.loads:
        if not any(n in used for n in ld.names):
            continue
        out.append(f"    /* {ld.sid}, line {ld.line}: {ld.text} */")
        for j, name in enumerate(ld.names):
            if name in used:
                out.append(f"    const rr_u32 {name} = rr_ld_global_b32({ld.base}, "
                           f"{ld.offset + 4 * j});")
    return out


def render_wmma_body(plan: BodyPlan, lang: str) -> str:
    """The HIP body with the WMMA program (the signature, A staging and returns as the
    scalar body has them)."""
    from .header import HEADER_NAME
    from .render import _arg_comment, stage_a_lines, store_returns
    p = plan
    prog = wmma_program(p)
    direct = prog.direct
    cal = p.callee
    lda = f"{cal.upper()}_LDA"
    img, bimg, csimg = f"{cal}_a_image", f"{cal}_b_block", f"{cal}_c_block"
    b_from = ("B operands straight from the weight image in the WMMA layout (the region's "
              "own loads)" if direct else "B fragments into an n-major image")
    out = [f"/* {cal}: native body for {p.function} {p.region} (phase {p.phase.index}, "
           f"{p.phase.geometry} {p.phase.shape}: {len(p.steps)} mma in {p.phase.chain_count} "
           "chains),",
           f" * generated by `rrsplice body new {p.recipe.name} --lang {lang} --mma wmma` from "
           f"{p.module.name}.",
           f" * gfx12 WMMA: {prog.wmmas} x {rl.INSTRUCTION}, two per pair of n8 mma (below).",
           " * A fragments are staged into a row-major e4m3 image per warp; per n16 block, the "
           f"{b_from},",
           " * and the chains' C seeds, widened to f32, into a column-major image; every WMMA "
           "operand is one load",
           " * in the RDNA4 layout; D goes back through an f16 image in the NVIDIA D layout. */",
           f'#include "{HEADER_NAME}"', "",
           f"#define {lda} {p.k}   /* bytes per A image row and per B image column */"]
    slots = prog.slots
    if not prog.a_in_scratch:
        out.append(f"static __shared__ __attribute__((aligned(16))) rr_u8 {img}[{p.warps}]"
                   f"[{p.m * p.k}];")
    parts = ([] if direct else [f"B image (16 columns x {p.k} k)"]) + \
        [f"C seed image ({p.m} rows x 16, f32, column-major)"] + \
        ([] if slots else [f"D image ({p.m} rows x 16 f16, over the seeds once they are read)"])
    out.append(f"/* per warp, one n16 block's: {', '.join(parts)} */")
    if not direct:
        out.append(f"static __shared__ __attribute__((aligned(16))) rr_u8 {bimg}[{p.warps}]"
                   f"[{16 * p.k}];")
    ctype = "rr_accf" if prog.seed == 4 else "rr_u16"
    out.append(f"static __shared__ __attribute__((aligned(32))) {ctype} {csimg}[{p.warps}]"
               f"[{16 * p.m}];")
    out.append("")
    out.append(f'extern "C" __device__ void {cal}(')
    for i, a in enumerate(p.args):
        sep = "," if i + 1 < len(p.args) else ""
        comment = (f"{a.reg}: the address the region's loads read from" if a.role == "global"
                   else _arg_comment(a))
        out.append(f"    {a.c_type} {a.name}{sep}  /* {a.ptx_type} {comment} */")
    out += [")", "{", "    const rr_u32 tid = rr_linear_tid();",
            "    const int lane = (int)(tid & 31);"]
    scratch = next((a.name for a in p.args if a.role == "scratch"), None)
    if prog.a_in_scratch:
        out += ["    /* the A image overlays this warp's own return slots (32 x "
                f"{p.stride} bytes of the recipe's own array) until the results are stored */",
                f"    rr_u8 *img = rr_shared_ptr({scratch} + (tid & ~31u) * {p.stride}u);"]
    else:
        out.append(f"    rr_u8 *img = {img}[tid >> 5];")
    if not direct:
        out.append(f"    rr_u8 *bimg = {bimg}[tid >> 5];")
    out.append(f"    {ctype} *cs = {csimg}[tid >> 5];")
    if slots:
        out += ["    /* D straight into the return slots: where this lane's accumulators 0 and 1 go "
                "(NVIDIA lane",
                "     * 4 (lane & 7) of the warp, its D register (lane >> 3) & 1 of n8 half "
                "lane >> 4) */",
                f"    const rr_u32 dslot = {scratch} + ((tid & ~31u) + 4u * (rr_u32)(lane & 7))"
                f" * {p.stride}u + (rr_u32)((lane >> 4) * {slots.dn} + ((lane >> 3) & 1) * "
                f"{slots.dr});"]
    else:
        out.append("    rr_u16 *dimg = (rr_u16 *)cs;   /* the D image, over the seed image */")
    used = {c for s in p.steps for c in s.c}
    if not direct:
        used |= {b for s in p.steps for b in s.b}
    loads = _load_lines(p, used)
    if loads:
        out += ["", "    /* the region's own loads of the words the body stages */"] + loads
    if direct:
        lane_off = lane_offset_expr(direct.lane_bits)
        out += ["", "    /* B from the weight image: this lane's WMMA B words at wb + c "
                "(rrsplice.body.wmma_b: the",
                f"     * offsets from {direct.base}, checked for every lane) */",
                f"    const rr_u64 wb = {direct.base} + (rr_u64)(long long)({lane_off});"]
    out += ["", "    /* A fragments -> the staged image: each register's four bytes at their "
            "(row, k) */"]
    # one 4-byte store per register where the image is the body's own (16-byte aligned);
    # over the recipe's slots, whose alignment the body does not know, byte by byte
    out += stage_a_lines(p, lda, "rr_stage_a" if prog.a_in_scratch else "rr_stage_a_w")
    for a in p.args:
        if a.role in ("other", "shared"):
            out.append(f"    (void){a.name};")
    ks = p.k // 32
    if not slots:
        out.append(f"    rr_u32 ret[{max(len(p.rets), 1)}];   /* the results, NVIDIA D layout */")
    out.append(f"    rr_u64 bop[{2 * ks}];   /* the block's B operands, k16 tile by k16 tile */")
    out += block_lines(p, prog, lda, lambda i, m0, nl, j: (
        f"    ret[{i}] = rr_read_d(dimg, lane, {m0}, {nl}, {j});   /* {p.rets[i].reg} */"))
    out.append("")
    if slots:
        out.append("    rr_syncwarp();   /* every lane's results are in its slot */")
    else:
        out += store_returns(p, scratch, [f"ret[{i}]" for i in range(len(p.rets))])
    out.append("}")
    return "\n".join(out) + "\n"


def block_lines(p: BodyPlan, prog: WmmaProgram, lda: str, read) -> list:
    """The WMMA program's code, n16 block by n16 block: stage the block's B fragments and C
    seeds, load its B operands, run its tiles, and read its final D back; `read(i, m0, n,
    j)` is the line that reads return `i` (register j of tile (m0, n)) from the D image.
    The locals it uses (`img`, `bimg`, `cs`, `dimg`, `dslot`, `wb`, `bop`, `lane`) are the
    caller's. Shared by the single-phase body and the lifted region's WMMA phases
    (rrsplice.lift.wmma_phase)."""
    direct, slots = prog.direct, prog.slots
    ks = p.k // 32
    sfx = "" if prog.seed == 4 else "16"
    out: list = []
    for blk in prog.blocks:
        out += ["", f"    /* n16 block {blk.n0 // 16}: columns {blk.n0}..{blk.n0 + 15}; "
                "WMMA pairs (rows, k: the two n8 mma sharing them):"]
        for pr in blk.pairs:
            out.append(f"     *   m {pr.m0}..{pr.m0 + 15}, k {pr.k0}..{pr.k0 + 31}: "
                       f"{pr.low} (n {blk.n0}..{blk.n0 + 7}) + {pr.high} "
                       f"(n {blk.n0 + 8}..{blk.n0 + 15})")
        out.append("     */")
        if blk is not prog.blocks[0]:
            out.append("    rr_syncwarp();   /* the previous block's images are read */")
        for name, k0, nl, j in blk.b_stage:
            out.append(f"    rr_stage_b_w(bimg, {lda}, lane, {k0}, {nl}, {j}, {name});")
        for name, m0, nl, j in blk.c_stage:
            out.append(f"    rr_stage_c{sfx}(cs, lane, {m0}, {nl}, {j}, {name});"
                       + ("   /* every row block of these columns */" if blk.c_rows == 8
                          and p.m > 8 else ""))

        def seeds(m0, blk=blk):
            return (f"rr_wmma_load_c{sfx}{'_' if sfx else ''}8(cs, lane)" if blk.c_rows == 8
                    else f"rr_wmma_load_c{sfx}(cs, lane, {m0})")
        out.append("    rr_syncwarp();")
        if direct:
            for kb in range(2 * ks):
                c0, c1 = direct.words[(blk.n0, kb)]
                if direct.aligned8[(blk.n0, kb)]:
                    out.append(f"    bop[{kb}] = rr_ld_global_b64(wb, {c0});")
                else:
                    out.append(f"    bop[{kb}] = rr_wmma_load_b_global(wb, {c0}, {c1});")
        else:
            out += ["#pragma unroll", f"    for (int kb = 0; kb < {2 * ks}; ++kb)",
                    f"        bop[kb] = rr_wmma_load_b(bimg, {lda}, lane, 16 * kb);"]
        if slots:
            for m0 in range(0, p.m, 16):
                regs = sorted(p.rets[i].reg for i, r0, _, _ in blk.reads if r0 == m0)
                out.append(f"    rr_wmma_store_d_slots(dslot + {slots.base[(m0, blk.n0)]}u, "
                           f"{p.stride}u, rr_wmma_tile(img, {lda}, bop, "
                           f"{seeds(m0)}, lane, {m0}, {ks}));   "
                           f"/* {', '.join(regs)} */")
            continue
        mt = p.m // 16
        out += [f"    rr_acc8 acc{blk.n0 // 16}[{mt}];",
                "#pragma unroll", f"    for (int mt = 0; mt < {mt}; ++mt)",
                f"        acc{blk.n0 // 16}[mt] = {seeds('16 * mt')};",
                "    rr_syncwarp();   /* the seeds are read: the D image overlays them */",
                "#pragma unroll", f"    for (int mt = 0; mt < {mt}; ++mt)",
                f"        rr_wmma_store_d(dimg, lane, 16 * mt, rr_wmma_tile(img, {lda}, bop, "
                f"acc{blk.n0 // 16}[mt], lane, 16 * mt, {ks}));",
                "    rr_syncwarp();"]
        for i, m0, nl, j in blk.reads:
            out.append(read(i, m0, nl, j))
    return out
