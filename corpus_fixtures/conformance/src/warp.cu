// Warp-level primitives written the way CUB and CUTLASS write them: inline PTX with
// block-scoped registers declared without '%', predicate-pair destinations (`r|p`),
// sink destinations (`_|p`), plus the intrinsics that lower to vote, match and redux.
#include <cstdint>

// CUB's ShuffleUp-with-predicate scan step: the predicate half of `shfl ... r|p` guards
// the add, both live only inside the asm's own scope.
__device__ __forceinline__ unsigned scan_step_up(unsigned x, int offset) {
  unsigned r;
  asm volatile(
      "{\n\t"
      ".reg .u32 r0;\n\t"
      ".reg .pred p;\n\t"
      "shfl.sync.up.b32 r0|p, %1, %2, %3, %4;\n\t"
      "@p add.u32 r0, r0, %1;\n\t"
      "mov.u32 %0, r0;\n\t"
      "}"
      : "=r"(r)
      : "r"(x), "r"(offset), "r"(0), "r"(0xffffffffu));
  return r;
}

__device__ __forceinline__ float scan_step_down_f32(float x, int offset, int last) {
  float r;
  asm volatile(
      "{\n\t"
      ".reg .f32 r0;\n\t"
      ".reg .pred p;\n\t"
      "shfl.sync.down.b32 r0|p, %1, %2, %3, %4;\n\t"
      "@p add.f32 r0, r0, %1;\n\t"
      "mov.f32 %0, r0;\n\t"
      "}"
      : "=f"(r)
      : "f"(x), "r"(offset), "r"(last), "r"(0xffffffffu));
  return r;
}

// 64-bit shuffle as two 32-bit halves unpacked into block-scoped registers.
__device__ __forceinline__ unsigned long long shfl_idx_u64(unsigned long long v, int src) {
  unsigned long long r;
  asm volatile(
      "{\n\t"
      ".reg .b32 lo, hi;\n\t"
      "mov.b64 {lo, hi}, %1;\n\t"
      "shfl.sync.idx.b32 lo, lo, %2, 31, -1;\n\t"
      "shfl.sync.idx.b32 hi, hi, %2, 31, -1;\n\t"
      "mov.b64 %0, {lo, hi};\n\t"
      "}"
      : "=l"(r)
      : "l"(v), "r"(src));
  return r;
}

// CUTLASS's elect_one_sync: the leader lane, with the lane id sunk.
__device__ __forceinline__ bool elect_one() {
#if __CUDA_ARCH__ >= 900
  uint32_t pred = 0;
  asm volatile(
      "{\n\t"
      ".reg .pred P;\n\t"
      "elect.sync _|P, %1;\n\t"
      "selp.b32 %0, 1, 0, P;\n\t"
      "}"
      : "=r"(pred)
      : "r"(0xffffffffu));
  return pred != 0;
#else
  return (threadIdx.x & 31) == 0;
#endif
}

__device__ __forceinline__ unsigned elect_lane() {
#if __CUDA_ARCH__ >= 900
  unsigned lane;
  asm volatile(
      "{\n\t"
      ".reg .pred %%px;\n\t"
      "elect.sync %0|%%px, %1;\n\t"
      "}"
      : "=r"(lane)
      : "r"(0xffffffffu));
  return lane;
#else
  return 0;
#endif
}

__device__ __forceinline__ unsigned lane_id() {
  unsigned r;
  asm("mov.u32 %0, %%laneid;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned r;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r));
  return r;
}

// prmt/bfe/bfi/lop3 the way CUB's bit helpers write them
__device__ __forceinline__ unsigned bfe(unsigned x, unsigned pos, unsigned len) {
  unsigned r;
  asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(pos), "r"(len));
  return r;
}

__device__ __forceinline__ unsigned lop3_xor3(unsigned a, unsigned b, unsigned c) {
  unsigned r;
  asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
}

__device__ __forceinline__ unsigned prmt(unsigned a, unsigned b, unsigned sel) {
  unsigned r;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(sel));
  return r;
}

__global__ void warp_inclusive_scan(const unsigned* in, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = i < n ? in[i] : 0;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) x = scan_step_up(x, off);
  if (i < n) out[i] = x;
}

__global__ void warp_reduce_f32(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float x = i < n ? in[i] : 0.f;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) x = scan_step_down_f32(x, off, 31);
  if (elect_one()) atomicAdd(out, x);
}

__global__ void warp_vote_match(const int* keys, unsigned* ballots, unsigned* matches,
                                unsigned long long* wide, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int k = i < n ? keys[i] : -1;
  unsigned m = __activemask();
  unsigned b = __ballot_sync(m, k > 0);
  int all = __all_sync(m, k != 0);
  int any = __any_sync(m, k < 0);
  unsigned same = __match_any_sync(m, k);
  int pred;
  unsigned whole = __match_all_sync(m, k, &pred);
  unsigned uni = __uni_sync(m, k & 1);
  __syncwarp(m);
  unsigned long long w = shfl_idx_u64((unsigned long long)k << 32 | b, lane_id() ^ 1);
  if (i < n) {
    ballots[i] = b ^ (all << 1) ^ (any << 2) ^ (uni << 3) ^ lanemask_lt();
    matches[i] = same ^ whole ^ pred ^ elect_lane();
    wide[i] = w + bfe(b, 3, 5) + lop3_xor3(b, same, whole) + prmt(b, same, 0x3210);
  }
}

__global__ void warp_redux(const unsigned* in, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = i < n ? in[i] : 0;
#if __CUDA_ARCH__ >= 800
  unsigned s = __reduce_add_sync(0xffffffffu, x);
  unsigned mn = __reduce_min_sync(0xffffffffu, x);
  unsigned mx = __reduce_max_sync(0xffffffffu, x);
  unsigned a = __reduce_and_sync(0xffffffffu, x);
  unsigned o = __reduce_or_sync(0xffffffffu, x);
  unsigned xo = __reduce_xor_sync(0xffffffffu, x);
  int si = __reduce_min_sync(0xffffffffu, (int)x - 7);
#else
  unsigned s = x, mn = x, mx = x, a = x, o = x, xo = x;
  int si = 0;
#endif
  if (i < n) out[i] = s + mn * 3 + mx * 5 + a * 7 + o * 11 + xo * 13 + si;
}
