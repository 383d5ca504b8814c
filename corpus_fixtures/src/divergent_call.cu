// Cut sites under divergent and under uniform control flow, for `check`'s divergent-call
// finding (corpus_fixtures/edge/README.md). Each kernel marks its region with two
// inline-asm comments, `// rr-begin` and `// rr-end`: the statements between them are
// the cut, and the question is whether every lane of the warp reaches the first one.
// Compile: nvcc -arch=sm_89 -ptx divergent_call.cu -o ../edge/divergent_call_sm89.ptx
#define BEGIN asm volatile("// rr-begin")
#define END asm volatile("// rr-end")

__device__ __forceinline__ float work(float x, float s)
{
    float y = x * s + 1.0f;
    y = y * y - x;
    return y * s + x;
}

// divergent: only the lanes with threadIdx.x < 16 reach the region
extern "C" __global__ void lane_guarded(const float *in, float *out, float s)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[t];
    if (threadIdx.x < 16) {
        BEGIN;
        x = work(x, s);
        END;
    }
    out[t] = x;
}

// divergent: a branch on loaded data
extern "C" __global__ void data_guarded(const float *in, float *out, float s)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[t];
    if (x > 0.0f) {
        BEGIN;
        x = work(x, s);
        END;
    }
    out[t] = x;
}

// divergent: lanes past n return early, the region runs with the rest of the warp
extern "C" __global__ void early_return(const float *in, float *out, float s, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n)
        return;
    float x = in[t];
    BEGIN;
    x = work(x, s);
    END;
    out[t] = x;
}

// divergent: inside a loop whose trip count each lane loads
extern "C" __global__ void lane_loop(const float *in, const int *count, float *out, float s)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[t];
    int m = count[t];
    for (int i = 0; i < m; ++i) {
        BEGIN;
        x = work(x, s);
        END;
    }
    out[t] = x;
}

// uniform: a branch on the block index and a kernel parameter, a loop over a parameter
extern "C" __global__ void block_guarded(const float *in, float *out, float s, int nb, int k)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = in[t];
    if (blockIdx.x < nb) {
        for (int i = 0; i < k; ++i) {
            BEGIN;
            x = work(x, s);
            END;
        }
    }
    out[t] = x;
}
