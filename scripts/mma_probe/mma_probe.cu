// One warp per tile: D = mma.sync.m16n8k32.row.col.f16.e4m3.e4m3.f16(A, B, C).
// A: [tiles][16][32] e4m3 row-major; B: [tiles][32][8] e4m3 (k-major: B[k][n]);
// C, D: [tiles][16][8] f16 row-major. Fragments placed as PTX ISA 9.7.14.5.10 says
// (g = lane >> 2, t = lane % 4): A reg j holds row g + 8*(j & 1), k 4t + 16*(j >> 1) + e;
// B reg j holds k 4t + 16*j + e, column g; C/D reg j holds row g + 8*j, columns 2t, 2t + 1.
#include <stdint.h>

extern "C" __global__ void mma_tiles(const uint8_t* A, const uint8_t* B, const uint16_t* C,
                                     uint16_t* D, int tiles)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int lane = threadIdx.x & 31;
    if (warp >= tiles) return;
    int g = lane >> 2, t = lane & 3;
    const uint8_t* a = A + (size_t)warp * 512;
    const uint8_t* b = B + (size_t)warp * 256;
    const uint16_t* c = C + (size_t)warp * 128;
    uint16_t* d = D + (size_t)warp * 128;
    uint32_t ar[4], br[2], cr[2], dr[2];
    for (int j = 0; j < 4; ++j) {
        int row = g + 8 * (j & 1), k = 4 * t + 16 * (j >> 1);
        ar[j] = 0;
        for (int e = 0; e < 4; ++e) ar[j] |= (uint32_t)a[row * 32 + k + e] << (8 * e);
    }
    for (int j = 0; j < 2; ++j) {
        int k = 4 * t + 16 * j;
        br[j] = 0;
        for (int e = 0; e < 4; ++e) br[j] |= (uint32_t)b[(k + e) * 8 + g] << (8 * e);
    }
    for (int j = 0; j < 2; ++j) {
        int row = g + 8 * j;
        cr[j] = (uint32_t)c[row * 8 + 2 * t] | ((uint32_t)c[row * 8 + 2 * t + 1] << 16);
    }
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16 {%0, %1}, "
                 "{%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
                 : "=r"(dr[0]), "=r"(dr[1])
                 : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                   "r"(cr[0]), "r"(cr[1]));
    for (int j = 0; j < 2; ++j) {
        int row = g + 8 * j;
        d[row * 8 + 2 * t] = (uint16_t)(dr[j] & 0xffff);
        d[row * 8 + 2 * t + 1] = (uint16_t)(dr[j] >> 16);
    }
}
