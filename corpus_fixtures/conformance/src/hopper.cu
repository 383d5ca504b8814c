// sm_90a the way CUTLASS 3 writes it: a TMA load into shared memory completed through an
// mbarrier transaction count, a wgmma over shared-memory descriptors, a TMA store, cluster
// barriers and distributed shared memory, warp-specialised register reallocation.
#include <cstdint>
#include <cuda.h>

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)),
               "r"(bytes));
}

__device__ __forceinline__ uint64_t mbar_arrive(uint64_t* bar) {
  uint64_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n"
               : "=l"(state)
               : "r"(smem_u32(bar)));
  return state;
}

// CUTLASS ClusterBarrier::wait: a retry loop with labels inside the asm's own scope (the
// same labels appear once per inlined copy, each in its own block)
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t phase) {
  asm volatile(
      "{\n\t"
      ".reg .pred                P1;\n\t"
      "LAB_WAIT:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1, %2;\n\t"
      "@P1                       bra DONE;\n\t"
      "bra                   LAB_WAIT;\n\t"
      "DONE:\n\t"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(phase), "r"(0x989680));
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];\n" ::"r"(smem_u32(dst)),
      "l"(map), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c0,
                                             int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::
                   "l"(map),
               "r"(smem_u32(src)), "r"(c0), "r"(c1)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}

__device__ __forceinline__ void prefetch_tma(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

__device__ __forceinline__ uint64_t make_desc(const void* smem) {
  uint64_t addr = (smem_u32(smem) & 0x3FFFF) >> 4;
  return addr | (uint64_t(1) << 16) | (uint64_t(64) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_m64n8k16(float (&d)[4], uint64_t da, uint64_t db,
                                               int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %6, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
      "{%0, %1, %2, %3},"
      " %4,"
      " %5,"
      " p, %7, %8, %9, %10;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "l"(da), "l"(db), "r"(scale_d), "n"(1), "n"(1), "n"(0), "n"(0));
}

__device__ __forceinline__ void warpgroup_arrive() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void warpgroup_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void warpgroup_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void fence_view_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r) :);
  return r;
}

__device__ __forceinline__ uint32_t map_to_peer(const void* smem, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem_u32(smem)), "r"(rank));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" : :);
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" : :);
}

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256, 1)
hopper_gemm(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
            const __grid_constant__ CUtensorMap tmC, float* out, int k_tiles) {
  __shared__ __align__(1024) uint16_t sA[64 * 64];
  __shared__ __align__(1024) uint16_t sB[8 * 64];
  __shared__ __align__(128) float sC[64 * 8];
  __shared__ uint64_t full_bar, empty_bar;
  __shared__ uint32_t peer_word;

  int warp = threadIdx.x / 32;
  if (threadIdx.x == 0) {
    prefetch_tma(&tmA);
    prefetch_tma(&tmB);
    mbar_init(&full_bar, 1);
    mbar_init(&empty_bar, 128);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync();

  if (warp >= 4) {  // producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" : :);
    for (int kt = 0; kt < k_tiles; ++kt) {
      if (threadIdx.x == 128) {
        mbar_expect_tx(&full_bar, sizeof(sA) + sizeof(sB));
        tma_load_2d(sA, &tmA, &full_bar, kt * 64, blockIdx.y * 64);
        tma_load_2d(sB, &tmB, &full_bar, kt * 64, blockIdx.x * 8);
      }
      mbar_wait(&empty_bar, kt & 1);
    }
  } else {  // consumer warpgroup
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" : :);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int kt = 0; kt < k_tiles; ++kt) {
      mbar_wait(&full_bar, kt & 1);
      warpgroup_arrive();
#pragma unroll
      for (int k = 0; k < 4; ++k)
        wgmma_m64n8k16(acc, make_desc(sA + k * 16), make_desc(sB + k * 16), kt > 0 || k > 0);
      warpgroup_commit();
      warpgroup_wait<0>();
      mbar_arrive(&empty_bar);
    }
    sC[threadIdx.x * 4 + 0] = acc[0];
    sC[threadIdx.x * 4 + 1] = acc[1];
    sC[threadIdx.x * 4 + 2] = acc[2];
    sC[threadIdx.x * 4 + 3] = acc[3];
    fence_view_async_shared();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_store_2d(&tmC, sC, blockIdx.x * 8, blockIdx.y * 64);
    uint32_t remote = map_to_peer(&peer_word, cluster_ctarank() ^ 1);
    asm volatile("st.shared::cluster.u32 [%0], %1;\n" ::"r"(remote), "r"(k_tiles));
  }
  cluster_sync();
  out[blockIdx.x] = float(peer_word);
}
