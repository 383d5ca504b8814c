// Ampere/Hopper tensor-core data movement the CUTLASS way: cp.async into shared memory,
// ldmatrix into fragments, mma.sync, stmatrix back (sm_90), all as inline PTX.
#include <cstdint>
#include <cuda_fp16.h>

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, bool pred) {
  uint32_t s = smem_u32(smem);
  int src_size = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem),
               "r"(src_size));
}

__device__ __forceinline__ void cp_async_4_ca(void* smem, const void* gmem) {
  asm volatile("cp.async.ca.shared.global.L2::128B [%0], [%1], 4;\n" ::"r"(smem_u32(smem)),
               "l"(gmem));
}

__device__ __forceinline__ void cp_async_fence() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(smem)));
}

__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], const void* smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_u32(smem)));
}

__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,  %1,  %2,  %3},"
      "{%4,  %5,  %6,  %7},"
      "{%8,  %9},"
      "{%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
        "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

__device__ __forceinline__ void stmatrix_x4(void* smem, const uint32_t (&r)[4]) {
#if __CUDA_ARCH__ >= 900
  asm volatile("stmatrix.sync.aligned.x4.m8n8.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                   smem_u32(smem)),
               "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]));
#else
  uint32_t* p = static_cast<uint32_t*>(smem) + (threadIdx.x & 31) * 4;
  p[0] = r[0]; p[1] = r[1]; p[2] = r[2]; p[3] = r[3];
#endif
}

// packed conversions with a block-scoped half pair, as cutlass::NumericConverter does
__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("{\n\t.reg .f16 low, high;\n\t"
      "cvt.rn.f16.f32 low, %1;\n\t"
      "cvt.rn.f16.f32 high, %2;\n\t"
      "mov.b32 %0, {low, high};\n\t}"
      : "=r"(r)
      : "f"(lo), "f"(hi));
  return r;
}

__global__ void __launch_bounds__(128, 2)
gemm_tile(const half* A, const half* B, float* C, const float* bias, int k_tiles) {
  __shared__ __align__(128) half sA[2][16 * 64];
  __shared__ __align__(128) half sB[2][8 * 64];
  __shared__ __align__(16) float sBias[8];
  int t = threadIdx.x;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  if (t < 8) cp_async_4_ca(&sBias[t], &bias[t]);
  for (int kt = 0; kt < k_tiles; ++kt) {
    int stage = kt & 1;
    cp_async_16(&sA[stage][t * 8], &A[(kt * 128 + t) * 8], t < 128);
    if (t < 64) cp_async_16(&sB[stage][t * 8], &B[(kt * 64 + t) * 8], true);
    cp_async_fence();
    cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t a[4], b[2];
      ldmatrix_x4(a, &sA[stage][(t & 15) * 64 + kk * 16]);
      ldmatrix_x2_trans(b, &sB[stage][(t & 7) * 64 + kk * 16]);
      mma_16816(acc, a, b, acc);
    }
    __syncthreads();
  }
  uint32_t packed[4];
  packed[0] = pack_f16x2(acc[0] + sBias[t & 7], acc[1]);
  packed[1] = pack_f16x2(acc[2], acc[3]);
  packed[2] = packed[0] ^ packed[1];
  packed[3] = packed[0] + packed[1];
  stmatrix_x4(&sA[0][0], packed);
  __syncthreads();
  C[blockIdx.x * 128 + t] = __half2float(sA[0][t]) + acc[0];
}
