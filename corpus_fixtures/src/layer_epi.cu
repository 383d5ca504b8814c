// A transformer-block-shaped fp8 layer: four mma.sync m16n8k32 (e4m3 x e4m3 + f16) GEMM
// phases and, between them, the epilogues a real block has and the Swin fixtures do not:
//
//   phase 1  32x64x64   -> residual add (f16 from global memory) + two-pass layer norm over
//                          the 64-column row (shfl.bfly sums, rsqrt, gamma/beta from memory)
//   phase 2  32x64x64   -> GELU, tanh form, in f32
//   phase 3  32x32x64   -> row softmax in f32 (shfl.bfly max and sum, exp, divide)
//   phase 4  32x32x32      (the last phase: its D is stored after the region)
//
// Each epilogue requantises its f32 results to e4m3 (cvt.rn.satfinite.e4m3x2.f32) as the
// next phase's A fragments.  The chaining is exact: phase P+1's k-slice ks takes n-tiles
// 4ks .. 4ks+3 of phase P, register j of the A fragment (m-tile m) being row g + 8(j&1)
// and the pairs of n-tiles 4ks + 2(j>>1) and 4ks + 2(j>>1) + 1 (a fixed permutation of k
// that the weights are stored in).  B fragments are loaded next to the mma that reads
// them (the interleaved loads nvcc and Triton emit), bias seeds at each phase's start.
//
// One warp per block (block 32x1x1); block b owns rows [32b, 32b + 32) of every matrix.
// g = lane >> 2, t = lane & 3 (PTX ISA 9.7.14.5.10, the m16n8k32 fragments).
//
// scripts/make_layer_fixtures.py compiles this file three times (plain, --use_fast_math, and
// -DRRLAYER_CVT_EARLY; each with its own -DRRLAYER_NAME=...) and writes each kernel's ground
// truth and launch description.
//
// RRLAYER_CVT_EARLY: phases 1-3 convert each output tile to f32 (`cvt.f32.f16`) right after
// its chain's last mma, while the other tiles' mma of the same GEMM are still to come -- the
// shape nvcc gives an epilogue conversion it schedules early.  Same results, same four
// phases; only the order of the statements changes (the epilogue's first statements are
// interleaved with the phase's mma).
#include <cstdint>
#include <cuda_fp16.h>

#ifndef RRLAYER_NAME
#define RRLAYER_NAME rrlayer_kernel
#endif

struct RrLayerArgs {
    const uint8_t* act;        //  0  phase 1 A: e4m3 [block][32 rows][64 k]
    const uint8_t* weights;    //  8  per phase: B [nt][ks][lane][8 bytes], bias [nt] f16x2
    const __half*  residual;   // 16  f16 [block][32 rows][64 cols]
    const float*   ln;         // 24  gamma[64] then beta[64]
    uint32_t*      out;        // 32  phase 4's D: [block][lane][16 registers]
    float          eps;        // 40  layer-norm epsilon
    int            flags;      // 44  bit 0: negate the stored D
};
static_assert(sizeof(RrLayerArgs) == 48, "parameter layout");

struct RrLayerPhase {
    int mt, nt, ks;
};

constexpr RrLayerPhase kPh[] = {{2, 8, 2}, {2, 8, 2}, {2, 4, 2}, {2, 4, 1}};

__host__ __device__ constexpr int rr_phase_bytes(const RrLayerPhase& p)
{
    return p.nt * p.ks * 32 * 8 + p.nt * 4;
}

__host__ __device__ constexpr int rr_woff(int p)
{
    int o = 0;
    for (int i = 0; i < p; ++i) o += rr_phase_bytes(kPh[i]);
    return o;
}

__device__ __forceinline__ void rr_mma(uint32_t& d0, uint32_t& d1, const uint32_t* a,
                                       uint32_t b0, uint32_t b1, uint32_t c0, uint32_t c1)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16\n"
                 "\t{%0, %1},\n\t{%2, %3, %4, %5},\n\t{%6, %7},\n\t{%8, %9};"
                 : "=r"(d0), "=r"(d1)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c0),
                   "r"(c1));
}

// two f32 to an e4m3 pair: lo in the low byte
__device__ __forceinline__ uint32_t rr_e4m3x2(float lo, float hi)
{
    uint16_t r;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
}

// One phase: MT x NT chains of KS mma, bias seeds first, B loaded beside its mma;
// `finished(m, n)` runs right after chain (m, n)'s last mma, before the next chain's mma.
struct RrNothing {
    __device__ __forceinline__ void operator()(int, int) const {}
};
template <int P, class Finished = RrNothing>
__device__ __forceinline__ void rr_gemm(const uint32_t (&a)[kPh[P].mt][kPh[P].ks][4],
                                        uint32_t (&d)[kPh[P].mt][kPh[P].nt][2],
                                        const uint8_t* __restrict__ w, int lane,
                                        Finished finished = {})
{
    constexpr RrLayerPhase ph = kPh[P];
    const uint8_t* wb = w + rr_woff(P);
    uint32_t bias[ph.nt];
#pragma unroll
    for (int n = 0; n < ph.nt; ++n)
        bias[n] = __ldg(reinterpret_cast<const unsigned int*>(wb + ph.nt * ph.ks * 256) + n);
#pragma unroll
    for (int m = 0; m < ph.mt; ++m)
#pragma unroll
        for (int n = 0; n < ph.nt; ++n) {
            uint32_t c0 = bias[n], c1 = bias[n];
#pragma unroll
            for (int k = 0; k < ph.ks; ++k) {
                const uint2 b = __ldg(reinterpret_cast<const uint2*>(wb) +
                                      (n * ph.ks + k) * 32 + lane);
                rr_mma(c0, c1, a[m][k], b.x, b.y, c0, c1);
            }
            d[m][n][0] = c0;
            d[m][n][1] = c1;
            finished(m, n);
        }
}

#ifdef RRLAYER_CVT_EARLY
// rr_gemm, and each finished tile (chain) converted to f32 right after its last mma, before
// the next tile's mma: x[m][r][n][e] as rr_unpack writes it
template <int P>
__device__ __forceinline__ void rr_gemm_cvt(const uint32_t (&a)[kPh[P].mt][kPh[P].ks][4],
                                            uint32_t (&d)[kPh[P].mt][kPh[P].nt][2],
                                            float (&x)[kPh[P].mt][2][kPh[P].nt][2],
                                            const uint8_t* __restrict__ w, int lane)
{
    rr_gemm<P>(a, d, w, lane, [&](int m, int n) {
        // the epilogue's conversion of this finished tile, ahead of the next tile's mma
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&d[m][n][r]));
            x[m][r][n][0] = f.x;
            x[m][r][n][1] = f.y;
        }
    });
}
#endif

// the accumulators (f16x2) of a phase as f32, x[m][r][n][e]: row 16m + g + 8r, column
// 8n + 2t + e
template <int MT, int NT>
__device__ __forceinline__ void rr_unpack(const uint32_t (&d)[MT][NT][2], float (&x)[MT][2][NT][2])
{
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int n = 0; n < NT; ++n)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&d[m][n][r]));
                x[m][r][n][0] = f.x;
                x[m][r][n][1] = f.y;
            }
}

// f32 results of phase P to the A fragments of phase P + 1 (see the header comment)
template <int P>
__device__ __forceinline__ void rr_requant(const float (&x)[kPh[P].mt][2][kPh[P].nt][2],
                                           uint32_t (&a)[kPh[P + 1].mt][kPh[P + 1].ks][4])
{
    static_assert(kPh[P].nt == 4 * kPh[P + 1].ks && kPh[P].mt == kPh[P + 1].mt, "chaining");
#pragma unroll
    for (int m = 0; m < kPh[P].mt; ++m)
#pragma unroll
        for (int ks = 0; ks < kPh[P + 1].ks; ++ks)
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const int r = j & 1, n0 = 4 * ks + 2 * (j >> 1);
                a[m][ks][j] = rr_e4m3x2(x[m][r][n0][0], x[m][r][n0][1]) |
                              (rr_e4m3x2(x[m][r][n0 + 1][0], x[m][r][n0 + 1][1]) << 16);
            }
}

__device__ __forceinline__ float rr_quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    return v;
}

__device__ __forceinline__ float rr_quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
    return v;
}

// residual add + two-pass layer norm over each 64-column row
template <int MT, int NT>
__device__ __forceinline__ void rr_residual_norm(float (&x)[MT][2][NT][2], const __half* res,
                                                 const float* ln, float eps, int g, int t)
{
    constexpr int N = 8 * NT;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            const __half2* row = reinterpret_cast<const __half2*>(res + (16 * m + g + 8 * r) * N);
            float s = 0.0f;
#pragma unroll
            for (int n = 0; n < NT; ++n) {
                const float2 h = __half22float2(__ldg(row + 4 * n + t));
                x[m][r][n][0] += h.x;
                x[m][r][n][1] += h.y;
                s += x[m][r][n][0] + x[m][r][n][1];
            }
            const float mean = rr_quad_sum(s) * (1.0f / N);
            float q = 0.0f;
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float d = x[m][r][n][e] - mean;
                    q += d * d;
                }
            const float rstd = rsqrtf(rr_quad_sum(q) * (1.0f / N) + eps);
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int c = 8 * n + 2 * t + e;
                    x[m][r][n][e] = (x[m][r][n][e] - mean) * rstd * __ldg(ln + c) + __ldg(ln + N + c);
                }
        }
}

template <int MT, int NT>
__device__ __forceinline__ void rr_gelu_tanh(float (&x)[MT][2][NT][2])
{
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float v = x[m][r][n][e];
                    x[m][r][n][e] =
                        0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
                }
}

// row softmax over 8 * NT columns, scaled by 64 for the e4m3 requantisation
template <int MT, int NT>
__device__ __forceinline__ void rr_softmax(float (&x)[MT][2][NT][2])
{
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float mx = x[m][r][0][0];
#pragma unroll
            for (int n = 0; n < NT; ++n) mx = fmaxf(mx, fmaxf(x[m][r][n][0], x[m][r][n][1]));
            mx = rr_quad_max(mx);
            float s = 0.0f;
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    x[m][r][n][e] = expf(x[m][r][n][e] - mx);
                    s += x[m][r][n][e];
                }
            s = rr_quad_sum(s);
#pragma unroll
            for (int n = 0; n < NT; ++n)
#pragma unroll
                for (int e = 0; e < 2; ++e) x[m][r][n][e] = 64.0f * x[m][r][n][e] / s;
        }
}

// a phase and its accumulators as f32: all tiles after the last mma, or (RRLAYER_CVT_EARLY)
// each tile right after its own last mma
#ifdef RRLAYER_CVT_EARLY
#define RR_GEMM_F32(P, a, d, x) rr_gemm_cvt<P>(a, d, x, w, lane)
#else
#define RR_GEMM_F32(P, a, d, x) rr_gemm<P>(a, d, w, lane); rr_unpack(d, x)
#endif

extern "C" __global__ void __launch_bounds__(32) RRLAYER_NAME(const RrLayerArgs p)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int blk = blockIdx.x;
    const uint8_t* __restrict__ w = p.weights;
    const __half* res = p.residual + blk * 32 * 64;

    // prologue: phase 1's A fragments, row-major e4m3 (row 16m + g + 8(j&1), k 32ks + 4t +
    // 16(j>>1))
    uint32_t a1[2][2][4];
    const uint8_t* act = p.act + blk * 32 * 64;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
#pragma unroll
            for (int j = 0; j < 4; ++j)
                a1[m][ks][j] = __ldg(reinterpret_cast<const unsigned int*>(
                    act + (16 * m + g + 8 * (j & 1)) * 64 + 32 * ks + 4 * t + 16 * (j >> 1)));

    // the layer: four phases and the three epilogues between them
    uint32_t d1[2][8][2];
    float x1[2][2][8][2];
    RR_GEMM_F32(0, a1, d1, x1);
    rr_residual_norm<2, 8>(x1, res, p.ln, p.eps, g, t);
    uint32_t a2[2][2][4];
    rr_requant<0>(x1, a2);

    uint32_t d2[2][8][2];
    float x2[2][2][8][2];
    RR_GEMM_F32(1, a2, d2, x2);
    rr_gelu_tanh<2, 8>(x2);
    uint32_t a3[2][2][4];
    rr_requant<1>(x2, a3);

    uint32_t d3[2][4][2];
    float x3[2][2][4][2];
    RR_GEMM_F32(2, a3, d3, x3);
    rr_softmax<2, 4>(x3);
    uint32_t a4[2][1][4];
    rr_requant<2>(x3, a4);

    uint32_t d4[2][4][2];
    rr_gemm<3>(a4, d4, w, lane);

    // after the layer: phase 4's D (f16x2), optionally negated
    const uint32_t flip = (p.flags & 1) ? 0x80008000u : 0u;
    uint32_t* o = p.out + (blk * 32 + lane) * 16;
#pragma unroll
    for (int m = 0; m < 2; ++m)
#pragma unroll
        for (int n = 0; n < 4; ++n)
#pragma unroll
            for (int r = 0; r < 2; ++r) o[(m * 4 + n) * 2 + r] = d4[m][n][r] ^ flip;
}
