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

// GROUPS (default 16) is how many groups of eight instantiations the module holds; past
// 16 the list repeats with fresh VARIANT numbers. The default gives the ~216k-line scale
// module; -DGROUPS=37 the ~500k-line module of the liveness benchmark.
#ifndef GROUPS
#define GROUPS 16
#endif
#if GROUPS > 0
INST8(4, 4, 8, 0)
#endif
#if GROUPS > 1
INST8(4, 8, 8, 8)
#endif
#if GROUPS > 2
INST8(8, 4, 8, 16)
#endif
#if GROUPS > 3
INST8(8, 8, 4, 24)
#endif
#if GROUPS > 4
INST8(8, 8, 8, 32)
#endif
#if GROUPS > 5
INST8(4, 4, 16, 40)
#endif
#if GROUPS > 6
INST8(2, 8, 16, 48)
#endif
#if GROUPS > 7
INST8(8, 2, 16, 56)
#endif
#if GROUPS > 8
INST8(4, 8, 16, 64)
#endif
#if GROUPS > 9
INST8(8, 4, 16, 72)
#endif
#if GROUPS > 10
INST8(6, 6, 8, 80)
#endif
#if GROUPS > 11
INST8(4, 6, 12, 88)
#endif
#if GROUPS > 12
INST8(6, 4, 12, 96)
#endif
#if GROUPS > 13
INST8(8, 6, 8, 104)
#endif
#if GROUPS > 14
INST8(6, 8, 8, 112)
#endif
#if GROUPS > 15
INST8(4, 4, 32, 120)
#endif
#if GROUPS > 16
INST8(4, 4, 8, 128)
#endif
#if GROUPS > 17
INST8(4, 8, 8, 136)
#endif
#if GROUPS > 18
INST8(8, 4, 8, 144)
#endif
#if GROUPS > 19
INST8(8, 8, 4, 152)
#endif
#if GROUPS > 20
INST8(8, 8, 8, 160)
#endif
#if GROUPS > 21
INST8(4, 4, 16, 168)
#endif
#if GROUPS > 22
INST8(2, 8, 16, 176)
#endif
#if GROUPS > 23
INST8(8, 2, 16, 184)
#endif
#if GROUPS > 24
INST8(4, 8, 16, 192)
#endif
#if GROUPS > 25
INST8(8, 4, 16, 200)
#endif
#if GROUPS > 26
INST8(6, 6, 8, 208)
#endif
#if GROUPS > 27
INST8(4, 6, 12, 216)
#endif
#if GROUPS > 28
INST8(6, 4, 12, 224)
#endif
#if GROUPS > 29
INST8(8, 6, 8, 232)
#endif
#if GROUPS > 30
INST8(6, 8, 8, 240)
#endif
#if GROUPS > 31
INST8(4, 4, 32, 248)
#endif
#if GROUPS > 32
INST8(4, 4, 8, 256)
#endif
#if GROUPS > 33
INST8(4, 8, 8, 264)
#endif
#if GROUPS > 34
INST8(8, 4, 8, 272)
#endif
#if GROUPS > 35
INST8(8, 8, 4, 280)
#endif
#if GROUPS > 36
INST8(8, 8, 8, 288)
#endif
#if GROUPS > 37
INST8(4, 4, 16, 296)
#endif
#if GROUPS > 38
INST8(2, 8, 16, 304)
#endif
#if GROUPS > 39
INST8(8, 2, 16, 312)
#endif
#if GROUPS > 40
INST8(4, 8, 16, 320)
#endif
#if GROUPS > 41
INST8(8, 4, 16, 328)
#endif
#if GROUPS > 42
INST8(6, 6, 8, 336)
#endif
#if GROUPS > 43
INST8(4, 6, 12, 344)
#endif
#if GROUPS > 44
INST8(6, 4, 12, 352)
#endif
#if GROUPS > 45
INST8(8, 6, 8, 360)
#endif
#if GROUPS > 46
INST8(6, 8, 8, 368)
#endif
#if GROUPS > 47
INST8(4, 4, 32, 376)
#endif
#if GROUPS > 48
INST8(4, 4, 8, 384)
#endif
#if GROUPS > 49
INST8(4, 8, 8, 392)
#endif
#if GROUPS > 50
INST8(8, 4, 8, 400)
#endif
#if GROUPS > 51
INST8(8, 8, 4, 408)
#endif
#if GROUPS > 52
INST8(8, 8, 8, 416)
#endif
#if GROUPS > 53
INST8(4, 4, 16, 424)
#endif
#if GROUPS > 54
INST8(2, 8, 16, 432)
#endif
#if GROUPS > 55
INST8(8, 2, 16, 440)
#endif
#if GROUPS > 56
INST8(4, 8, 16, 448)
#endif
#if GROUPS > 57
INST8(8, 4, 16, 456)
#endif
#if GROUPS > 58
INST8(6, 6, 8, 464)
#endif
#if GROUPS > 59
INST8(4, 6, 12, 472)
#endif
#if GROUPS > 60
INST8(6, 4, 12, 480)
#endif
#if GROUPS > 61
INST8(8, 6, 8, 488)
#endif
#if GROUPS > 62
INST8(6, 8, 8, 496)
#endif
#if GROUPS > 63
INST8(4, 4, 32, 504)
#endif
