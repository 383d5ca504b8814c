// Triton-style fp8 matmul: the tiles of A and B are staged through dynamic shared memory
// (`extern __shared__`, so the PTX declares `.extern .shared .align 16 .b8 frag_smem[]`),
// a bar.sync orders the copy, then A fragments come from ldmatrix.x4 and B fragments from
// ld.shared, software-pipelined: the next k-slice's fragments are loaded before the current
// k-slice's mma.  n-tile outer, m-tile, k-slice inner; ldmatrix is volatile, so every A
// fragment is loaded again for every n-tile (same shared address, new register).
// A 32x32x64 dense GEMM with -DMT=2 -DNT=4 -DKS=2.  Launch: one warp, dynamic shared
// memory RR_M*RR_K + RR_N*RR_K bytes (A tile at 0, B tile at RR_M*RR_K).
//
// Shared layout: A row-major (A[r][k] at r*K + k), B as N x K (B[k][n] at RR_M*K + n*K + k).
// ldmatrix.x4 .b16 fragment of (mt, ks): lane L gives the row address of matrix L >> 3,
// row L & 7: A row 16*mt + (L & 7) + 8*((L >> 3) & 1), column 32*ks + 16*(L >> 4); matrix q
// lands in register q, which is the m16n8k32 A placement (register j: row g + 8*(j & 1),
// bytes 4t..4t+3 of column block 16*(j >> 1)).
#include "frag_common.cuh"

extern __shared__ __align__(16) uint8_t frag_smem[];

__device__ __forceinline__ void rr_ldmatrix_a(uint32_t (&a)[4], int mt, int ks, int lane)
{
    const int row = 16 * mt + (lane & 7) + 8 * ((lane >> 3) & 1);
    const int col = 32 * ks + 16 * (lane >> 4);
    const uint32_t addr =
        static_cast<uint32_t>(__cvta_generic_to_shared(frag_smem + row * RR_K + col));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(addr));
}

__device__ __forceinline__ void rr_lds_b(uint32_t (&b)[2], int ks, int nt, int g, int t)
{
#pragma unroll
    for (int j = 0; j < 2; ++j)
        b[j] = rr_ld32(frag_smem + RR_M * RR_K + (8 * nt + g) * RR_K + 32 * ks + 4 * t + 16 * j);
}

extern "C" __global__ void __launch_bounds__(32)
frag_triton(const uint8_t* __restrict__ A, const uint8_t* __restrict__ B,
            const __half* __restrict__ bias, uint32_t* __restrict__ out)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    // stage A and B (16 bytes per lane per step)
#pragma unroll
    for (int i = lane * 16; i < RR_M * RR_K; i += 32 * 16)
        *reinterpret_cast<uint4*>(frag_smem + i) = *reinterpret_cast<const uint4*>(A + i);
#pragma unroll
    for (int i = lane * 16; i < RR_N * RR_K; i += 32 * 16)
        *reinterpret_cast<uint4*>(frag_smem + RR_M * RR_K + i) =
            *reinterpret_cast<const uint4*>(B + i);
    __syncthreads();
    uint32_t d[MT][NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        const uint32_t c = rr_bias(bias, nt, t);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            d[mt][nt][0] = c;
            d[mt][nt][1] = c;
            uint32_t a_cur[4], b_cur[2];
            rr_ldmatrix_a(a_cur, mt, 0, lane);
            rr_lds_b(b_cur, 0, nt, g, t);
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                uint32_t a_nxt[4], b_nxt[2];
                if (ks + 1 < KS) {          // prefetch the next k-slice
                    rr_ldmatrix_a(a_nxt, mt, ks + 1, lane);
                    rr_lds_b(b_nxt, ks + 1, nt, g, t);
                }
                rr_mma<false>(d[mt][nt][0], d[mt][nt][1], a_cur, b_cur, d[mt][nt][0],
                              d[mt][nt][1]);
                if (ks + 1 < KS) {
#pragma unroll
                    for (int j = 0; j < 4; ++j) a_cur[j] = a_nxt[j];
                    b_cur[0] = b_nxt[0];
                    b_cur[1] = b_nxt[1];
                }
            }
        }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
            rr_store_d(out, mt, nt, g, t, d[mt][nt][0], d[mt][nt][1]);
}
