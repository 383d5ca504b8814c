// Mid-sized Swin-shaped fixture: one window-attention block, 8 phases, 364 mma.
#include "swin_common.cuh"

constexpr RrPhase kSwinSmall[] = {
    {3, 12, 4, EPI_SCALE},     // 1  qkv projection      48x96x128  144 mma
    {3, 6, 1, EPI_SOFTMAX},    // 2  Q.K^T              48x48x32    18 mma
    {3, 4, 2, EPI_SHARED},     // 3  P.V                48x32x64    24 mma
    {3, 8, 1, EPI_NORM},       // 4  output projection  48x64x32    24 mma
    {3, 16, 2, EPI_GELU},      // 5  MLP up             48x128x64   96 mma
    {3, 4, 4, EPI_MOVMATRIX},  // 6  MLP down           48x32x128   48 mma
    {2, 4, 1, EPI_RELU},       // 7  head               32x32x32     8 mma
    {1, 2, 1, EPI_SCALE},      // 8  output             16x16x32     2 mma
};

RRSWIN_KERNEL(rrswin_small_kernel, kSwinSmall)
