"""The generated header `rr_mma.h`: the portable mma interface the native body calls.

* Fragment placement (`rr_a_row`, `rr_a_col`, ...): the ISA layouts of rrsplice.fragments.layout,
  written out as per-element offset tables.
* `rr_stage_a`: one A fragment register of one lane -> its four bytes in the staged image
  (row-major e4m3, per warp); `rr_load_a`: the image -> the A operand register.
* `rr_mma_e4m3_f16`: one m16n8k32 step, A from the image, B and C as registers.
  CUDA: the hardware `mma.sync` through inline assembly. HIP `--mma scalar`: a portable
  scalar fallback: every D element is the exact sum of its 32 products and C, rounded once to
  f16 (round to nearest even), B elements fetched from their owner lane.
* HIP `--mma wmma` (the default): the gfx12 WMMA section of rrsplice.body.wmma is added:
  operands loaded from LDS images in the RDNA4 layout, `v_wmma_f32_16x16x16_fp8_fp8`.
  With RR_HOST_TEST and RR_HOST_WAVE the whole body builds for the host, one wave of threads
  emulated by a test that provides the WMMA stand-in.
* The ABI helpers: the thread's linear index, warp/block barriers, 32-bit stores to a
  `.shared` window address (what the call text passes as the scratch argument).

It compiles as CUDA (nvcc) and as HIP device code without the HIP headers
(`clang -x hip -nogpuinc`), so it declares what it needs itself.
"""

from __future__ import annotations

HEADER_NAME = "rr_mma.h"
# the f16 NaN the fallback returns (what mma.sync returned for NaN results on the H200:
# docs/proof.md, "Is mma.sync a scalar model?")
F16_NAN = "0x7fff"


def _expr(terms, base: str = "") -> str:
    parts = [f"{c} * {f}" if c != 1 else f for f, c in terms]
    return " + ".join(parts) or "0"


def _table(name: str, values) -> str:
    return f"    const int {name}[{len(values)}] = {{" + ", ".join(str(v) for v in values) + "};"


def _place_fn(fname: str, lay, what: str) -> str:
    r = lay.rule_data
    return "\n".join([
        f"/* {lay.matrix} ({lay.shape} .{lay.dtype}), {what}: {lay.rule} */",
        f"RR_FI int {fname}_row(int lane, int i)",
        "{",
        "    const int g = lane >> 2, t = lane & 3;",
        "    (void)g; (void)t;",
        _table("off", r.row_off),
        f"    return {_expr(r.row_lane)} + off[i];",
        "}",
        f"RR_FI int {fname}_col(int lane, int i)",
        "{",
        "    const int g = lane >> 2, t = lane & 3;",
        "    (void)g; (void)t;",
        _table("off", r.col_off),
        f"    return {_expr(r.col_lane)} + off[i];",
        "}",
    ])


def _b_owner_lines(lay_b) -> list:
    """For the HIP fallback: for each k, which register/element holds B[k][n] and which lane
    (a linear function of n, checked against the layout for every n)."""
    out = []
    for k in range(lay_b.rows):
        lane0, reg, elem = lay_b.owner(k, 0)
        lane1, reg1, elem1 = lay_b.owner(k, 1)
        step = lane1 - lane0
        for n in range(lay_b.cols):
            if lay_b.owner(k, n) != (lane0 + step * n, reg, elem):
                raise ValueError(f"B[{k}][{n}]: the owner lane is not linear in n")
        out.append((k, reg, elem, lane0, step))
    return out


def header_text(layouts: dict, mma: str = "scalar") -> str:
    """The header for the layouts of one mma shape ("A".."D" -> Layout); `mma` "wmma" adds
    the gfx12 WMMA path (rrsplice.body.wmma)."""
    la, lb, lc = layouts["A"], layouts["B"], layouts["D"]
    fallback = []
    for k, reg, elem, lane0, step in _b_owner_lines(lb):
        fallback.append(f"        {{ /* B[k0 + {k}][n]: reg {reg}, byte {elem} of lane "
                        f"{lane0} + {step} * n */")
        fallback.append(f"            const rr_u32 v0 = rr_lane_b({reg}, b0, b1, {lane0} + {step} "
                        f"* n0), v1 = rr_lane_b({reg}, b0, b1, {lane0} + {step} * n1);")
        fallback.append(f"            const double w0 = rr_e4m3_to_f64((v0 >> {8 * elem}) & 0xff),"
                        f" w1 = rr_e4m3_to_f64((v1 >> {8 * elem}) & 0xff);")
        fallback.append(f"            s[0] += rr_e4m3_to_f64(a_img[r0 * lda + k0 + {k}]) * w0;")
        fallback.append(f"            s[1] += rr_e4m3_to_f64(a_img[r0 * lda + k0 + {k}]) * w1;")
        fallback.append(f"            s[2] += rr_e4m3_to_f64(a_img[r1 * lda + k0 + {k}]) * w0;")
        fallback.append(f"            s[3] += rr_e4m3_to_f64(a_img[r1 * lda + k0 + {k}]) * w1;")
        fallback.append("        }")
    # the D layout of this shape: element i of a lane is (row r0/r1, column n0/n1)
    dl = [lc.coord(5, i // lc.per_reg, i % lc.per_reg) for i in range(lc.regs * lc.per_reg)]
    assert dl[0][0] == dl[1][0] and dl[2][0] == dl[3][0] and dl[0][1] == dl[2][1]
    return _TEMPLATE.replace("@PLACE_A@", _place_fn("rr_a", la, "staged image row, k")) \
        .replace("@PLACE_D@", _place_fn("rr_d", lc, "row, n within the tile")) \
        .replace("@A_REGS@", str(la.regs)).replace("@A_PER_REG@", str(la.per_reg)) \
        .replace("@FALLBACK@", "\n".join(fallback)) \
        .replace("@WMMA@", _wmma_section(layouts, mma)) \
        .replace("@NAN@", F16_NAN).replace("@SHAPE@", f"{la.shape}.row.col.f16.{la.dtype}.{lb.dtype}.f16")


def _wmma_section(layouts: dict, mma: str) -> str:
    if mma in ("scalar", "mma.sync"):
        return ""
    if mma != "wmma":
        raise ValueError(f"mma must be scalar, mma.sync or wmma, not {mma!r}")
    from .wmma import header_section
    return header_section(layouts)


_TEMPLATE = r"""/* rr_mma.h -- generated by `rrsplice body new`; the portable mma interface of a native
 * body. CUDA: mma.sync through inline assembly. HIP: the gfx12 WMMA path (when generated
 * with --mma wmma), or a scalar fallback: exact products and sum, one rounding to f16 per mma.
 * Fragment placement: PTX ISA 9.7.14.5 (rrsplice.fragments.layout). */
#ifndef RR_MMA_H
#define RR_MMA_H

typedef unsigned char rr_u8;
typedef unsigned int rr_u32;
typedef unsigned long long rr_u64;

#if defined(__HIP__) && !defined(RR_HOST_TEST)
#  define RR_HIP 1
#  ifndef __device__                /* compiled without the HIP headers (-nogpuinc) */
#    define __device__ __attribute__((device))
#    define __shared__ __attribute__((shared))
#  endif
#  define RR_FI __device__ static inline __attribute__((always_inline))
#elif defined(__CUDACC__) && !defined(RR_HOST_TEST)
#  define RR_CUDA 1
#  define RR_FI __device__ static __forceinline__
#else                               /* a host build of the scalar helpers, for tests */
#  define RR_FI static inline
#  if defined(RR_HOST_WAVE)         /* ... and of a whole body, one wave emulated by the test */
#    define __device__
#    define __shared__
#  endif
#endif

/* ---- the ABI: thread index, barriers, stores to a .shared window address ---- */
#if defined(RR_HIP)
RR_FI rr_u32 rr_linear_tid(void)
{
    return __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_size_x() *
        (__builtin_amdgcn_workitem_id_y() + __builtin_amdgcn_workgroup_size_y() *
         __builtin_amdgcn_workitem_id_z());
}
RR_FI void rr_syncwarp(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
RR_FI void rr_syncthreads(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
RR_FI void rr_st_shared_b32(rr_u32 addr, rr_u32 v)
{
    *(__attribute__((address_space(3))) rr_u32 *)(__SIZE_TYPE__)addr = v;
}
RR_FI rr_u8 *rr_shared_ptr(rr_u32 addr)
{
    return (rr_u8 *)(__attribute__((address_space(3))) rr_u8 *)(__SIZE_TYPE__)addr;
}
RR_FI rr_u32 rr_lane_value(rr_u32 v, int lane)
{
    return (rr_u32)__builtin_amdgcn_ds_bpermute(lane << 2, (int)v);
}
#elif defined(RR_CUDA)
RR_FI rr_u32 rr_linear_tid(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
RR_FI rr_u8 *rr_shared_ptr(rr_u32 addr) { return (rr_u8 *)__cvta_shared_to_generic(addr); }
RR_FI void rr_syncwarp(void) { __syncwarp(); }
RR_FI void rr_syncthreads(void) { __syncthreads(); }
RR_FI void rr_st_shared_b32(rr_u32 addr, rr_u32 v)
{
    asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
#elif defined(RR_HOST_WAVE) && defined(RR_LIFT_H)
/* the host wave emulation of a lifted body (rr_lift.h included first): its host build's
 * lanes, barrier and .shared window */
RR_FI rr_u32 rr_linear_tid(void) { return rr_lift_linear_tid(); }
RR_FI void rr_syncwarp(void) { rr_host_barrier(); }
RR_FI void rr_syncthreads(void) { rr_host_barrier(); }
RR_FI rr_u8 *rr_shared_ptr(rr_u32 addr) { return rr_host_shared + addr; }
RR_FI void rr_st_shared_b32(rr_u32 addr, rr_u32 v) { __builtin_memcpy(rr_shared_ptr(addr), &v, 4); }
#elif defined(RR_HOST_WAVE)
/* the host wave emulation: the test provides the lane's thread index, the wave barrier and
 * the .shared window */
rr_u32 rr_host_tid(void);
void rr_host_syncwarp(void);
rr_u8 *rr_host_shared(rr_u32 addr);
RR_FI rr_u32 rr_linear_tid(void) { return rr_host_tid(); }
RR_FI void rr_syncwarp(void) { rr_host_syncwarp(); }
RR_FI void rr_syncthreads(void) { rr_host_syncwarp(); }
RR_FI rr_u8 *rr_shared_ptr(rr_u32 addr) { return rr_host_shared(addr); }
RR_FI void rr_st_shared_b32(rr_u32 addr, rr_u32 v) { __builtin_memcpy(rr_host_shared(addr), &v, 4); }
#endif

/* ---- fragment placement ---- */
@PLACE_A@

@PLACE_D@

/* one A fragment register of this lane -> its bytes in the staged image (row-major, ld
 * bytes per row); (m0, k0) is the fragment's tile in the image */
RR_FI void rr_stage_a(rr_u8 *img, int ld, int lane, int m0, int k0, int reg, rr_u32 v)
{
    for (int e = 0; e < @A_PER_REG@; ++e) {
        const int i = @A_PER_REG@ * reg + e;
        img[(m0 + rr_a_row(lane, i)) * ld + k0 + rr_a_col(lane, i)] = (rr_u8)(v >> (8 * e));
    }
}

/* the staged image -> this lane's A operand register `reg` of tile (m0, k0) */
RR_FI rr_u32 rr_load_a(const rr_u8 *img, int ld, int lane, int m0, int k0, int reg)
{
    rr_u32 v = 0;
    for (int e = 0; e < @A_PER_REG@; ++e) {
        const int i = @A_PER_REG@ * reg + e;
        v |= (rr_u32)img[(m0 + rr_a_row(lane, i)) * ld + k0 + rr_a_col(lane, i)] << (8 * e);
    }
    return v;
}

/* ---- scalar helpers (the HIP fallback; host-buildable for tests) ---- */
#ifndef RR_F16_NAN
#  define RR_F16_NAN @NAN@u                 /* the NaN the hardware mma returns */
#endif
RR_FI double rr_e4m3_to_f64(rr_u32 b)
{
    const double sign = (b & 0x80) ? -1.0 : 1.0;
    const int e = (b >> 3) & 0xf, m = b & 7;
    if (e == 0xf && m == 7)
        return __builtin_nan("");
    if (e == 0)
        return sign * m * 0x1p-9;
    return sign * (8 + m) * __builtin_ldexp(1.0, e - 10);
}

RR_FI double rr_f16_to_f64(rr_u32 h)
{
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0x1f)
        return m ? __builtin_nan("") : sign * __builtin_inf();
    if (e == 0)
        return sign * m * 0x1p-24;
    return sign * (1024 + m) * __builtin_ldexp(1.0, e - 25);
}

/* double -> f16 bits, round to nearest even, in one step (no double rounding through f32) */
RR_FI rr_u32 rr_f64_to_f16_bits(double x)
{
    rr_u64 u;
    __builtin_memcpy(&u, &x, 8);
    const rr_u32 sign = (rr_u32)(u >> 48) & 0x8000;
    const int e = (int)((u >> 52) & 0x7ff);
    const rr_u64 frac = u & 0xfffffffffffffULL;
    if (e == 0x7ff)
        return frac ? RR_F16_NAN : (sign | 0x7c00);
    if (e == 0)
        return sign;                       /* below 2^-1022: rounds to zero */
    const rr_u64 mant = frac | (1ULL << 52);
    const int he = e - 1008;               /* the f16 biased exponent */
    const int shift = he >= 1 ? 42 : 42 + (1 - he);
    if (shift > 62)
        return sign;
    rr_u64 q = mant >> shift;
    const rr_u64 rem = mant & ((1ULL << shift) - 1), half = 1ULL << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        ++q;
    rr_u64 bits = he >= 1 ? ((rr_u64)(he - 1) << 10) + q : q;
    if (bits >= 0x7c00)
        bits = 0x7c00;                     /* overflow rounds to infinity */
    return sign | (rr_u32)bits;
}

/* ---- one mma step: D = A (tile m0, k0 of the image) x B (registers b0, b1) + C ---- */
#if defined(RR_CUDA)
RR_FI void rr_mma_e4m3_f16(const rr_u8 *a_img, int lda, int m0, int k0, rr_u32 b0,
                           rr_u32 b1, rr_u32 c0, rr_u32 c1, int lane, rr_u32 *d)
{
    rr_u32 a[@A_REGS@];
    for (int j = 0; j < @A_REGS@; ++j)
        a[j] = rr_load_a(a_img, lda, lane, m0, k0, j);
    asm("mma.sync.aligned.@SHAPE@ {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c0), "r"(c1));
}
#else
#  if defined(RR_HIP)
/* B register `reg` of lane `lane` (every lane of the wave executes this) */
#    define rr_lane_b(reg, b0, b1, lane) rr_lane_value((reg) ? (b1) : (b0), (lane))
#  elif defined(RR_LIFT_H)
/* host build of a lifted body (rr_lift.h included first): lanes exchange through it */
#    define rr_lane_b(reg, b0, b1, lane) rr_lift_lane((reg) ? (b1) : (b0), (lane))
#  else
/* host test build: the warp's B registers, set by the test before each lane's call */
static rr_u32 rr_host_b[2][32];
#    define rr_lane_b(reg, b0, b1, lane) rr_host_b[(reg)][(lane)]
#  endif
RR_FI void rr_mma_e4m3_f16(const rr_u8 *a_img, int lda, int m0, int k0, rr_u32 b0,
                           rr_u32 b1, rr_u32 c0, rr_u32 c1, int lane, rr_u32 *d)
{
    /* this lane's four D elements: rows r0, r1 x columns n0, n1 of the tile */
    const int r0 = m0 + rr_d_row(lane, 0), r1 = m0 + rr_d_row(lane, 2);
    const int n0 = rr_d_col(lane, 0), n1 = rr_d_col(lane, 1);
    double s[4] = {rr_f16_to_f64(c0 & 0xffff), rr_f16_to_f64(c0 >> 16),
                   rr_f16_to_f64(c1 & 0xffff), rr_f16_to_f64(c1 >> 16)};
    (void)b0; (void)b1;
@FALLBACK@
    d[0] = rr_f64_to_f16_bits(s[0]) | (rr_f64_to_f16_bits(s[1]) << 16);
    d[1] = rr_f64_to_f16_bits(s[2]) | (rr_f64_to_f16_bits(s[3]) << 16);
}
#endif
@WMMA@
#endif /* RR_MMA_H */
"""
