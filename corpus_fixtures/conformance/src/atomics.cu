// Atomics and reductions of every width and scope, libcu++ atomic_ref orderings, memory
// fences, and cooperative groups (tiled partitions, reduce, grid-wide sync).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/atomic>
#include <cuda_fp16.h>
namespace cg = cooperative_groups;

__global__ void atomics(int* ip, unsigned* up, unsigned long long* lp, float* fp, double* dp,
                        __half2* hp, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int a = atomicAdd(ip, i);
  atomicSub(ip + 1, i);
  int b = atomicExch(ip + 2, a);
  atomicMin(ip + 3, i - 100);
  atomicMax(ip + 4, i);
  unsigned c = atomicInc(up, 1000u);
  atomicDec(up + 1, 1000u);
  unsigned d = atomicCAS(up + 2, c, c + 1);
  atomicAnd(up + 3, 0xf0f0u);
  atomicOr(up + 4, 1u << (i & 31));
  unsigned e = atomicXor(up + 5, d);
  unsigned long long f = atomicAdd(lp, 1ull);
  atomicMin(lp + 1, (unsigned long long)i);
  unsigned long long g = atomicCAS(lp + 2, f, f + 2);
  float h = atomicAdd(fp, 1.5f);
  atomicExch(fp + 1, h);
  double k = atomicAdd(dp, 0.25);
  __half2 m = atomicAdd(hp, __floats2half2_rn(1.f, 2.f));
  atomicAdd_block(ip + 5, 1);
  atomicAdd_system(ip + 6, 1);
  __threadfence();
  __threadfence_block();
  __threadfence_system();
  ip[8 + i] = a + b + (int)e + (int)g + (int)k + (int)__low2float(m);
}

__global__ void ordered_atomics(int* flag, int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  cuda::atomic_ref<int, cuda::thread_scope_device> f(*flag);
  cuda::atomic_ref<int, cuda::thread_scope_system> sys(data[0]);
  cuda::atomic_ref<int, cuda::thread_scope_block> blk(data[1]);
  if (i == 0) {
    data[2] = 42;
    f.store(1, cuda::memory_order_release);
  } else {
    while (f.load(cuda::memory_order_acquire) == 0) {
    }
  }
  sys.fetch_add(1, cuda::memory_order_relaxed);
  blk.fetch_max(i, cuda::memory_order_acq_rel);
  int expected = 0;
  f.compare_exchange_strong(expected, 2, cuda::memory_order_seq_cst);
  if (i < n) data[3 + i] = data[2] + expected;
}

__global__ void cooperative(const int* in, int* out, int* scratch, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
  int i = grid.thread_rank();
  int x = i < n ? in[i] : 0;
  int s = cg::reduce(warp, x, cg::plus<int>());
  int m = cg::reduce(eight, x, cg::greater<int>());
  int sh = eight.shfl_down(x, 1) + warp.shfl_xor(x, 4);
  cg::coalesced_group active = cg::coalesced_threads();
  int rank = active.thread_rank();
  if (warp.thread_rank() == 0) scratch[block.group_index().x * 32 + warp.meta_group_rank()] = s;
  grid.sync();
  block.sync();
  if (i < n) out[i] = s + m + sh + rank + scratch[(i + 1) % (gridDim.x * 32)];
}
