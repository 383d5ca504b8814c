// A reloaded for every n-tile: n-tile outer, m-tile, k-slice inner.  B's fragments of an
// n-tile are loaded once before its m-tiles; every mma clobbers memory, so each A
// fragment is loaded again (same address, new register) for every n-tile.
// A 32x64x64 dense GEMM with -DMT=2 -DNT=8 -DKS=2.  B (the weights) is parameter 1.
#include "frag_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
frag_areload(const uint8_t* A, const uint8_t* B, const __half* bias, uint32_t* out)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    uint32_t d[MT][NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
        uint32_t b[KS][2];
#pragma unroll
        for (int ks = 0; ks < KS; ++ks)
            rr_load_b(b[ks], B, ks, nt, g, t);
        const uint32_t c = rr_bias(bias, nt, t);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            d[mt][nt][0] = c;
            d[mt][nt][1] = c;
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                uint32_t a[4];
                rr_load_a(a, A, mt, ks, g, t);
                rr_mma<true>(d[mt][nt][0], d[mt][nt][1], a, b[ks], d[mt][nt][0], d[mt][nt][1]);
            }
        }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
            rr_store_d(out, mt, nt, g, t, d[mt][nt][0], d[mt][nt][1]);
}
