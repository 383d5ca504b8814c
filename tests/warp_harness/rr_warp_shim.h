/* rr_warp_shim.h -- compiles a generated CUDA or HIP device body as host C++ so that the
 * warp harness (tests/warp_harness) can run it: each thread of the block is a host thread,
 * warp and block barriers are real barriers, lane exchanges (ds_bpermute) and the warp's
 * mma go through a per-warp exchange array, and .shared window addresses are host
 * addresses inside the harness's shared arena (mapped below 4 GiB).
 *
 * Force-included (`g++ -include rr_warp_shim.h`) into the body's translation unit, before
 * the body's own headers. -DRR_SHIM_HIP selects the HIP branch of a body's header, the
 * default the CUDA branch. Inline `asm` statements are rewritten by the driver
 * (tests/warp_harness/__init__.py, `rewrite_asm`) into calls of rr_shim_asm_<opcode>. */
#ifndef RR_WARP_SHIM_H
#define RR_WARP_SHIM_H

#define RR_WARP_HARNESS 1
#ifdef RR_SHIM_HIP
#  define __HIP__ 1
#else
#  define __CUDACC__ 1
#endif

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
/* every static __shared__ array of a body lands in one section, which the harness fills with
 * a fresh pattern before every case (a read of a byte no lane wrote is then visible) */
#define __shared__ __attribute__((section("rr_shared"), used))
/* forced inlining of every mma helper into every step makes g++ take minutes and gigabytes
 * for a 64-mma body; the host build lets the compiler choose */
#define always_inline
/* HIP address-space casts: on the host the window address is the host address */
#define address_space(n)

#ifdef __cplusplus
extern "C" {
#endif
unsigned rr_shim_tid(int dim);
unsigned rr_shim_ntid(int dim);
void rr_shim_syncwarp(void);
void rr_shim_syncthreads(void);
unsigned rr_shim_bpermute(int byte_addr, unsigned v);
unsigned rr_shim_shfl_idx(unsigned v, int lane);
void *rr_shim_shared_to_generic(unsigned addr);
/* inline-asm replacements: rr_shim_asm_<opcode, dots as underscores>(outputs by address,
 * then inputs, in the template's operand order) */
void rr_shim_asm_st_shared_b32(unsigned addr, unsigned v);
void rr_shim_asm_st_shared_b64(unsigned addr, unsigned long long v);
void rr_shim_asm_ld_shared_b32(unsigned *d, unsigned addr);
void rr_shim_asm_mma_sync_aligned_m16n8k32_row_col_f16_e4m3_e4m3_f16(
    unsigned *d0, unsigned *d1, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
    unsigned b0, unsigned b1, unsigned c0, unsigned c1);
#ifdef __cplusplus
}
#endif

/* CUDA built-ins */
struct rr_shim_dim3 { unsigned x, y, z; };
static inline rr_shim_dim3 rr_shim_thread_idx(void)
{
    rr_shim_dim3 d = {rr_shim_tid(0), rr_shim_tid(1), rr_shim_tid(2)};
    return d;
}
static inline rr_shim_dim3 rr_shim_block_dim(void)
{
    rr_shim_dim3 d = {rr_shim_ntid(0), rr_shim_ntid(1), rr_shim_ntid(2)};
    return d;
}
#define threadIdx (rr_shim_thread_idx())
#define blockDim (rr_shim_block_dim())
static inline void __syncwarp(unsigned mask = 0xffffffffu) { (void)mask; rr_shim_syncwarp(); }
static inline void __syncthreads(void) { rr_shim_syncthreads(); }
static inline void *__cvta_shared_to_generic(unsigned long long a)
{
    return rr_shim_shared_to_generic((unsigned)a);
}
static inline unsigned __shfl_sync(unsigned mask, unsigned v, int lane, int width = 32)
{
    (void)mask; (void)width;
    return rr_shim_shfl_idx(v, lane);
}

/* HIP / AMDGPU built-ins */
#define __builtin_amdgcn_workitem_id_x() rr_shim_tid(0)
#define __builtin_amdgcn_workitem_id_y() rr_shim_tid(1)
#define __builtin_amdgcn_workitem_id_z() rr_shim_tid(2)
#define __builtin_amdgcn_workgroup_size_x() rr_shim_ntid(0)
#define __builtin_amdgcn_workgroup_size_y() rr_shim_ntid(1)
#define __builtin_amdgcn_workgroup_size_z() rr_shim_ntid(2)
#define __builtin_amdgcn_fence(order, scope) ((void)0)   /* the barriers order memory */
#define __builtin_amdgcn_wave_barrier() rr_shim_syncwarp()
#define __builtin_amdgcn_s_barrier() rr_shim_syncthreads()
#define __builtin_amdgcn_ds_bpermute(addr, v) ((int)rr_shim_bpermute((addr), (unsigned)(v)))

#endif /* RR_WARP_SHIM_H */
