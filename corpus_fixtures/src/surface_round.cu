// Surface-store and roundf fixture: the statements the users' build rewrites for ZLUDA.
//
// rrsurf_round_kernel stores through each of the four surface-store shapes the rewrite
// knows (`sust.b.2d.v2.b16.zero`, `sust.b.2d.v4.b16.zero`, `sust.b.2d.b32.zero` through
// surf2Dwrite with cudaBoundaryModeZero, and `sust.p.2d.v4.b32.zero` through inline asm:
// CUDA C++ has no formatted-store intrinsic; its x coordinate counts elements, not bytes)
// and rounds with roundf (nvcc: copysign 0.5,
// `add.rz.ftz.f32`, `cvt.rzi.f32.f32`).  rrround_all_kernel rounds every float bit
// pattern base + i, so the round rewrite can be compared on all 2^32 inputs.
#include <cstdint>

extern "C" __global__ void __launch_bounds__(128)
rrsurf_round_kernel(cudaSurfaceObject_t s_v2b16, cudaSurfaceObject_t s_v4b16,
                    cudaSurfaceObject_t s_b32, cudaSurfaceObject_t s_pv4b32,
                    const float4* __restrict__ in, float4* __restrict__ rounded,
                    int width, int height, float scale)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width + 1 || y >= height + 1) return;   // one texel past the edge: .zero clamps
    const float4 v = in[min(y, height - 1) * width + min(x, width - 1)];
    const float r0 = roundf(v.x * scale), r1 = roundf(v.y * scale);
    const float r2 = roundf(v.z * scale), r3 = roundf(v.w * scale - 0.5f);
    surf2Dwrite(make_ushort2((unsigned short)(int)r0, (unsigned short)(int)r1),
                s_v2b16, x * 4, y, cudaBoundaryModeZero);
    surf2Dwrite(make_ushort4((unsigned short)(int)r0, (unsigned short)(int)r1,
                             (unsigned short)(int)r2, (unsigned short)(int)r3),
                s_v4b16, x * 8, y, cudaBoundaryModeZero);
    surf2Dwrite(__float_as_uint(r0 + r1), s_b32, x * 4, y, cudaBoundaryModeZero);
    asm volatile("sust.p.2d.v4.b32.zero [%0, {%1, %2}], {%3, %4, %5, %6};"
                 :: "l"(s_pv4b32), "r"(x), "r"(y), "f"(r0), "f"(r1), "f"(r2), "f"(r3)
                 : "memory");
    if (x < width && y < height) rounded[y * width + x] = make_float4(r0, r1, r2, r3);
}

extern "C" __global__ void __launch_bounds__(256)
rrround_all_kernel(uint32_t base, uint32_t* __restrict__ out)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = __float_as_uint(roundf(__uint_as_float(base + i)));
}
