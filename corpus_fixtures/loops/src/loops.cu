// Loops as nvcc emits them, for cuts whose exits branch past the region
// (corpus_fixtures/loops/README.md). Each thread walks its own row of `a`.

// early break: stop at the first negative element
extern "C" __global__ void early_break(const int *a, int *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int *row = a + t * n;
    int acc = 0, i = 0;
    for (; i < n; ++i) {
        int v = row[i];
        if (v < 0)
            break;
        acc = acc * 3 + v;
    }
    out[2 * t] = acc;
    out[2 * t + 1] = i;
}

// nested loops with a data-dependent bound on the inner one
extern "C" __global__ void nested(const int *a, int *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int *row = a + t * n;
    int acc = 0;
    for (int i = 0; i < n; ++i) {
        int m = row[i] & 7;
        for (int j = 0; j < m; ++j)
            acc += (row[(i + j) % n] ^ j) + i;
        acc ^= acc >> 3;
    }
    out[2 * t] = acc;
    out[2 * t + 1] = n;
}

// data-dependent branches inside the loop, `continue`, and two distinct ways out: a
// sentinel ends the search (found), running past the budget ends it differently
extern "C" __global__ void search(const int *a, int *out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int *row = a + t * n;
    int acc = 1, i = 0, how = 0;
    for (; i < n; ++i) {
        int v = row[i];
        if (v == 0x7777) { how = 1; goto found; }
        if (v & 1)
            continue;
        if (v > 1000)
            acc += v >> 2;
        else
            acc = acc * 5 - v;
        if (acc > (1 << 28)) { how = 2; goto budget; }
    }
    out[2 * t] = acc;
    out[2 * t + 1] = -1;
    return;
found:
    out[2 * t] = acc + i;
    out[2 * t + 1] = how;
    return;
budget:
    out[2 * t] = acc - i;
    out[2 * t + 1] = how + 10;
}
