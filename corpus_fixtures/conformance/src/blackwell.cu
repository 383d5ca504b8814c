// sm_100a tensor memory (tcgen05) as CUTLASS's SM100 kernels drive it: allocate tensor
// memory, issue an MMA from shared-memory descriptors, commit it to an mbarrier, load the
// accumulator back to registers, release the allocation.
#include <cstdint>

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint64_t make_desc(const void* smem) {
  uint64_t addr = (smem_u32(smem) & 0x3FFFF) >> 4;
  return addr | (uint64_t(1) << 16) | (uint64_t(64) << 32) | (uint64_t(1) << 46);
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  asm volatile(
      "{\n\t"
      ".reg .pred                P1;\n\t"
      "LAB_WAIT:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n\t"
      "@P1                       bra DONE;\n\t"
      "bra                   LAB_WAIT;\n\t"
      "DONE:\n\t"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(phase));
}

__global__ void __launch_bounds__(128, 1)
tmem_gemm(const uint16_t* A, const uint16_t* B, float* out, uint32_t idesc) {
  __shared__ __align__(1024) uint16_t sA[128 * 64];
  __shared__ __align__(1024) uint16_t sB[64 * 64];
  __shared__ uint32_t tmem_base;
  __shared__ uint64_t mma_bar;
  int t = threadIdx.x;
  for (int i = t; i < 128 * 64; i += 128) sA[i] = A[i];
  for (int i = t; i < 64 * 64; i += 128) sB[i] = B[i];
  if (t < 32) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], 64;\n" ::"r"(
        smem_u32(&tmem_base)));
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n" ::);
  }
  if (t == 0)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_u32(&mma_bar)));
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  asm volatile("tcgen05.fence::before_thread_sync;\n" ::: "memory");
  __syncthreads();
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
  uint32_t tmem = tmem_base;
  if (t == 0) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t accumulate = k > 0;
      asm volatile(
          "{\n\t"
          ".reg .pred p;\n\t"
          "setp.ne.b32 p, %4, 0;\n\t"
          "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t"
          "}\n" ::"r"(tmem),
          "l"(make_desc(sA + k * 16)), "l"(make_desc(sB + k * 16)), "r"(idesc),
          "r"(accumulate));
    }
    asm volatile(
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(
            smem_u32(&mma_bar)));
  }
  mbar_wait(&mma_bar, 0);
  asm volatile("tcgen05.fence::after_thread_sync;\n" ::: "memory");
  uint32_t r[4];
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(tmem + ((t / 32 * 32) << 16)));
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
  uint32_t v[2] = {r[0] ^ r[3], r[1] ^ r[2]};
  asm volatile("tcgen05.st.sync.aligned.32x32b.x2.b32 [%0], {%1, %2};\n" ::"r"(
                   tmem + 8 + ((t / 32 * 32) << 16)),
               "r"(v[0]), "r"(v[1]));
  asm volatile("tcgen05.wait::st.sync.aligned;\n" ::: "memory");
  for (int j = 0; j < 4; ++j) out[(blockIdx.x * 128 + t) * 4 + j] = __uint_as_float(r[j]);
  __syncthreads();
  if (t < 32)
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, 64;\n" ::"r"(tmem));
}
