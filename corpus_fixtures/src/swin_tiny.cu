// Tiny Swin-shaped fixture: a 32-row window block, 7 phases, 162 mma.
// This fixture writes each mma as a four-line statement (D list on the
// opcode's line); the others use five lines (opcode on a line of its own).
#define RRSWIN_MMA_D_ON_OPCODE_LINE 1
#include "swin_common.cuh"

constexpr RrPhase kSwinTiny[] = {
    {2, 8, 4, EPI_SCALE},      //  1  qkv projection        32x64x128   64 mma
    {2, 4, 1, EPI_SOFTMAX},    //  2  Q.K^T                 32x32x32     8
    {2, 4, 1, EPI_SHARED},     //  3  P.V                   32x32x32     8
    {2, 8, 1, EPI_NORM},       //  4  output projection     32x64x32    16
    {2, 12, 2, EPI_RELU},      //  5  MLP up                32x96x64    48
    {2, 4, 2, EPI_MOVMATRIX},  //  6  MLP down              32x32x64    16
    {1, 2, 1, EPI_SCALE},      //  7  output                16x16x32     2
};

// The variant family (scripts/make_fixtures.py VARIANTS) compiles this file again with
// -DRRSWIN_TINY_NAME=... and -DRRSWIN_HDR / -DRRSWIN_LDR / -DRRSWIN_MV_SCALE=... / -DRRSWIN_FOLDED.
#ifndef RRSWIN_TINY_NAME
#define RRSWIN_TINY_NAME rrswin_tiny_kernel
#endif
RRSWIN_KERNEL(RRSWIN_TINY_NAME, kSwinTiny)
