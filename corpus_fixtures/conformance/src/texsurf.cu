// Bindless textures and surfaces: tex/tld4/txq through texture objects, suld/sust/suq
// through surface objects, plus the inline-asm forms (an address list with a coordinate
// vector, a predicate-pair texture fetch).
#include <cstdint>

__device__ __forceinline__ float4 tex2d_asm(cudaTextureObject_t t, float x, float y) {
  float4 r;
  asm volatile("tex.2d.v4.f32.f32 {%0, %1, %2, %3}, [%4, {%5, %6}];"
               : "=f"(r.x), "=f"(r.y), "=f"(r.z), "=f"(r.w)
               : "l"(t), "f"(x), "f"(y));
  return r;
}

// a fetch whose residency predicate is the second half of the destination
__device__ __forceinline__ float tex2d_resident(cudaTextureObject_t t, float x, float y, bool* ok) {
  float a, b, c, d;
  unsigned res;
  asm volatile(
      "{\n\t"
      ".reg .pred p;\n\t"
      "tex.2d.v4.f32.f32 {%0, %1, %2, %3}|p, [%5, {%6, %7}];\n\t"
      "selp.u32 %4, 1, 0, p;\n\t"
      "}"
      : "=f"(a), "=f"(b), "=f"(c), "=f"(d), "=r"(res)
      : "l"(t), "f"(x), "f"(y));
  *ok = res != 0;
  return a + b + c + d;
}

__device__ __forceinline__ void sust_2d(cudaSurfaceObject_t s, int x, int y, unsigned v) {
  asm volatile("sust.b.2d.b32.trap [%0, {%1, %2}], {%3};" ::"l"(s), "r"(x * 4), "r"(y), "r"(v)
               : "memory");
}

__device__ __forceinline__ int txq_width(cudaTextureObject_t t) {
  int w;
  asm("txq.width.b32 %0, [%1];" : "=r"(w) : "l"(t));
  return w;
}

__device__ __forceinline__ int suq_height(cudaSurfaceObject_t s) {
  int h;
  asm("suq.height.b32 %0, [%1];" : "=r"(h) : "l"(s));
  return h;
}

__global__ void sample(cudaTextureObject_t tex, cudaTextureObject_t tex1d,
                       cudaTextureObject_t texLayered, cudaTextureObject_t tex3d,
                       cudaSurfaceObject_t surf, float4* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float u = (x + 0.5f) / w, v = (y + 0.5f) / h;
  float4 a = tex2D<float4>(tex, u, v);
  float4 b = tex2DLod<float4>(tex, u, v, 1.5f);
  float4 g = tex2Dgather<float4>(tex, u, v, 2);
  float4 c = tex2DGrad<float4>(tex, u, v, make_float2(0.1f, 0.f), make_float2(0.f, 0.1f));
  int4 f = tex1Dfetch<int4>(tex1d, x);
  float4 l = tex2DLayered<float4>(texLayered, u, v, 3);
  float4 d3 = tex3D<float4>(tex3d, u, v, 0.25f);
  float4 e = tex2d_asm(tex, u, v);
  bool ok;
  float r = tex2d_resident(tex, u, v, &ok);
  float4 s;
  s.x = a.x + b.x + g.x + c.x + f.x + l.x + d3.x + e.x + (ok ? r : 0.f);
  s.y = a.y + b.y + g.y + c.y + f.y + l.y + d3.y + txq_width(tex);
  s.z = surf2Dread<float>(surf, x * 4, y) + suq_height(surf);
  s.w = a.w;
  surf2Dwrite(s.x, surf, x * 4, y);
  sust_2d(surf, x, y, __float_as_uint(s.y));
  out[y * w + x] = s;
}

__global__ void surface_1d_layered(cudaSurfaceObject_t s1, cudaSurfaceObject_t sl, int n) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= n) return;
  uchar4 p = surf1Dread<uchar4>(s1, x * 4, cudaBoundaryModeClamp);
  surf1Dwrite(make_uchar4(p.w, p.z, p.y, p.x), s1, x * 4, cudaBoundaryModeZero);
  float2 q = surf2DLayeredread<float2>(sl, x * 8, 0, 1);
  surf2DLayeredwrite(make_float2(q.y, q.x), sl, x * 8, 0, 1);
}
