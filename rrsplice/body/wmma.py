"""The gfx12 WMMA program of a body (`body new --lang hip --mma wmma`): the phase's mma paired
into 16x16 WMMA tiles, with every operand a plain load from an LDS image.

Why: the translated kernel spends ~155 instructions per WMMA reassembling NVIDIA fragments
into WMMA operands with cross-lane permutes. Here each fragment is written once, at its
(row, k) / (k, n) / (row, n), into a per-warp image at the phase boundary, and every WMMA
operand register is then one LDS read in the RDNA4 layout (rrsplice.rdna4_layout).

One m16n8k32 e4m3 mma with f16 accumulators is the sequence ZLUDA lowers it to: C widened
to f32, two k16 WMMAs (k0..k0+15, then k0+16..k0+31), the result rounded to f16. Two mma
whose n8 tiles are the halves of one WMMA n16 tile (same rows, same k) share one WMMA pair;
each element's sum is the same as in its own mma.

The body works through the phase in n16 blocks: stage the block's B fragments (a 16 x K
image, n-major so a lane's eight k are contiguous) and its chains' C seeds (an M x 16 f16
image), run every (row tile, k step) of the block, and read the block's final D back in the
NVIDIA D layout. A phase this program cannot express (a chain that is not one (m, n) tile
walked in k order, B fed from an earlier D, N not a multiple of 16, an intermediate D
returned) is a BodyError that says so; `--mma scalar` still covers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NoReturn, cast

from ..fragments import rdna4_layout as rl
from .plan import BodyError, BodyPlan


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
    reads: list = field(default_factory=list)     # (ret index, m0, n local, reg index)
    pairs: list = field(default_factory=list)     # Pair


@dataclass
class WmmaProgram:
    m: int
    n: int
    k: int
    blocks: list
    wmmas: int


def _unsupported(plan: BodyPlan, why: str) -> NoReturn:
    raise BodyError(f"phase {plan.phase.index}: {why}; the WMMA program needs "
                    "every chain to be one (m, n) tile walked in k order (`--mma scalar` "
                    "computes any phase)", path=plan.recipe)


def wmma_program(plan: BodyPlan) -> WmmaProgram:
    """The phase's mma as WMMA pairs per n16 block, checked against the chains' structure."""
    p = plan
    if p.n % 16:
        _unsupported(p, f"N = {p.n} is not a multiple of 16 (an n8 tile would have no partner)")
    args = {a.name: a for a in p.args}
    tiles: dict = {}
    for s in p.steps:
        fb = [args[b].frag if b in args else None for b in s.b]
        if any(f is None or f.matrix != "B" for f in fb):
            _unsupported(p, f"{s.sid} reads B {list(s.b)}, which are not passed B fragments")
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
                if any(c not in args or args[c].role != "C" for c in s.c):
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
    lds = lds_bytes(p)
    if lds > LDS_LIMIT:
        raise BodyError(f"phase {p.phase.index}: the WMMA images need {lds} bytes of "
                        f"LDS for {p.warps} warps, more than gfx12's {LDS_LIMIT} per workgroup "
                        "(declare .maxntid in the kernel, or use `--mma scalar`)", path=p.recipe)
    return WmmaProgram(p.m, p.n, p.k, blocks, 2 * sum(len(b.pairs) for b in blocks))


LDS_LIMIT = 65536     # bytes of LDS one gfx12 workgroup can allocate


def lds_bytes(p: BodyPlan) -> int:
    """The body's own LDS: per warp one block's B image and C/D image, and the A image
    unless it overlays the recipe's scratch slots."""
    return p.warps * (16 * p.k + 2 * 16 * p.m + (0 if p.image_in_scratch else p.m * p.k))


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
    return (_WMMA_TEMPLATE
            .replace("@PLACE_B@", _place_fn("rr_b", layouts["B"], "k, n within the tile"))
            .replace("@A_ROW@", _terms(ra.row_lane)).replace("@A_K@", _terms(ra.col_lane))
            .replace("@B_N@", _terms(rb.col_lane)).replace("@B_K@", _terms(rb.row_lane))
            .replace("@C_ROW@", _terms(rc.row_lane)).replace("@C_COL@", _terms(rc.col_lane))
            .replace("@C_OFF@", ", ".join(map(str, rc.row_off)))
            .replace("@RULE_A@", rl.layout("A").rule).replace("@RULE_B@", rl.layout("B").rule)
            .replace("@RULE_C@", rl.layout("C").rule).replace("@SOURCE@", rl.SOURCE)
            .replace("@BUILTIN@", rl.BUILTIN))


_WMMA_TEMPLATE = r"""
/* ---- the gfx12 WMMA path (`body new --mma wmma`): operands as plain loads from LDS images.
 * RDNA4 layouts (rrsplice.rdna4_layout; @SOURCE@):
 *   A: @RULE_A@
 *   B: @RULE_B@
 *   C/D: @RULE_C@ */
#if defined(RR_HIP) || defined(RR_HOST_WAVE)
typedef unsigned short rr_u16;
#  if defined(RR_HIP)
typedef int rr_v2i __attribute__((ext_vector_type(2)));
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
RR_FI float rr_acc_from_f16(rr_u16 h) { return (float)__builtin_bit_cast(_Float16, h); }
RR_FI rr_u16 rr_acc_to_f16(float x) { return __builtin_bit_cast(rr_u16, (_Float16)x); }
#  else
/* host wave emulation (tests): accumulators in double; the WMMA is the test's stand-in,
 * which sees every lane's operand registers */
typedef double rr_acc8 __attribute__((vector_size(64)));
rr_acc8 rr_host_wmma_fp8(rr_u64 a, rr_u64 b, rr_acc8 c, int lane);
#    define rr_wmma_fp8 rr_host_wmma_fp8
RR_FI rr_acc8 rr_acc_round_f16(rr_acc8 x)
{
    for (int v = 0; v < 8; ++v)
        x[v] = rr_f16_to_f64(rr_f64_to_f16_bits(x[v]));
    return x;
}
RR_FI double rr_acc_from_f16(rr_u16 h) { return rr_f16_to_f64(h); }
RR_FI rr_u16 rr_acc_to_f16(double x) { return (rr_u16)rr_f64_to_f16_bits(x); }
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
/* the C seeds of rows m0..m0+15 of a block's f16 image (16 columns) in the accumulator layout */
RR_FI rr_acc8 rr_wmma_load_c(const rr_u16 *cd, int lane, int m0)
{
    const int off[8] = {@C_OFF@};
    rr_acc8 c;
    for (int v = 0; v < 8; ++v)
        c[v] = rr_acc_from_f16(cd[(m0 + @C_ROW@ + off[v]) * 16 + @C_COL@]);
    return c;
}
RR_FI void rr_wmma_store_d(rr_u16 *cd, int lane, int m0, rr_acc8 d)
{
    const int off[8] = {@C_OFF@};
    for (int v = 0; v < 8; ++v)
        cd[(m0 + @C_ROW@ + off[v]) * 16 + @C_COL@] = rr_acc_to_f16(d[v]);
}
/* one m16n8k32 e4m3 step of a 16x16 tile (two NVIDIA n8 mma): C widened to f32 (the
 * accumulators), two k16 WMMAs, the result rounded to f16 */
RR_FI rr_acc8 rr_wmma_k32(rr_acc8 acc, const rr_u8 *a_img, int lda, const rr_u8 *bimg,
                          int ldb, int lane, int m0, int k0)
{
    const rr_u64 a0 = rr_wmma_load_a(a_img, lda, lane, m0, k0);
    const rr_u64 b0 = rr_wmma_load_b(bimg, ldb, lane, k0);
    const rr_u64 a1 = rr_wmma_load_a(a_img, lda, lane, m0, k0 + 16);
    const rr_u64 b1 = rr_wmma_load_b(bimg, ldb, lane, k0 + 16);
    acc = rr_wmma_fp8(a0, b0, acc, lane);
    acc = rr_wmma_fp8(a1, b1, acc, lane);
    return rr_acc_round_f16(acc);
}
/* one 16x16 tile of a block: its C seeds, `ksteps` k32 steps, its D back into the image */
RR_FI void rr_wmma_tile(const rr_u8 *a_img, int lda, const rr_u8 *bimg, rr_u16 *cd,
                        int lane, int m0, int ksteps)
{
    rr_acc8 acc = rr_wmma_load_c(cd, lane, m0);
#pragma unroll
    for (int s = 0; s < ksteps; ++s)
        acc = rr_wmma_k32(acc, a_img, lda, bimg, lda, lane, m0, 32 * s);
    rr_wmma_store_d(cd, lane, m0, acc);
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
/* one NVIDIA C (f16x2) register of tile (m0, n0 of the block) -> the block's f16 image */
RR_FI void rr_stage_c(rr_u16 *cd, int lane, int m0, int n0, int reg, rr_u32 v)
{
    for (int e = 0; e < 2; ++e) {
        const int i = 2 * reg + e;
        cd[(m0 + rr_d_row(lane, i)) * 16 + n0 + rr_d_col(lane, i)] = (rr_u16)(v >> (16 * e));
    }
}
/* the block's image -> one NVIDIA D (f16x2) register of tile (m0, n0 of the block) */
RR_FI rr_u32 rr_read_d(const rr_u16 *cd, int lane, int m0, int n0, int reg)
{
    rr_u32 v = 0;
    for (int e = 0; e < 2; ++e) {
        const int i = 2 * reg + e;
        v |= (rr_u32)cd[(m0 + rr_d_row(lane, i)) * 16 + n0 + rr_d_col(lane, i)] << (16 * e);
    }
    return v;
}
#endif
"""


# ------------------------------------------------------------------ the body

def render_wmma_body(plan: BodyPlan, lang: str) -> str:
    """The HIP body with the WMMA program (the signature, A staging and returns as the
    scalar body has them)."""
    from .header import HEADER_NAME
    from .render import _arg_comment, store_returns
    p = plan
    prog = wmma_program(p)
    cal = p.callee
    lda = f"{cal.upper()}_LDA"
    img, bimg, cdimg = f"{cal}_a_image", f"{cal}_b_block", f"{cal}_cd_block"
    out = [f"/* {cal}: native body for {p.function} {p.region} (phase {p.phase.index}, "
           f"{p.phase.geometry} {p.phase.shape}: {len(p.steps)} mma in {p.phase.chain_count} "
           "chains),",
           f" * generated by `rrsplice body new {p.recipe.name} --lang {lang} --mma wmma` from "
           f"{p.module.name}.",
           f" * gfx12 WMMA: {prog.wmmas} x {rl.INSTRUCTION}, two per pair of n8 mma (below).",
           " * A fragments are staged into a row-major e4m3 image per warp; per n16 block, the "
           "B fragments",
           " * into an n-major image and the chains' C seeds into an f16 image; every WMMA "
           "operand is one",
           " * LDS read in the RDNA4 layout; D goes back through the f16 image in the NVIDIA "
           "D layout. */",
           f'#include "{HEADER_NAME}"', "",
           f"#define {lda} {p.k}   /* bytes per A image row and per B image column */"]
    if not p.image_in_scratch:
        out.append(f"static __shared__ __attribute__((aligned(16))) rr_u8 {img}[{p.warps}]"
                   f"[{p.m * p.k}];")
    out += [f"/* per warp: one n16 block's B image (16 columns x {p.k} k) and C/D image "
            f"({p.m} rows x 16 f16) */",
            f"static __shared__ __attribute__((aligned(16))) rr_u8 {bimg}[{p.warps}]"
            f"[{16 * p.k}];",
            f"static __shared__ __attribute__((aligned(16))) rr_u16 {cdimg}[{p.warps}]"
            f"[{16 * p.m}];", ""]
    out.append(f'extern "C" __device__ void {cal}(')
    for i, a in enumerate(p.args):
        sep = "," if i + 1 < len(p.args) else ""
        out.append(f"    {a.c_type} {a.name}{sep}  /* {a.ptx_type} {_arg_comment(a)} */")
    out += [")", "{", "    const rr_u32 tid = rr_linear_tid();",
            "    const int lane = (int)(tid & 31);"]
    scratch = next((a.name for a in p.args if a.role == "scratch"), None)
    if p.image_in_scratch:
        out += ["    /* the A image overlays this warp's own return slots (32 x "
                f"{p.stride} bytes of the recipe's own array) until the results are stored */",
                f"    rr_u8 *img = rr_shared_ptr({scratch} + (tid & ~31u) * {p.stride}u);"]
    else:
        out.append(f"    rr_u8 *img = {img}[tid >> 5];")
    out += [f"    rr_u8 *bimg = {bimg}[tid >> 5];", f"    rr_u16 *cd = {cdimg}[tid >> 5];", "",
            "    /* A fragments -> the staged image: each register's four bytes at their "
            "(row, k) */"]
    for a in p.args:
        if a.role == "A":
            f = a.frag
            out.append(f"    rr_stage_a(img, {lda}, lane, {f.row_base}, {f.col_base}, {f.index}, "
                       f"{a.name});   /* {a.reg}: A tile ({f.tile[0]}, {f.tile[1]}) reg "
                       f"{f.index} */")
    for a in p.args:
        if a.role in ("other", "shared"):
            out.append(f"    (void){a.name};")
    out.append(f"    rr_u32 ret[{max(len(p.rets), 1)}];   /* the results, NVIDIA D layout */")
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
            out.append(f"    rr_stage_b(bimg, {lda}, lane, {k0}, {nl}, {j}, {name});")
        for name, m0, nl, j in blk.c_stage:
            out.append(f"    rr_stage_c(cd, lane, {m0}, {nl}, {j}, {name});")
        out += ["    rr_syncwarp();", "#pragma unroll",
                f"    for (int mt = 0; mt < {p.m // 16}; ++mt)",
                f"        rr_wmma_tile(img, {lda}, bimg, cd, lane, 16 * mt, {p.k // 32});",
                "    rr_syncwarp();"]
        for i, m0, nl, j in blk.reads:
            out.append(f"    ret[{i}] = rr_read_d(cd, lane, {m0}, {nl}, {j});   "
                       f"/* {p.rets[i].reg} */")
    out.append("")
    out += store_returns(p, scratch, [f"ret[{i}]" for i in range(len(p.rets))])
    out.append("}")
    return "\n".join(out) + "\n"
