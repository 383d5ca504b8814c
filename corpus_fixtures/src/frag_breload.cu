// B reloaded for every m-tile: m-tile outer, n-tile, k-slice inner.  A's fragments of
// an m-tile are loaded once before its n-tiles; every mma clobbers memory, so each B
// fragment is loaded again (same address, new register) for every m-tile.
// A 48x128x128 dense GEMM with -DMT=3 -DNT=16 -DKS=4.  B (the weights) is parameter 1.
#include "frag_common.cuh"

extern "C" __global__ void __launch_bounds__(32)
frag_breload(const uint8_t* A, const uint8_t* B, const __half* bias, uint32_t* out)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    uint32_t d[MT][NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        uint32_t a[KS][4];
#pragma unroll
        for (int ks = 0; ks < KS; ++ks)
            rr_load_a(a[ks], A, mt, ks, g, t);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            const uint32_t c = rr_bias(bias, nt, t);
            d[mt][nt][0] = c;
            d[mt][nt][1] = c;
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                uint32_t b[2];
                rr_load_b(b, B, ks, nt, g, t);
                rr_mma<true>(d[mt][nt][0], d[mt][nt][1], a[ks], b, d[mt][nt][0], d[mt][nt][1]);
            }
        }
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
            rr_store_d(out, mt, nt, g, t, d[mt][nt][0], d[mt][nt][1]);
}
