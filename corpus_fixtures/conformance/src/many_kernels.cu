// Scale: many kernels in one translation unit, the shape of a large library module. Each
// instantiation fully unrolls a register-blocked tile loop with a warp-shuffle epilogue in
// inline PTX (block-scoped registers, predicate pairs), so the module is big and real.
#include <cstdint>

__device__ __forceinline__ float shfl_add(float x, int offset) {
  float r;
  asm volatile(
      "{\n\t"
      ".reg .f32 r0;\n\t"
      ".reg .pred p;\n\t"
      "shfl.sync.down.b32 r0|p, %1, %2, 31, -1;\n\t"
      "@p add.f32 r0, r0, %1;\n\t"
      "mov.f32 %0, r0;\n\t"
      "}"
      : "=f"(r)
      : "f"(x), "r"(offset));
  return r;
}

template <int TM, int TN, int KU, int VARIANT>
__global__ void __launch_bounds__(128)
tile_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
            int lda, int ldb, int ldc, int k_tiles, float alpha) {
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;
  int row = blockIdx.y * TM * 16 + threadIdx.y;
  int col = blockIdx.x * TN * 8 + threadIdx.x;
  for (int kt = 0; kt < k_tiles; ++kt) {
#pragma unroll
    for (int k = 0; k < KU; ++k) {
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = __ldg(&A[(row + i * 16) * lda + kt * KU + k]);
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = __ldg(&B[(kt * KU + k) * ldb + col + j * 8]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          if (VARIANT % 3 == 0) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
          else if (VARIANT % 3 == 1) acc[i][j] += fmaxf(a[i] * b[j], 0.f);
          else acc[i][j] = fmaf(a[i] + VARIANT, b[j], acc[i][j] * 0.999f);
        }
    }
  }
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      float v = alpha * acc[i][j];
      if (VARIANT & 4) v = shfl_add(v, 1 + (j & 3));
      C[(row + i * 16) * ldc + col + j * 8] = v;
    }
}

#define INST(TM, TN, KU, V)                                                                   \
  template __global__ void tile_kernel<TM, TN, KU, V>(const float*, const float*, float*, int, \
                                                      int, int, int, float);
#define INST8(TM, TN, KU, V0) \
  INST(TM, TN, KU, V0) INST(TM, TN, KU, V0 + 1) INST(TM, TN, KU, V0 + 2) INST(TM, TN, KU, V0 + 3) \
  INST(TM, TN, KU, V0 + 4) INST(TM, TN, KU, V0 + 5) INST(TM, TN, KU, V0 + 6) INST(TM, TN, KU, V0 + 7)

INST8(4, 4, 8, 0)
INST8(4, 8, 8, 8)
INST8(8, 4, 8, 16)
INST8(8, 8, 4, 24)
INST8(8, 8, 8, 32)
INST8(4, 4, 16, 40)
INST8(2, 8, 16, 48)
INST8(8, 2, 16, 56)
INST8(4, 8, 16, 64)
INST8(8, 4, 16, 72)
INST8(6, 6, 8, 80)
INST8(4, 6, 12, 88)
INST8(6, 4, 12, 96)
INST8(8, 6, 8, 104)
INST8(6, 8, 8, 112)
INST8(4, 4, 32, 120)
