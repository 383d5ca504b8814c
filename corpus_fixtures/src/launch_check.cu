// Host-side smoke test for the Swin fixtures: loads a fixture's PTX with the
// runtime's library API (JIT for the GPU at hand), builds the parameter block, buffers,
// textures and surface that <kernel>.launch.json describes (with the fills it
// names, from a fixed-seed generator), launches twice and prints a digest of
// both outputs, whether the two runs agree bit for bit, and how many output
// halves are not finite.
//
//   nvcc -O2 -std=c++17 -o launch_check corpus_fixtures/src/launch_check.cu
//   ./launch_check corpus_fixtures/swin_big_sm89.ptx rrswin_big_kernel \
//       WIDTH HEIGHT ARENA_BYTES WEIGHT_BYTES
//
// The layout mirrors RrSwinParams in swin_common.cuh (96 bytes).
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "swin_common.cuh"

#define CK(x)                                                                             \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
static uint64_t g_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd()
{
    g_state ^= g_state << 13;
    g_state ^= g_state >> 7;
    g_state ^= g_state << 17;
    return (uint32_t)(g_state >> 16);
}
static float unit() { return (rnd() & 0xFFFFFF) / 16777216.0f; }

static uint64_t fnv(const void* p, size_t n, uint64_t h = 1469598103934665603ull)
{
    const uint8_t* b = (const uint8_t*)p;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static cudaTextureObject_t make_tex(int w, int h, float lo, float hi, cudaArray_t* arr)
{
    std::vector<float4> v((size_t)w * h);
    for (auto& x : v) x = make_float4(lo + (hi - lo) * unit(), lo + (hi - lo) * unit(),
                                      lo + (hi - lo) * unit(), lo + (hi - lo) * unit());
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<float4>();
    CK(cudaMallocArray(arr, &cd, w, h));
    CK(cudaMemcpy2DToArray(*arr, 0, 0, v.data(), w * sizeof(float4), w * sizeof(float4), h,
                           cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = *arr;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModePoint;
    td.readMode = cudaReadModeElementType;
    td.normalizedCoords = 0;
    cudaTextureObject_t t;
    CK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    return t;
}

int main(int argc, char** argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: %s PTX KERNEL WIDTH HEIGHT ARENA_BYTES WEIGHT_BYTES\n", argv[0]);
        return 2;
    }
    const int W = atoi(argv[3]), H = atoi(argv[4]);
    const size_t arena_bytes = strtoull(argv[5], nullptr, 10);
    const size_t weight_bytes = strtoull(argv[6], nullptr, 10);
    std::ifstream f(argv[1]);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string ptx = ss.str();

    CK(cudaFree(0));  // create the primary context
    cudaLibrary_t lib;
    char log[8192] = {0};
    cudaJitOption opts[] = {cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes};
    void* vals[] = {log, (void*)(uintptr_t)sizeof(log)};
    if (cudaLibraryLoadData(&lib, ptx.c_str(), opts, vals, 2, nullptr, nullptr, 0) != cudaSuccess) {
        fprintf(stderr, "JIT failed: %s\n", log);
        return 1;
    }
    cudaKernel_t fn;
    CK(cudaLibraryGetKernel(&fn, lib, argv[2]));

    // inputs
    std::vector<__half> arena(arena_bytes / 2);
    for (auto& x : arena) x = __float2half(2.0f * unit() - 1.0f);
    std::vector<float4> plane((size_t)W * H);
    for (auto& x : plane) x = make_float4(unit(), unit(), unit(), unit());
    std::vector<uint8_t> wts(weight_bytes);
    for (auto& x : wts) x = (uint8_t)(rnd() & 0xBF);

    RrSwinParams p = {};
    void *d_arena, *d_plane, *d_out, *d_w;
    CK(cudaMalloc(&d_arena, arena_bytes));
    CK(cudaMalloc(&d_plane, plane.size() * 16));
    CK(cudaMalloc(&d_out, (size_t)W * H * 16));
    CK(cudaMalloc(&d_w, weight_bytes));
    CK(cudaMemcpy(d_arena, arena.data(), arena_bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_plane, plane.data(), plane.size() * 16, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_w, wts.data(), weight_bytes, cudaMemcpyHostToDevice));
    cudaArray_t a_col, a_gui, a_mot, a_dep, a_surf;
    p.arena = (const __half*)d_arena;
    p.plane_in = (const float4*)d_plane;
    p.plane_out = (uint4*)d_out;
    p.tex_color = make_tex(W, H, 0.0f, 1.0f, &a_col);
    p.tex_guide = make_tex(W, H, 0.0f, 1.0f, &a_gui);
    p.weights = (const uint8_t*)d_w;
    p.tex_motion = make_tex(W, H, -2.0f, 2.0f, &a_mot);
    p.tex_depth = make_tex(W, H, 0.0f, 1.0f, &a_dep);
    cudaChannelFormatDesc sd = cudaCreateChannelDesc(16, 16, 16, 16, cudaChannelFormatKindFloat);
    CK(cudaMallocArray(&a_surf, &sd, W, H, cudaArraySurfaceLoadStore));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = a_surf;
    CK(cudaCreateSurfaceObject(&p.surf_out, &rd));
    p.width = W;
    p.height = H;
    p.in_scale = 0.5f;
    p.out_scale = 1.0f;

    uint64_t digest[2];
    size_t nonfinite = 0, nonfinite_acc = 0;
    for (int run = 0; run < 2; ++run) {
        CK(cudaMemset(d_out, 0, (size_t)W * H * 16));
        void* args[] = {&p};
        CK(cudaLaunchKernel((const void*)fn, dim3(W / 32, H / 4, 1), dim3(32, 1, 4), args, 0, nullptr));
        CK(cudaDeviceSynchronize());
        std::vector<uint16_t> surf((size_t)W * H * 4);
        std::vector<uint16_t> out((size_t)W * H * 8);
        CK(cudaMemcpy2DFromArray(surf.data(), W * 8, a_surf, 0, 0, W * 8, H, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(out.data(), d_out, out.size() * 2, cudaMemcpyDeviceToHost));
        digest[run] = fnv(out.data(), out.size() * 2, fnv(surf.data(), surf.size() * 2));
        if (run == 0) {
            for (size_t i = 0; i < surf.size(); ++i) {
                if ((surf[i] & 0x7C00) != 0x7C00) continue;
                if (nonfinite++ < 4) {
                    const size_t px = i / 4;
                    printf("non-finite surface half %04x at x=%zu y=%zu channel %zu; accumulators",
                           surf[i], px % W, px / W, i % 4);
                    for (int j = 0; j < 8; ++j) printf(" %g", __half2float(*(__half*)&out[px * 8 + j]));
                    printf("\n");
                }
            }
            for (uint16_t h : out) nonfinite_acc += ((h & 0x7C00) == 0x7C00);
            printf("surface[0..3] = %g %g %g %g\n", __half2float(*(__half*)&surf[0]),
                   __half2float(*(__half*)&surf[1]), __half2float(*(__half*)&surf[2]),
                   __half2float(*(__half*)&surf[3]));
            printf("plane_out halves[0..3] = %g %g %g %g\n", __half2float(*(__half*)&out[0]),
                   __half2float(*(__half*)&out[1]), __half2float(*(__half*)&out[2]),
                   __half2float(*(__half*)&out[3]));
            size_t distinct = 0;
            for (size_t i = 1; i < out.size(); ++i) distinct += out[i] != out[i - 1];
            printf("plane_out value changes: %zu of %zu\n", distinct, out.size());
        }
    }
    printf("%s: digest %016llx %016llx %s; non-finite surface halves %zu of %zu, "
           "non-finite accumulator halves %zu of %zu\n",
           argv[2], (unsigned long long)digest[0], (unsigned long long)digest[1],
           digest[0] == digest[1] ? "deterministic" : "DIFFER", nonfinite, (size_t)W * H * 4,
           nonfinite_acc, (size_t)W * H * 8);
    return digest[0] == digest[1] ? 0 : 1;
}
