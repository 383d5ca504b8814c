// Calls of every kind nvcc emits: printf (vprintf with a local argument buffer), direct
// recursion, indirect calls through device function-pointer tables (`.callprototype`),
// virtual functions (vtables as initialised globals), a dense switch, and module-scope
// initialisers of every shape.
#include <cstdio>
#include <cstdint>

typedef float (*unary_fn)(float);

__device__ __noinline__ float twice(float x) { return 2.f * x; }
__device__ __noinline__ float square(float x) { return x * x; }
__device__ __noinline__ float negate(float x) { return -x; }

__device__ unary_fn g_table[3] = {twice, square, negate};
__constant__ float c_coeffs[6] = {1.0f, -2.5f, 3.25e-3f, 1e30f, 0.0f, -0.0f};
__constant__ double c_d[2] = {3.141592653589793, -1e-300};
__device__ int g_counts[4] = {1, -2, 0x7fffffff, -2147483647 - 1};
__device__ unsigned long long g_wide = 0xfedcba9876543210ull;
__device__ const char* g_name = "conformance";
__device__ int g_zero[16];
__device__ char g_bytes[5] = {'a', 'b', 0, 'c', 0};
__device__ short g_shorts[3] = {-1, 2, 32767};

struct Shape {
  __device__ virtual float area(float s) const = 0;
  __device__ virtual int sides() const { return 0; }
  __device__ virtual ~Shape() {}
};
struct Square : Shape {
  __device__ float area(float s) const override { return s * s; }
  __device__ int sides() const override { return 4; }
};
struct Triangle : Shape {
  __device__ float area(float s) const override { return 0.4330127f * s * s; }
  __device__ int sides() const override { return 3; }
};

__device__ __noinline__ unsigned long long fib(unsigned n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ int ackermann(int m, int n) {
  if (m == 0) return n + 1;
  if (n == 0) return ackermann(m - 1, 1);
  return ackermann(m - 1, ackermann(m, n - 1));
}

__device__ __noinline__ int dense_switch(int k, int a) {
  switch (k) {
    case 0: return a + 11;
    case 1: return a * 3;
    case 2: return a ^ 0x55;
    case 3: return a - 7;
    case 4: return a << 2;
    case 5: return a >> 1;
    case 6: return ~a;
    case 7: return a * a;
    case 8: return a | 0x100;
    case 9: return a & 0xff;
    case 10: return a + 1000;
    case 11: return -a;
    default: return a;
  }
}

__global__ void indirect_calls(float* out, const int* sel, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unary_fn f = g_table[sel[i] % 3];
  float x = f(c_coeffs[i % 6]) + (float)c_d[i & 1] + g_counts[i & 3] + (float)(g_wide >> 60);
  Square sq;
  Triangle tr;
  Shape* s = (sel[i] & 1) ? static_cast<Shape*>(&sq) : static_cast<Shape*>(&tr);
  x += s->area(x) + s->sides() + g_name[i % 11] + g_bytes[i % 5] + g_shorts[i % 3];
  out[i] = x + g_zero[i & 15];
}

__global__ void recursion(unsigned long long* out, int* out2, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = fib(i % 20);
  out2[i] = ackermann(2, i % 5) + dense_switch(i % 13, i);
}

__global__ void say(const float* v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && v[i] != 0.f)
    printf("thread %d block %d: %f %s %llx %c\n", threadIdx.x, blockIdx.x, v[i], "tag", g_wide,
           'z');
  if (i == 0) printf("no arguments\n");
}

__global__ void dynamic_objects(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  Shape* s = (i & 1) ? static_cast<Shape*>(new Square) : static_cast<Shape*>(new Triangle);
  float* buf = (float*)malloc(16 * sizeof(float));
  for (int k = 0; k < 16; ++k) buf[k] = s->area(k);
  if (i < n) out[i] = buf[i & 15];
  free(buf);
  delete s;
}
