// Shared pieces of the fragment-identity fixtures (frag_*.cu).
//
// Every kernel multiplies fp8 (e4m3) A (M x K) by B (K x N) with
// mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16, one warp, accumulating in
// f16 from a bias seed.  The matrices are stored the way a row-major framework keeps
// them, and each lane computes its own addresses from the PTX ISA's fragment
// placement (PTX ISA 9.7.14.5.10, "Matrix Fragments for mma.m16n8k32"), with
// g = lane >> 2 and t = lane % 4:
//
//   A  row-major M x K bytes:  A[r][k] at r*K + k.
//      register j of the (m-tile mt, k-slice ks) fragment: 4 bytes at
//      row 16*mt + g + 8*(j & 1), column 32*ks + 4*t + 16*(j >> 1)
//   B  stored N x K (k contiguous, the .col operand): B[k][n] at n*K + k.
//      register j of the (ks, n-tile nt) fragment: 4 bytes at
//      n = 8*nt + g, k = 32*ks + 4*t + 16*j
//   C  bias seed: half bias[N]; both C registers of the (mt, nt) chain hold the f16x2
//      pair bias[8*nt + 2*t], bias[8*nt + 2*t + 1] (rows g and g + 8 share it)
//   D  stored as uint32 out[M][N/2]: register 0 at row 16*mt + g, register 1 at row
//      16*mt + g + 8, column pair 4*nt + t
//
// scripts/make_frag_fixtures.py compiles each kernel with -DMT/-DNT/-DKS (the tile
// counts) and writes the ground truth (<stem>.truth.json) from the same table.
#pragma once

#include <cstdint>
#include <cuda_fp16.h>

#ifndef MT
#error "MT (m-tiles) must be defined"
#endif
#ifndef NT
#error "NT (n-tiles) must be defined"
#endif
#ifndef KS
#error "KS (k-slices) must be defined"
#endif

constexpr int RR_M = 16 * MT;
constexpr int RR_N = 8 * NT;
constexpr int RR_K = 32 * KS;

__device__ __forceinline__ uint32_t rr_ld32(const uint8_t* p)
{
    return *reinterpret_cast<const uint32_t*>(p);
}

// One mma. With CLOBBER the asm also clobbers memory, so nvcc must reload every value it
// reads from memory after it: the "same address, new register" shape.
template <bool CLOBBER>
__device__ __forceinline__ void rr_mma(uint32_t& d0, uint32_t& d1, const uint32_t (&a)[4],
                                       const uint32_t (&b)[2], uint32_t c0, uint32_t c1)
{
    if constexpr (CLOBBER) {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16\n"
                     "\t{%0, %1},\n\t{%2, %3, %4, %5},\n\t{%6, %7},\n\t{%8, %9};"
                     : "=r"(d0), "=r"(d1)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                       "r"(c0), "r"(c1)
                     : "memory");
    } else {
        asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16\n"
                     "\t{%0, %1},\n\t{%2, %3, %4, %5},\n\t{%6, %7},\n\t{%8, %9};"
                     : "=r"(d0), "=r"(d1)
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                       "r"(c0), "r"(c1));
    }
}

__device__ __forceinline__ void rr_load_a(uint32_t (&a)[4], const uint8_t* A, int mt, int ks,
                                          int g, int t)
{
#pragma unroll
    for (int j = 0; j < 4; ++j)
        a[j] = rr_ld32(A + (16 * mt + g + 8 * (j & 1)) * RR_K + 32 * ks + 4 * t + 16 * (j >> 1));
}

__device__ __forceinline__ void rr_load_b(uint32_t (&b)[2], const uint8_t* B, int ks, int nt,
                                          int g, int t)
{
#pragma unroll
    for (int j = 0; j < 2; ++j)
        b[j] = rr_ld32(B + (8 * nt + g) * RR_K + 32 * ks + 4 * t + 16 * j);
}

__device__ __forceinline__ uint32_t rr_bias(const __half* bias, int nt, int t)
{
    return rr_ld32(reinterpret_cast<const uint8_t*>(bias + 8 * nt + 2 * t));
}

__device__ __forceinline__ void rr_store_d(uint32_t* out, int mt, int nt, int g, int t,
                                           uint32_t d0, uint32_t d1)
{
    out[(16 * mt + g) * (RR_N / 2) + 4 * nt + t] = d0;
    out[(16 * mt + g + 8) * (RR_N / 2) + 4 * nt + t] = d1;
}
