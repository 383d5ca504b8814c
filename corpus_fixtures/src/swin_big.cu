// Large Swin-shaped fixture: two window-attention blocks of three heads,
// 22 phases, 916 mma -- the size class of the denoiser's Swin layers.
#include "swin_common.cuh"

constexpr RrPhase kSwinBig[] = {
    {3, 12, 4, EPI_SCALE},     //  1  qkv projection        48x96x128  144 mma
    {3, 6, 1, EPI_SOFTMAX},    //  2  Q.K^T head 0          48x48x32    18
    {3, 4, 2, EPI_SHARED},     //  3  P.V head 0            48x32x64    24
    {3, 6, 1, EPI_SOFTMAX},    //  4  Q.K^T head 1          48x48x32    18
    {3, 4, 2, EPI_MOVMATRIX},  //  5  P.V head 1            48x32x64    24
    {3, 6, 1, EPI_SOFTMAX},    //  6  Q.K^T head 2          48x48x32    18
    {3, 4, 2, EPI_SHARED},     //  7  P.V head 2            48x32x64    24
    {3, 8, 3, EPI_NORM},       //  8  output projection     48x64x96    72
    {3, 16, 2, EPI_GELU},      //  9  MLP up                48x128x64   96
    {3, 8, 4, EPI_RELU},       // 10  MLP down              48x64x128   96
    {3, 8, 2, EPI_SCALE},      // 11  qkv projection 2      48x64x64    48
    {3, 6, 2, EPI_SOFTMAX},    // 12  Q.K^T head 0          48x48x64    36
    {3, 4, 2, EPI_SHARED},     // 13  P.V head 0            48x32x64    24
    {3, 6, 1, EPI_SOFTMAX},    // 14  Q.K^T head 1          48x48x32    18
    {3, 4, 2, EPI_MOVMATRIX},  // 15  P.V head 1            48x32x64    24
    {3, 6, 1, EPI_SOFTMAX},    // 16  Q.K^T head 2          48x48x32    18
    {3, 4, 2, EPI_SHARED},     // 17  P.V head 2            48x32x64    24
    {3, 8, 3, EPI_NORM},       // 18  output projection 2   48x64x96    72
    {3, 12, 2, EPI_GELU},      // 19  MLP up 2              48x96x64    72
    {3, 4, 3, EPI_RELU},       // 20  MLP down 2            48x32x96    36
    {2, 4, 1, EPI_SCALE},      // 21  head                  32x32x32     8
    {1, 2, 1, EPI_SCALE},      // 22  output                16x16x32     2
};

RRSWIN_KERNEL(rrswin_big_kernel, kSwinBig)
