// Shared machinery of the Swin-shaped fp8 tensor-core fixture kernels.
//
// Each fixture (.cu next to this header) defines a table of phases (GEMMs) and
// instantiates RRSWIN_KERNEL with it.  Everything is sized at compile time and
// fully unrolled, so nvcc emits one straight-line mma region per kernel:
//
//   prologue        texture + plane reads, phase 1's A fragments staged from the
//                   plane arena, phase 1's B fragments and bias seeds loaded from
//                   the weight image (param block +40) at constant offsets
//   mma region      phase 1 .. phase N, each a set of mma chains (one chain per
//                   (m-tile, n-tile), one mma per k-slice, D feeding the next C),
//                   with a requantising epilogue between consecutive phases
//   final epilogue  last phase's accumulators staged through shared memory, a
//                   row softmax, a 3x3 colour gather, two integer-coordinate
//                   texture reads, a surface store and an aux-plane store
//
// Launch: block (32, 1, 4) -- one warp per threadIdx.z --, grid
// (width / 32, height / 4); width must be a multiple of 32, height of 4.  The
// thread (lane, 0, z) of block (bx, by) owns pixel (32 * bx + lane, 4 * by + z).
// The computation is deterministic: no atomics, shared memory is per-warp and
// every reuse is fenced by __syncwarp().
#pragma once

#include <cstdint>
#include <cuda_fp16.h>

// ---------------------------------------------------------------------------
// The parameter block (the kernel's only parameter).  Byte offsets are part of
// the fixture contract (see <kernel>.launch.json); the weight image pointer is
// the 64-bit field at +40.
struct RrSwinParams {
    const __half*       arena;       //   0  plane arena: phase 1 activations (f16)
    const float4*       plane_in;    //   8  guide plane, width*height float4
    uint4*              plane_out;   //  16  aux output plane, width*height uint4
    cudaTextureObject_t tex_color;   //  24  RGBA32F colour
    cudaTextureObject_t tex_guide;   //  32  RGBA32F guide
    const uint8_t*      weights;     //  40  weight image
    cudaTextureObject_t tex_motion;  //  48  RGBA32F motion (read at integer coords)
    cudaTextureObject_t tex_depth;   //  56  RGBA32F depth  (read at integer coords)
    cudaSurfaceObject_t surf_out;    //  64  RGBA16F output surface
    int                 width;       //  72
    int                 height;      //  76
    float               in_scale;    //  80
    float               out_scale;   //  84
    int                 frame;       //  88
    int                 flags;       //  92
};
static_assert(sizeof(RrSwinParams) == 96, "parameter block layout");
static_assert(__builtin_offsetof(RrSwinParams, weights) == 40, "weight image at +40");

// ---------------------------------------------------------------------------
// Phase table.

enum RrEpi : int {
    EPI_SCALE = 0,   // h = h * s + b (f16x2), requantise
    EPI_RELU,        // h * s, requantise with .relu
    EPI_GELU,        // f32 sigmoid-GELU with ex2.approx, requantise
    EPI_SOFTMAX,     // row softmax over the phase's n-tiles (quad shuffles, h2exp2)
    EPI_SHARED,      // stage through per-warp shared memory, read back permuted
    EPI_MOVMATRIX,   // movmatrix.trans every accumulator, then scale
    EPI_NORM,        // row layer-norm in f32 (quad shuffles, rsqrt)
};

struct RrPhase {
    int mt, nt, ks;  // m-tiles (16 rows), n-tiles (8 cols), k-slices (32)
    int epi;         // epilogue applied to this phase's accumulators
};

// Weight image layout, phase after phase: B block (4 warps x nt*ks fragments
// x 256 bytes), then bias block (4 warps x nt seeds x 16 bytes).
__host__ __device__ constexpr int rr_phase_bytes(const RrPhase& p)
{
    return 4 * p.nt * p.ks * 256 + 4 * p.nt * 16;
}

template <const RrPhase* PH, int P>
__host__ __device__ constexpr int rr_woff()
{
    int o = 0;
    for (int i = 0; i < P; ++i) o += rr_phase_bytes(PH[i]);
    return o;
}

// Accumulator registers per lane staged through shared memory: the phases
// with an EPI_SHARED epilogue and the last phase (final epilogue).
template <const RrPhase* PH, int N>
__host__ __device__ constexpr int rr_max_acc()
{
    int m = PH[N - 1].mt * PH[N - 1].nt * 2;
    for (int i = 0; i < N; ++i)
        if (PH[i].epi == EPI_SHARED && PH[i].mt * PH[i].nt * 2 > m) m = PH[i].mt * PH[i].nt * 2;
    return m;
}

// ---------------------------------------------------------------------------
// Primitives written as inline asm so the PTX carries them verbatim.

// One operand list per line.  By default the opcode has a line of its own, so
// every mma is a five-line PTX statement; a fixture that defines
// RRSWIN_MMA_D_ON_OPCODE_LINE puts the D list on the opcode's line instead
// (a four-line statement).
#ifdef RRSWIN_MMA_D_ON_OPCODE_LINE
#define RRSWIN_MMA_HEAD "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0, %1},\n\t"
#else
#define RRSWIN_MMA_HEAD "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16\n\t{%0, %1},\n\t"
#endif

__device__ __forceinline__ void rr_mma(uint32_t& d0, uint32_t& d1,
                                       uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                       uint32_t b0, uint32_t b1,
                                       uint32_t c0, uint32_t c1)
{
    asm(RRSWIN_MMA_HEAD
        "{%2, %3, %4, %5},\n\t"
        "{%6, %7},\n\t"
        "{%8, %9};"
        : "=r"(d0), "=r"(d1)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(c0), "r"(c1));
}

template <bool RELU>
__device__ __forceinline__ uint16_t rr_cvt_e4m3x2(__half2 h)
{
    uint16_t r;
    const uint32_t v = *reinterpret_cast<const uint32_t*>(&h);
    if (RELU)
        asm("cvt.rn.satfinite.relu.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(v));
    else
        asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(r) : "r"(v));
    return r;
}

__device__ __forceinline__ uint32_t rr_pack(uint16_t lo, uint16_t hi)
{
    uint32_t r;
    asm("mov.b32 %0, {%1, %2};" : "=r"(r) : "h"(lo), "h"(hi));
    return r;
}

__device__ __forceinline__ uint32_t rr_movmatrix(uint32_t a)
{
    uint32_t d;
    asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(a));
    return d;
}

__device__ __forceinline__ __half2 rr_h2(uint32_t v)
{
    return *reinterpret_cast<const __half2*>(&v);
}

__device__ __forceinline__ uint32_t rr_u32(__half2 h)
{
    return *reinterpret_cast<const uint32_t*>(&h);
}

// ---------------------------------------------------------------------------
// One phase: B fragments and bias seeds from the weight image at constant
// offsets, then MT x NT chains of KS mma each (m-tile outer, n-tile, k-slice
// inner, so a chain's mma are consecutive).

template <int MT, int NT, int KS, int WOFF>
__device__ __forceinline__ void rr_gemm(const uint32_t (&a)[MT * KS * 4],
                                        uint32_t (&d)[MT * NT * 2],
                                        const uint8_t* __restrict__ w, int lane, int wz)
{
    uint32_t b[NT * KS * 2];
    const uint8_t* wb = w + WOFF + wz * (NT * KS * 256);
    if constexpr (KS % 2 == 0) {
        // two k-slices per 16-byte load: [n][k/2][lane][16 bytes]
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int kk = 0; kk < KS / 2; ++kk) {
                const uint4 v = __ldg(reinterpret_cast<const uint4*>(
                    wb + ((n * (KS / 2) + kk) * 32 + lane) * 16));
                b[(n * KS + 2 * kk) * 2 + 0] = v.x;
                b[(n * KS + 2 * kk) * 2 + 1] = v.y;
                b[(n * KS + 2 * kk + 1) * 2 + 0] = v.z;
                b[(n * KS + 2 * kk + 1) * 2 + 1] = v.w;
            }
    } else {
        // one k-slice per 8-byte load: [n][k][lane][8 bytes]
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int k = 0; k < KS; ++k) {
                const uint2 v = __ldg(reinterpret_cast<const uint2*>(
                    wb + ((n * KS + k) * 32 + lane) * 8));
                b[(n * KS + k) * 2 + 0] = v.x;
                b[(n * KS + k) * 2 + 1] = v.y;
            }
    }
    // bias seeds: one f16x2 per n-tile, uniform across the warp
    uint32_t bias[NT];
    const uint8_t* wbias = w + WOFF + 4 * NT * KS * 256 + wz * (NT * 16);
#pragma unroll
    for (int n = 0; n < NT; ++n)
        bias[n] = __ldg(reinterpret_cast<const unsigned int*>(wbias + n * 16));

#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n) {
            uint32_t c0 = bias[n], c1 = bias[n];
#pragma unroll
            for (int k = 0; k < KS; ++k) {
                uint32_t d0, d1;
                const int ai = (m * KS + k) * 4, bi = (n * KS + k) * 2;
                rr_mma(d0, d1, a[ai], a[ai + 1], a[ai + 2], a[ai + 3], b[bi], b[bi + 1], c0, c1);
                c0 = d0;
                c1 = d1;
            }
            d[(m * NT + n) * 2 + 0] = c0;
            d[(m * NT + n) * 2 + 1] = c1;
        }
}

// ---------------------------------------------------------------------------
// Epilogue transforms on the accumulators (f16x2 per register).  Register
// (m*NT + n)*2 + r holds row (lane/4 + 8r) of m-tile m, columns 2*(lane%4)+{0,1}
// of n-tile n.

template <int MT, int NT>
__device__ __forceinline__ void rr_epi_scale(uint32_t (&d)[MT * NT * 2], float s, float b)
{
    const __half2 s2 = __float2half2_rn(s), b2 = __float2half2_rn(b);
#pragma unroll
    for (int i = 0; i < MT * NT * 2; ++i) d[i] = rr_u32(__hfma2(rr_h2(d[i]), s2, b2));
}

template <int MT, int NT>
__device__ __forceinline__ void rr_epi_gelu(uint32_t (&d)[MT * NT * 2])
{
#pragma unroll
    for (int i = 0; i < MT * NT * 2; ++i) {
        float2 f = __half22float2(rr_h2(d[i]));
        f.x = __fdividef(f.x, 1.0f + exp2f(-2.4554670f * f.x));
        f.y = __fdividef(f.y, 1.0f + exp2f(-2.4554670f * f.y));
        d[i] = rr_u32(__floats2half2_rn(f.x * 0.25f, f.y * 0.25f));
    }
}

template <int MT, int NT>
__device__ __forceinline__ void rr_epi_softmax(uint32_t (&d)[MT * NT * 2])
{
    const __half2 log2e = __float2half2_rn(1.4426950f);
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            __half2 mx = rr_h2(d[(m * NT) * 2 + r]);
#pragma unroll
            for (int n = 1; n < NT; ++n) mx = __hmax2(mx, rr_h2(d[(m * NT + n) * 2 + r]));
            __half m1 = __hmax(__low2half(mx), __high2half(mx));
            m1 = __hmax(m1, __shfl_xor_sync(0xffffffffu, m1, 1));
            m1 = __hmax(m1, __shfl_xor_sync(0xffffffffu, m1, 2));
            const __half2 m2 = __half2half2(m1);
            float sum = 0.0f;
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                const __half2 e = h2exp2(__hmul2(__hsub2(rr_h2(d[(m * NT + n) * 2 + r]), m2), log2e));
                const float2 ef = __half22float2(e);
                sum += ef.x + ef.y;
                d[(m * NT + n) * 2 + r] = rr_u32(e);
            }
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const __half2 inv = __float2half2_rn(__fdividef(64.0f, sum));
#pragma unroll
            for (int n = 0; n < NT; ++n)
                d[(m * NT + n) * 2 + r] = rr_u32(__hmul2(rr_h2(d[(m * NT + n) * 2 + r]), inv));
        }
}

template <int MT, int NT>
__device__ __forceinline__ void rr_epi_norm(uint32_t (&d)[MT * NT * 2])
{
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float s = 0.0f, q = 0.0f;
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                const float2 f = __half22float2(rr_h2(d[(m * NT + n) * 2 + r]));
                s += f.x + f.y;
                q += f.x * f.x + f.y * f.y;
            }
            s += __shfl_xor_sync(0xffffffffu, s, 1);
            q += __shfl_xor_sync(0xffffffffu, q, 1);
            s += __shfl_xor_sync(0xffffffffu, s, 2);
            q += __shfl_xor_sync(0xffffffffu, q, 2);
            const float mean = s * (1.0f / (8.0f * NT));
            const float rstd = rsqrtf(fmaxf(q * (1.0f / (8.0f * NT)) - mean * mean, 0.0f) + 1e-3f);
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                const float2 f = __half22float2(rr_h2(d[(m * NT + n) * 2 + r]));
                d[(m * NT + n) * 2 + r] =
                    rr_u32(__floats2half2_rn((f.x - mean) * rstd * 2.0f, (f.y - mean) * rstd * 2.0f));
            }
        }
}

template <int S>
__device__ __forceinline__ void rr_epi_shared(uint32_t (&d)[S], uint32_t* sm, int lane)
{
    __syncwarp();
#pragma unroll
    for (int i = 0; i < S; ++i) sm[i * 32 + lane] = d[i];
    __syncwarp();
    // slot (i+1)%S of lane ^ c(i): every (slot, lane) is read exactly once
#pragma unroll
    for (int i = 0; i < S; ++i) d[i] = sm[((i + 1) % S) * 32 + (lane ^ ((i * 5 + 1) & 31))];
}

template <int S>
__device__ __forceinline__ void rr_epi_movmatrix(uint32_t (&d)[S])
{
    const __half2 s2 = __float2half2_rn(0.5f);
#pragma unroll
    for (int i = 0; i < S; ++i) d[i] = rr_u32(__hmul2(rr_h2(rr_movmatrix(d[i])), s2));
}

// Requantise S accumulator registers (f16x2) into T A registers (4 x e4m3 each):
// every accumulator reaches some A register (sums when S > 2T; when S < 2T the
// accumulators are reused, half-swapped and rescaled differently per round, so
// no two A registers are provably equal and nvcc cannot merge any mma).
template <int S, int T, bool RELU>
__device__ __forceinline__ void rr_requant(const uint32_t (&d)[S], uint32_t (&a)[T])
{
    __half2 acc[2 * T];
#pragma unroll
    for (int i = 0; i < 2 * T; ++i) {
        const int round = i / S;
        if (round == 0)
            acc[i] = rr_h2(d[i]);
        else
            acc[i] = __hfma2(__lowhigh2highlow(rr_h2(d[i % S])),
                             __float2half2_rn(1.0f - 0.375f * round),
                             __float2half2_rn(0.0625f * round));
    }
#pragma unroll
    for (int j = 2 * T; j < S; ++j) acc[j % (2 * T)] = __hadd2(acc[j % (2 * T)], rr_h2(d[j]));
    // bound |A| by 64 (with B below 2 in magnitude, no f16 accumulator of a
    // chain of four can overflow: 4 x 32 x 64 x 2 < 65504)
    const __half2 lim = __float2half2_rn(64.0f), nlim = __float2half2_rn(-64.0f);
#pragma unroll
    for (int i = 0; i < 2 * T; ++i) acc[i] = __hmax2(__hmin2(acc[i], lim), nlim);
#pragma unroll
    for (int i = 0; i < T; ++i)
        a[i] = rr_pack(rr_cvt_e4m3x2<RELU>(acc[2 * i]), rr_cvt_e4m3x2<RELU>(acc[2 * i + 1]));
}

// ---------------------------------------------------------------------------
// The phase chain: phase P's mma, then (unless it is the last) its epilogue
// feeding phase P+1's A fragments.

template <const RrPhase* PH, int N, int P>
struct RrRun {
    static constexpr RrPhase ph = PH[P];
    static constexpr int S = ph.mt * ph.nt * 2;

    template <int SL>
    __device__ __forceinline__ static void run(const uint32_t (&a)[ph.mt * ph.ks * 4],
                                               uint32_t (&out)[SL],
                                               const uint8_t* __restrict__ w,
                                               uint32_t* sm, int lane, int wz)
    {
        uint32_t d[S];
        rr_gemm<ph.mt, ph.nt, ph.ks, rr_woff<PH, P>()>(a, d, w, lane, wz);
        if constexpr (P + 1 == N) {
            static_assert(SL == S, "last phase accumulator count");
#pragma unroll
            for (int i = 0; i < S; ++i) out[i] = d[i];
        } else {
            constexpr RrPhase nx = PH[P + 1];
            if constexpr (ph.epi == EPI_SCALE) rr_epi_scale<ph.mt, ph.nt>(d, 0.125f, 0.0625f);
            if constexpr (ph.epi == EPI_RELU) rr_epi_scale<ph.mt, ph.nt>(d, 0.25f, -0.03125f);
            if constexpr (ph.epi == EPI_GELU) rr_epi_gelu<ph.mt, ph.nt>(d);
            if constexpr (ph.epi == EPI_SOFTMAX) rr_epi_softmax<ph.mt, ph.nt>(d);
            if constexpr (ph.epi == EPI_SHARED) {
                rr_epi_shared<S>(d, sm, lane);
#ifndef RRSWIN_FOLDED
                rr_epi_scale<ph.mt, ph.nt>(d, 0.125f, 0.0f);  // folded variants skip it
#endif
            }
            if constexpr (ph.epi == EPI_MOVMATRIX) rr_epi_movmatrix<S>(d);
            if constexpr (ph.epi == EPI_NORM) rr_epi_norm<ph.mt, ph.nt>(d);
            uint32_t an[nx.mt * nx.ks * 4];
            rr_requant<S, nx.mt * nx.ks * 4, ph.epi == EPI_RELU>(d, an);
            RrRun<PH, N, P + 1>::run(an, out, w, sm, lane, wz);
        }
    }
};

// ---------------------------------------------------------------------------
// The kernel body.

template <const RrPhase* PH, int N>
__device__ __forceinline__ void rr_swin_body(const RrSwinParams& p, uint32_t* smem)
{
    constexpr RrPhase p0 = PH[0];
    constexpr RrPhase pl = PH[N - 1];
    constexpr int A0 = p0.mt * p0.ks * 4;   // phase 1's A registers
    constexpr int SL = pl.mt * pl.nt * 2;   // last phase's accumulator registers
    static_assert(A0 % 2 == 0, "A0 even");

    const int lane = threadIdx.x;
    const int wz = threadIdx.z;
    const int x = blockIdx.x * 32 + lane;
    const int y = blockIdx.y * 4 + wz;
    const float fx = x + 0.5f, fy = y + 0.5f;
    const uint8_t* __restrict__ w = p.weights;
    uint32_t* sm = smem + wz * (rr_max_acc<PH, N>() * 32);

    // ---- prologue: textures, the guide plane and the plane arena ----
#if defined(RRSWIN_HDR)
    // variant: HDR input is tone-mapped before the mma region (more statements there)
    float4 col = tex2D<float4>(p.tex_color, fx, fy);
    col.x = __fdividef(col.x, 1.0f + col.x);
    col.y = __fdividef(col.y, 1.0f + col.y);
    col.z = __fdividef(col.z, 1.0f + col.z);
#elif defined(RRSWIN_LDR)
    // variant: LDR input is clamped to [0, 1] before the mma region
    float4 col = tex2D<float4>(p.tex_color, fx, fy);
    col.x = __saturatef(col.x);
    col.y = __saturatef(col.y);
#else
    const float4 col = tex2D<float4>(p.tex_color, fx, fy);
#endif
    const float4 gui = tex2D<float4>(p.tex_guide, fx, fy);
    const float4 pin = __ldg(p.plane_in + (y * p.width + x));
    const __half2 s0 = __floats2half2_rn(col.x * p.in_scale + pin.x, col.y * p.in_scale + pin.y);
    const __half2 s1 = __floats2half2_rn(col.z * p.in_scale + pin.z, gui.x + gui.y * pin.w);
#if defined(RRSWIN_HDR)
    // variant: HDR modulates the third scale by the colour (more registers of every class)
    const __half2 s2 = __hmul2(__floats2half2_rn(gui.z + 1.0f, gui.w - 1.0f),
                               __floats2half2_rn(1.0f + col.x * 0.1171875f, 1.0f - col.y * 0.1171875f));
#else
    const __half2 s2 = __floats2half2_rn(gui.z + 1.0f, gui.w - 1.0f);
#endif
    const __half* ar = p.arena + ((((blockIdx.y * gridDim.x + blockIdx.x) * 4 + wz) * 32 + lane) * (A0 * 2));
    uint32_t a[A0];
#pragma unroll
    for (int i = 0; i < A0 / 2; ++i) {
        // 8 halves -> two A registers
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(ar) + i);
        const __half2 sc = (i % 3 == 0) ? s0 : ((i % 3 == 1) ? s1 : s2);
        const __half2 h0 = __hmul2(rr_h2(v.x), sc), h1 = __hmul2(rr_h2(v.y), sc);
        const __half2 h2 = __hmul2(rr_h2(v.z), sc), h3 = __hmul2(rr_h2(v.w), sc);
        a[2 * i + 0] = rr_pack(rr_cvt_e4m3x2<false>(h0), rr_cvt_e4m3x2<false>(h1));
        a[2 * i + 1] = rr_pack(rr_cvt_e4m3x2<false>(h2), rr_cvt_e4m3x2<false>(h3));
    }

    // ---- the mma region: every phase and every inter-phase epilogue ----
    uint32_t acc[SL];
    RrRun<PH, N, 0>::run(a, acc, w, sm, lane, wz);

    // ---- final epilogue ----
    // stage the last phase's accumulators so each lane sees its quad's rows
    __syncwarp();
#pragma unroll
    for (int i = 0; i < SL; ++i) sm[i * 32 + lane] = acc[i];
    __syncwarp();
    float v[2 * SL];
#pragma unroll
    for (int i = 0; i < SL; ++i) {
        const float2 f = __half22float2(rr_h2(sm[i * 32 + (lane ^ 1)]));
        const float2 g = __half22float2(rr_h2(acc[i]));
        v[2 * i + 0] = g.x + 0.5f * f.y;
        v[2 * i + 1] = g.y + 0.5f * f.x;
    }
    // row max and softmax over this lane's values and its quad's
    float mx = v[0];
#pragma unroll
    for (int i = 1; i < 2 * SL; ++i) mx = fmaxf(mx, v[i]);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    float wsum = 0.0f;
#pragma unroll
    for (int i = 0; i < 2 * SL; ++i) {
        v[i] = exp2f((v[i] - mx) * 1.4426950f);
        wsum += v[i];
    }
    wsum += __shfl_xor_sync(0xffffffffu, wsum, 2);  // the pair's sum is >= 1
    const float winv = __fdividef(1.0f, wsum);
    // 3x3 colour gather weighted by the softmax
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int t = 0; t < 9; ++t) {
        const float4 c = tex2D<float4>(p.tex_color, fx + (t % 3 - 1), fy + (t / 3 - 1));
        const float wt = v[t % (2 * SL)] * winv;
        o.x += wt * c.x;
        o.y += wt * c.y;
        o.z += wt * c.z;
        o.w += wt * c.w;
    }
    // two integer-coordinate reads: motion, then depth at the reprojected pixel
#ifdef RRSWIN_MV_SCALE
    // variant: motion vectors at another resolution (_mvhi / _mvlo)
    float4 mv = tex2D<float4>(p.tex_motion, (float)x, (float)y);
    mv.x *= RRSWIN_MV_SCALE;
    mv.y *= RRSWIN_MV_SCALE;
#else
    const float4 mv = tex2D<float4>(p.tex_motion, (float)x, (float)y);
#endif
    const int rx = x + __float2int_rn(mv.x), ry = y + __float2int_rn(mv.y);
    const float4 dp = tex2D<float4>(p.tex_depth, (float)rx, (float)ry);
    o.x = o.x * p.out_scale + dp.x;
    o.y = o.y * p.out_scale + dp.y;
    o.z = o.z * p.out_scale + dp.z;
    o.w = o.w + v[2 * SL - 1] * winv * dp.w;
    if (x < p.width && y < p.height) {
        const ushort4 h = make_ushort4(__half_as_ushort(__float2half_rn(o.x)),
                                       __half_as_ushort(__float2half_rn(o.y)),
                                       __half_as_ushort(__float2half_rn(o.z)),
                                       __half_as_ushort(__float2half_rn(o.w)));
        surf2Dwrite(h, p.surf_out, x * 8, y, cudaBoundaryModeZero);
        uint4 raw;
        raw.x = acc[0];
        raw.y = acc[1 % SL];
        raw.z = acc[2 % SL];
        raw.w = acc[3 % SL];
#pragma unroll
        for (int i = 4; i < SL; ++i) {
            if (i % 4 == 0) raw.x ^= acc[i];
            if (i % 4 == 1) raw.y ^= acc[i];
            if (i % 4 == 2) raw.z ^= acc[i];
            if (i % 4 == 3) raw.w ^= acc[i];
        }
        p.plane_out[y * p.width + x] = raw;
    }
}

// blockDim is (32, 1, 4).  CUDA C++ can only state a 1-D bound, so the PTX
// says `.maxntid 128, 1, 1` (sm_89/sm_90) or `.maxntid 128` (sm_120), not the
// denoiser's `.maxntid 32, 1, 4`.  (__block_size__((32, 1, 4)) gives
// `.reqntid 32, 1, 4`, but only for sm_90+, and together with __launch_bounds__
// nvcc 13.0 emits both directives, which ptxas rejects.)
#define RRSWIN_BOUNDS __launch_bounds__(128, 1)

// Defines extern "C" kernel NAME over phase table TABLE (a constexpr RrPhase array).
#define RRSWIN_KERNEL(NAME, TABLE)                                                          \
    extern "C" __global__ void RRSWIN_BOUNDS NAME(const RrSwinParams p)                      \
    {                                                                                        \
        constexpr int N = sizeof(TABLE) / sizeof(TABLE[0]);                                  \
        __shared__ __align__(16) uint32_t smem[4 * rr_max_acc<TABLE, N>() * 32];             \
        rr_swin_body<TABLE, N>(p, smem);                                                     \
    }
