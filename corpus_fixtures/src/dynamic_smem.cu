// A kernel that stages its input in dynamic shared memory (`extern __shared__`, PTX
// `.extern .shared`), as Triton kernels do; the launch gives it 32 KiB
// (corpus_fixtures/edge/dynamic_smem.launch.json).
// Compile: nvcc -arch=sm_89 -ptx dynamic_smem.cu -o ../edge/dynamic_smem_sm89.ptx
#include <stdint.h>

extern "C" __global__ void __launch_bounds__(256)
dyn_stage(const float *__restrict__ in, float *__restrict__ out, float scale, int n)
{
    extern __shared__ float stage[];             // 32 per thread: 256 x 32 x 4 = 32 KiB
    const int t = threadIdx.x;
    const int base = (blockIdx.x * blockDim.x + t) * 32;
    for (int i = 0; i < 32; ++i)
        stage[i * blockDim.x + t] = in[base + i];
    __syncthreads();
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
        acc[i] = stage[((i + 1) % 32) * blockDim.x + t];
    // the region a recipe cuts out: 32 values live out of it
#pragma unroll
    for (int i = 0; i < 32; ++i)
        acc[i] = acc[i] * scale + acc[(i + 7) % 32];
#pragma unroll
    for (int i = 0; i < 32; ++i)
        if (base + i < n)
            out[base + i] = acc[i];
}
