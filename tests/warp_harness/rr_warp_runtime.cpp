/* rr_warp_runtime.cpp -- the host side of the warp harness: runs one block of a generated
 * body, case after case, from a binary stream on stdin. Each thread of the block is a fiber
 * (its own stack, ucontext) on one host thread, switched at barriers: a SIMT shim that is
 * deterministic (no host data races) and cheap at the thousands of lane exchanges a scalar
 * mma fallback makes. A barrier that not every thread reaches is reported as a deadlock.
 *
 * Protocol (little-endian; see tests/warp_harness/__init__.py):
 *   out, once:   u64 shared arena base (a .shared window address), u64 global arena base,
 *                u32 shared bytes, u32 global bytes
 *   in, a case:  u32 magic 0x52524331, u32 entry, u32 bx, by, bz, u32 nargs,
 *                u32 pattern (the byte every static __shared__ array is filled with),
 *                u64 args[threads][nargs] (thread order = linear index x + bx*(y + by*z)),
 *                u8 shared[shared bytes], u8 global[global bytes]
 *   out, a case: u32 status (0: ran), u8 shared[...], u8 global[...],
 *                u32 n (the bytes each thread's callee returned, 0 for a void callee),
 *                u8 returns[threads][n]
 * Two kinds of body run here. A CUDA/HIP body compiled with rr_warp_shim.h reaches the
 * runtime through the rr_shim_* functions; a lifted body (rrsplice.lift, compiled with
 * -DRR_HOST_TEST) through the host branch of its rr_lift.h: rr_host_tid/ntid/ctaid (set
 * before the scheduler resumes a thread), rr_host_exchange, rr_host_barrier and
 * rr_host_shared, which the link places at address 0 (--defsym) so that a lifted body's
 * `.shared` window address is, as for the shim, the host address in the arena. The arena
 * is page-aligned and the global arena 256-byte aligned: a 16-byte vector access
 * (rr_w16, ld/st .v4.b32) at an aligned window address is aligned on the host too.
 * A fault (a .shared access outside the arena, an unknown entry) is reported on stderr and
 * the process exits 3; a deadlock is the driver's timeout. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <unistd.h>
#include <csignal>
#include <sys/mman.h>
#include <ucontext.h>

typedef void (*rr_entry_fn)(const unsigned long long *args);
extern "C" const rr_entry_fn rr_entries[];
extern "C" const int rr_entry_nargs[];
extern "C" const int rr_entry_count;
extern "C" char __start_rr_shared[] __attribute__((weak));
extern "C" char __stop_rr_shared[] __attribute__((weak));

#ifndef RR_SHARED_BYTES
#  define RR_SHARED_BYTES 65536
#endif
#ifndef RR_GLOBAL_BYTES
#  define RR_GLOBAL_BYTES 4096
#endif
/* where the arenas are mapped (tests/warp_harness/__init__.py: SHARED_ADDR, GLOBAL_ADDR) */
#ifndef RR_SHARED_ADDR
#  define RR_SHARED_ADDR 0x40000000ull
#endif
#ifndef RR_GLOBAL_ADDR
#  define RR_GLOBAL_ADDR 0x80000000ull
#endif
#ifndef RR_STACK_BYTES
#  define RR_STACK_BYTES (256 * 1024)
#endif
#define RR_RET_MAX 1024            /* the most bytes a callee may return */

/* the host branch of a lifted body's rr_lift.h */
thread_local unsigned rr_host_tid[3], rr_host_ntid[3], rr_host_ctaid[3];

namespace {

struct Barrier {
    unsigned need = 0, count = 0, gen = 0;
};

struct Warp {
    Barrier bar;
    unsigned long long xch[2][32][8];
};

struct Fiber {
    ucontext_t ctx;
    unsigned tid[3], linear;
    unsigned xphase;                    // this lane's exchanges so far
    unsigned ret_bytes;                 // what its callee returned, in g_rets
    bool done;
};

struct Block {
    unsigned dim[3];
    unsigned threads;
    Barrier bar;
    std::vector<Warp> warps;
};

constexpr size_t kStack = RR_STACK_BYTES;
Block *g_block;
unsigned char *g_shared;        // the arena, mapped below 4 GiB: host address == window address
unsigned char *g_global;
ucontext_t g_sched;
std::vector<Fiber> g_fibers;
unsigned char *g_stacks;
Fiber *g_cur;
unsigned long long g_progress;
rr_entry_fn g_fn;
const unsigned long long *g_args;
unsigned g_nargs;
std::vector<unsigned char> g_rets;   // [threads][RR_RET_MAX]

[[noreturn]] void fault(const char *what, unsigned long long a)
{
    std::fprintf(stderr, "warp harness: thread %u (%u, %u, %u): %s 0x%llx\n", g_cur->linear,
                 g_cur->tid[0], g_cur->tid[1], g_cur->tid[2], what, a);
    std::fflush(stderr);
    std::_Exit(3);
}

Warp &warp() { return g_block->warps[g_cur->linear >> 5]; }
unsigned lane() { return g_cur->linear & 31; }

void arrive_and_wait(Barrier &b)
{
    const unsigned gen = b.gen;
    if (++b.count == b.need) {
        b.count = 0;
        ++b.gen;
        ++g_progress;
        return;
    }
    while (b.gen == gen)
        swapcontext(&g_cur->ctx, &g_sched);
}

void fiber_main()
{
    g_fn(g_args + (size_t)g_cur->linear * g_nargs);
    g_cur->done = true;
    ++g_progress;
}

unsigned char *shared_at(unsigned addr, unsigned n)
{
    const unsigned long long base = (unsigned long long)(uintptr_t)g_shared;
    if (addr < base || addr + (unsigned long long)n > base + RR_SHARED_BYTES)
        fault(".shared access outside the arena at", addr);
    return (unsigned char *)(uintptr_t)addr;
}

/* ---- the exact scalar model of mma.m16n8k32.row.col.f16.e4m3.e4m3.f16: every product and
 * their sum with C exact (float64 holds them), one rounding to f16, NaN -> 0x7fff ---- */
double e4m3(unsigned b)
{
    const double s = (b & 0x80) ? -1.0 : 1.0;
    const int e = (b >> 3) & 15, m = b & 7;
    if (e == 15 && m == 7)
        return __builtin_nan("");
    return e == 0 ? s * m * 0x1p-9 : s * (8 + m) * __builtin_ldexp(1.0, e - 10);
}
double f16(unsigned h)
{
    _Float16 x;
    const unsigned short u = (unsigned short)h;
    std::memcpy(&x, &u, 2);
    return (double)x;
}
unsigned to_f16(double v)
{
    if (v != v)
        return 0x7fff;
    const _Float16 x = (_Float16)v;    // one round-to-nearest-even step from double
    unsigned short u;
    std::memcpy(&u, &x, 2);
    return u;
}

}  // namespace

extern "C" {

unsigned rr_shim_tid(int d) { return g_cur->tid[d]; }
unsigned rr_shim_ntid(int d) { return g_block->dim[d]; }
void rr_shim_syncwarp(void) { arrive_and_wait(warp().bar); }
void rr_shim_syncthreads(void) { arrive_and_wait(g_block->bar); }

/* lane exchanges go through half (n & 1) of the warp's array, n counting this lane's
 * exchanges: a lane writes the other half only after every lane passed this exchange's
 * barrier (and so finished reading the previous one), so one barrier per exchange is enough */
static unsigned long long (*exchange_half(void))[8]
{
    return warp().xch[g_cur->xphase++ & 1];
}
static unsigned exchange(unsigned v, unsigned src)
{
    unsigned long long (*x)[8] = exchange_half();
    x[lane()][0] = v;
    arrive_and_wait(warp().bar);
    return (unsigned)x[src & 31][0];
}
/* ds_bpermute: the value of the lane whose *byte* address (lane * 4) is given */
unsigned rr_shim_bpermute(int byte_addr, unsigned v) { return exchange(v, (unsigned)byte_addr >> 2); }
unsigned rr_shim_shfl_idx(unsigned v, int src) { return exchange(v, (unsigned)src); }

void *rr_shim_shared_to_generic(unsigned addr) { return shared_at(addr, 0); }

/* a callee's return value (the entry wrappers store it here) */
void rr_shim_ret_store(const void *p, unsigned n)
{
    if (n > RR_RET_MAX)
        fault("a return value larger than RR_RET_MAX bytes:", n);
    std::memcpy(&g_rets[(size_t)g_cur->linear * RR_RET_MAX], p, n);
    g_cur->ret_bytes = n;
}

void rr_shim_asm_st_shared_b32(unsigned addr, unsigned v) { std::memcpy(shared_at(addr, 4), &v, 4); }
void rr_shim_asm_st_shared_b64(unsigned addr, unsigned long long v)
{
    std::memcpy(shared_at(addr, 8), &v, 8);
}
void rr_shim_asm_ld_shared_b32(unsigned *d, unsigned addr) { std::memcpy(d, shared_at(addr, 4), 4); }

/* PTX ISA, "Matrix Fragments for mma.m16n8k32" (.e4m3): g = lane >> 2, t = lane % 4;
 * A reg j byte e: row g + 8 (j & 1), k 4t + e + 16 (j >> 1); B reg j byte e: k 4t + e + 16j,
 * n g; C/D reg j half e: row g + 8j, n 2t + e. */
void rr_shim_asm_mma_sync_aligned_m16n8k32_row_col_f16_e4m3_e4m3_f16(
    unsigned *d0, unsigned *d1, unsigned a0, unsigned a1, unsigned a2, unsigned a3,
    unsigned b0, unsigned b1, unsigned c0, unsigned c1)
{
    unsigned long long (*x)[8] = exchange_half();
    unsigned long long *mine = x[lane()];
    mine[0] = a0; mine[1] = a1; mine[2] = a2; mine[3] = a3;
    mine[4] = b0; mine[5] = b1; mine[6] = c0; mine[7] = c1;
    arrive_and_wait(warp().bar);
    unsigned char A[16][32], B[32][8];
    for (int l = 0; l < 32; ++l) {
        const int g = l >> 2, t = l & 3;
        for (int j = 0; j < 4; ++j)
            for (int e = 0; e < 4; ++e)
                A[g + 8 * (j & 1)][4 * t + e + 16 * (j >> 1)] =
                    (unsigned char)(x[l][j] >> (8 * e));
        for (int j = 0; j < 2; ++j)
            for (int e = 0; e < 4; ++e)
                B[4 * t + e + 16 * j][g] = (unsigned char)(x[l][4 + j] >> (8 * e));
    }
    const int g = lane() >> 2, t = lane() & 3;
    unsigned out[2];
    for (int j = 0; j < 2; ++j) {
        unsigned r = 0;
        for (int e = 0; e < 2; ++e) {
            const int row = g + 8 * j, n = 2 * t + e;
            double s = f16((j ? c1 : c0) >> (16 * e));
            for (int k = 0; k < 32; ++k)
                s += e4m3(A[row][k]) * e4m3(B[k][n]);
            r |= to_f16(s) << (16 * e);
        }
        out[j] = r;
    }
    *d0 = out[0];
    *d1 = out[1];
}

}  // extern "C"

/* the host branch of rr_lift.h: a lifted body's lane exchange and barriers (its
 * bar.warp.sync and bar.sync both arrive here: a block barrier) */
unsigned rr_host_exchange(unsigned v, int src) { return exchange(v, (unsigned)src); }
void rr_host_barrier(void) { rr_shim_syncthreads(); }

#ifndef MAP_FIXED_NOREPLACE
#  define MAP_FIXED_NOREPLACE 0x100000
#endif
/* `bytes` at `addr` (page-aligned, so 16-byte accesses at aligned window addresses are
 * aligned), or anywhere below 4 GiB when that range is taken; nullptr when neither */
static unsigned char *map_arena(unsigned long long addr, unsigned long long bytes)
{
    void *p = mmap((void *)(uintptr_t)addr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == MAP_FAILED || p != (void *)(uintptr_t)addr) {
        if (p != MAP_FAILED)
            munmap(p, bytes);
        p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    }
    if (p == MAP_FAILED || (uintptr_t)p + bytes > 0xffffffffull)
        return nullptr;
    return (unsigned char *)p;
}

/* a body's wild access: say where and in which thread, then exit 3 (on its own stack: the
 * fiber's may be the one that overflowed) */
static void on_segv(int, siginfo_t *si, void *)
{
    char msg[160];
    const int n = std::snprintf(msg, sizeof msg, "warp harness: thread %u: a wild access at "
                                "0x%llx (outside the arenas, or a stack overflow)\n",
                                g_cur ? g_cur->linear : 0u,
                                (unsigned long long)(uintptr_t)si->si_addr);
    if (n > 0)
        (void)!write(2, msg, (size_t)n);
    _exit(3);
}

static bool read_all(void *p, size_t n) { return std::fread(p, 1, n, stdin) == n; }
static void write_all(const void *p, size_t n) { std::fwrite(p, 1, n, stdout); }

int main(void)
{
    /* the arenas at fixed addresses below 4 GiB (a .shared window address is 32 bits), the
     * same in every harness binary, so a test can lay out its memory before it builds */
    g_shared = map_arena(RR_SHARED_ADDR, RR_SHARED_BYTES);
    g_global = map_arena(RR_GLOBAL_ADDR, RR_GLOBAL_BYTES);
    if (!g_shared || !g_global) {
        std::fprintf(stderr, "warp harness: cannot map the arenas below 4 GiB\n");
        return 2;
    }
    static unsigned char alt[64 * 1024];
    stack_t ss = {};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    struct sigaction sa = {};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    unsigned stack_threads = 0;          // the stacks mapped so far (grown per case)
    const unsigned long long sb = (uintptr_t)g_shared, gb = (uintptr_t)g_global;
    const unsigned sizes[2] = {RR_SHARED_BYTES, RR_GLOBAL_BYTES};
    write_all(&sb, 8); write_all(&gb, 8); write_all(sizes, 8);
    std::fflush(stdout);
    for (;;) {
        unsigned hdr[7];
        if (!read_all(hdr, sizeof hdr))
            return 0;
        if (hdr[0] != 0x52524331u || (int)hdr[1] >= rr_entry_count
            || (int)hdr[5] != rr_entry_nargs[hdr[1]]) {
            std::fprintf(stderr, "warp harness: bad case header (entry %u, %u args)\n",
                         hdr[1], hdr[5]);
            return 3;
        }
        Block b;
        b.dim[0] = hdr[2]; b.dim[1] = hdr[3]; b.dim[2] = hdr[4];
        b.threads = hdr[2] * hdr[3] * hdr[4];
        if (b.threads == 0 || b.threads % 32 || b.threads > 1024) {
            std::fprintf(stderr, "warp harness: block of %u threads (whole warps only)\n",
                         b.threads);
            return 3;
        }
        const unsigned nargs = hdr[5];
        std::vector<unsigned long long> args((size_t)b.threads * nargs);
        if (!read_all(args.data(), args.size() * 8) || !read_all(g_shared, RR_SHARED_BYTES)
            || !read_all(g_global, RR_GLOBAL_BYTES))
            return 3;
        if (__start_rr_shared)
            std::memset(__start_rr_shared, (int)(hdr[6] & 0xff),
                        (size_t)(__stop_rr_shared - __start_rr_shared));
        b.bar.need = b.threads;
        b.warps.resize(b.threads / 32);
        for (Warp &w : b.warps)
            w.bar.need = 32;
        g_block = &b;
        g_fn = rr_entries[hdr[1]];
        g_args = args.data();
        g_nargs = nargs;
        if (b.threads > stack_threads) {
            if (stack_threads)
                munmap(g_stacks, kStack * stack_threads);
            g_stacks = (unsigned char *)mmap(nullptr, kStack * b.threads, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (g_stacks == MAP_FAILED) {
                std::fprintf(stderr, "warp harness: cannot map %u stacks\n", b.threads);
                return 2;
            }
            stack_threads = b.threads;
        }
        g_fibers.assign(b.threads, Fiber{});
        g_rets.assign((size_t)b.threads * RR_RET_MAX, 0);
        for (unsigned i = 0; i < b.threads; ++i) {
            Fiber &f = g_fibers[i];
            f.linear = i;
            f.tid[0] = i % b.dim[0];
            f.tid[1] = (i / b.dim[0]) % b.dim[1];
            f.tid[2] = i / (b.dim[0] * b.dim[1]);
            getcontext(&f.ctx);
            f.ctx.uc_stack.ss_sp = g_stacks + (size_t)i * kStack;
            f.ctx.uc_stack.ss_size = kStack;
            f.ctx.uc_link = &g_sched;
            makecontext(&f.ctx, fiber_main, 0);
        }
        for (unsigned left = b.threads; left;) {      // round robin until every thread returned
            const unsigned long long before = g_progress;
            left = 0;
            for (Fiber &f : g_fibers) {
                if (f.done)
                    continue;
                g_cur = &f;
                for (int d = 0; d < 3; ++d) {       // one host thread: set per resumed fiber
                    rr_host_tid[d] = f.tid[d];
                    rr_host_ntid[d] = b.dim[d];
                    rr_host_ctaid[d] = 0;
                }
                swapcontext(&g_sched, &f.ctx);
                left += !f.done;
            }
            if (left && g_progress == before) {
                std::fprintf(stderr, "warp harness: deadlock: %u threads wait at a barrier "
                             "that not every thread of the warp or block reaches\n", left);
                return 4;
            }
        }
        const unsigned status = 0;
        write_all(&status, 4);
        write_all(g_shared, RR_SHARED_BYTES);
        write_all(g_global, RR_GLOBAL_BYTES);
        unsigned n = 0;
        for (const Fiber &f : g_fibers)
            n = f.ret_bytes > n ? f.ret_bytes : n;
        write_all(&n, 4);
        for (unsigned i = 0; i < b.threads; ++i)
            write_all(&g_rets[(size_t)i * RR_RET_MAX], n);
        std::fflush(stdout);
    }
}
