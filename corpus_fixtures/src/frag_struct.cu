// Weights behind a struct parameter, not at the DLSS-convention +40: the kernel's only
// parameter is FragArgs (40 bytes) and the weight pointer is at +24.  +8 is the bias
// pointer (which the kernel reads) and +40 is past the end of the parameter.
// A 16x32x64 dense GEMM with -DMT=1 -DNT=4 -DKS=2.
#include "frag_common.cuh"

struct FragArgs {
    const uint8_t* act;      //  0  A
    const __half*  bias;     //  8  bias seeds
    uint32_t*      out;      // 16  D
    const uint8_t* weights;  // 24  B
    int            n;        // 32
    int            flags;    // 36
};
static_assert(sizeof(FragArgs) == 40, "parameter layout");
static_assert(__builtin_offsetof(FragArgs, weights) == 24, "weights at +24");

extern "C" __global__ void __launch_bounds__(32) frag_struct(const FragArgs p)
{
    const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    uint32_t a[MT][KS][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int ks = 0; ks < KS; ++ks)
            rr_load_a(a[mt][ks], p.act, mt, ks, g, t);
    uint32_t d[MT][NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) {
            d[mt][nt][0] = d[mt][nt][1] = rr_bias(p.bias, nt, t);
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                uint32_t b[2];
                rr_load_b(b, p.weights, ks, nt, g, t);
                rr_mma<false>(d[mt][nt][0], d[mt][nt][1], a[mt][ks], b, d[mt][nt][0], d[mt][nt][1]);
            }
        }
    const uint32_t flip = (p.flags & 1) ? 0x80008000u : 0u;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
            rr_store_d(p.out, mt, nt, g, t, d[mt][nt][0] ^ flip, d[mt][nt][1] ^ flip);
}
