"""Splice recipe for rrswin_big_kernel (scaffolded by `rrsplice recipe new swin_big_sm120
--module swin_big_sm120.ptx --range s415-s16224 --abi scratch`).

The cut replaces statements s415-s16224 (15810 statements) -- physical lines 1151-43501
of swin_big_sm120.ptx -- with one `call.uni d4r_swin_big_sm120`.
It holds 916 mma in 22 phase(s).
Phase 1 (s415-s558, lines 1151-2156) is a 48x96x128 m16n8k32 GEMM: 144 mma in 36 chains,
3 m-tiles x 12 n-tiles x 4 k-slices, 12 A fragments.
Its 12 bias seeds are loaded from the weight image at +49152..+49328.
Its B fragments come from weight image bytes [0, 11792).

Live into the region: 163 registers. Passed to the callee, in this order:
  * A_REGS: 48 registers of phase 1's A fragments, first-use order,
  * C_REGS: 12 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 103 more (pointers, special values, values some path leaves unwritten):
    %r543 %r544 %r545 %r546 %r547 %r548 %r549 %r550 ...,
  * the address of the scratch array.

Live out of the region (RET_REGS): 6 registers: %r24820 %r24821 %r24830 %r24831 %r24910
%r24912.
They come back through _ZZ17rrswin_big_kernelE4smem (12288 bytes), 24 bytes per thread
at t * 24, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y + ntid.y
* tid.z); 128 threads).

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
A_REGS (48 of 48 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r33: phase 1 tile (0, 0) r0: A[0..7][0..15]: row = g, k = 4t + e
  %r36: phase 1 tile (0, 0) r1: A[8..15][0..15]: row = 8 + g, k = 4t + e
  %r55: phase 1 tile (0, 0) r2: A[0..7][16..31]: row = g, k = 16 + 4t + e
  %r58: phase 1 tile (0, 0) r3: A[8..15][16..31]: row = 8 + g, k = 16 + 4t + e
  %r77: phase 1 tile (0, 1) r0: A[0..7][32..47]: row = g, k = 32 + 4t + e
  %r80: phase 1 tile (0, 1) r1: A[8..15][32..47]: row = 8 + g, k = 32 + 4t + e
  %r99: phase 1 tile (0, 1) r2: A[0..7][48..63]: row = g, k = 48 + 4t + e
  %r102: phase 1 tile (0, 1) r3: A[8..15][48..63]: row = 8 + g, k = 48 + 4t + e
  %r121: phase 1 tile (0, 2) r0: A[0..7][64..79]: row = g, k = 64 + 4t + e
  %r124: phase 1 tile (0, 2) r1: A[8..15][64..79]: row = 8 + g, k = 64 + 4t + e
  %r143: phase 1 tile (0, 2) r2: A[0..7][80..95]: row = g, k = 80 + 4t + e
  %r146: phase 1 tile (0, 2) r3: A[8..15][80..95]: row = 8 + g, k = 80 + 4t + e
  %r165: phase 1 tile (0, 3) r0: A[0..7][96..111]: row = g, k = 96 + 4t + e
  %r168: phase 1 tile (0, 3) r1: A[8..15][96..111]: row = 8 + g, k = 96 + 4t + e
  %r187: phase 1 tile (0, 3) r2: A[0..7][112..127]: row = g, k = 112 + 4t + e
  %r190: phase 1 tile (0, 3) r3: A[8..15][112..127]: row = 8 + g, k = 112 + 4t + e
  %r209: phase 1 tile (1, 0) r0: A[16..23][0..15]: row = 16 + g, k = 4t + e
  %r212: phase 1 tile (1, 0) r1: A[24..31][0..15]: row = 24 + g, k = 4t + e
  %r231: phase 1 tile (1, 0) r2: A[16..23][16..31]: row = 16 + g, k = 16 + 4t + e
  %r234: phase 1 tile (1, 0) r3: A[24..31][16..31]: row = 24 + g, k = 16 + 4t + e
  %r253: phase 1 tile (1, 1) r0: A[16..23][32..47]: row = 16 + g, k = 32 + 4t + e
  %r256: phase 1 tile (1, 1) r1: A[24..31][32..47]: row = 24 + g, k = 32 + 4t + e
  %r275: phase 1 tile (1, 1) r2: A[16..23][48..63]: row = 16 + g, k = 48 + 4t + e
  %r278: phase 1 tile (1, 1) r3: A[24..31][48..63]: row = 24 + g, k = 48 + 4t + e
  %r297: phase 1 tile (1, 2) r0: A[16..23][64..79]: row = 16 + g, k = 64 + 4t + e
  %r300: phase 1 tile (1, 2) r1: A[24..31][64..79]: row = 24 + g, k = 64 + 4t + e
  %r319: phase 1 tile (1, 2) r2: A[16..23][80..95]: row = 16 + g, k = 80 + 4t + e
  %r322: phase 1 tile (1, 2) r3: A[24..31][80..95]: row = 24 + g, k = 80 + 4t + e
  %r341: phase 1 tile (1, 3) r0: A[16..23][96..111]: row = 16 + g, k = 96 + 4t + e
  %r344: phase 1 tile (1, 3) r1: A[24..31][96..111]: row = 24 + g, k = 96 + 4t + e
  %r363: phase 1 tile (1, 3) r2: A[16..23][112..127]: row = 16 + g, k = 112 + 4t + e
  %r366: phase 1 tile (1, 3) r3: A[24..31][112..127]: row = 24 + g, k = 112 + 4t + e
  %r385: phase 1 tile (2, 0) r0: A[32..39][0..15]: row = 32 + g, k = 4t + e
  %r388: phase 1 tile (2, 0) r1: A[40..47][0..15]: row = 40 + g, k = 4t + e
  %r407: phase 1 tile (2, 0) r2: A[32..39][16..31]: row = 32 + g, k = 16 + 4t + e
  %r410: phase 1 tile (2, 0) r3: A[40..47][16..31]: row = 40 + g, k = 16 + 4t + e
  %r429: phase 1 tile (2, 1) r0: A[32..39][32..47]: row = 32 + g, k = 32 + 4t + e
  %r432: phase 1 tile (2, 1) r1: A[40..47][32..47]: row = 40 + g, k = 32 + 4t + e
  %r451: phase 1 tile (2, 1) r2: A[32..39][48..63]: row = 32 + g, k = 48 + 4t + e
  %r454: phase 1 tile (2, 1) r3: A[40..47][48..63]: row = 40 + g, k = 48 + 4t + e
  %r473: phase 1 tile (2, 2) r0: A[32..39][64..79]: row = 32 + g, k = 64 + 4t + e
  %r476: phase 1 tile (2, 2) r1: A[40..47][64..79]: row = 40 + g, k = 64 + 4t + e
  %r495: phase 1 tile (2, 2) r2: A[32..39][80..95]: row = 32 + g, k = 80 + 4t + e
  %r498: phase 1 tile (2, 2) r3: A[40..47][80..95]: row = 40 + g, k = 80 + 4t + e
  %r517: phase 1 tile (2, 3) r0: A[32..39][96..111]: row = 32 + g, k = 96 + 4t + e
  %r520: phase 1 tile (2, 3) r1: A[40..47][96..111]: row = 40 + g, k = 96 + 4t + e
  %r539: phase 1 tile (2, 3) r2: A[32..39][112..127]: row = 32 + g, k = 112 + 4t + e
  %r542: phase 1 tile (2, 3) r3: A[40..47][112..127]: row = 40 + g, k = 112 + 4t + e
C_REGS (12 of 12 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r639: phase 1 tile (0, 0) r0: C[0..7][0..7]: row = g, n = 2t + e
         phase 1 tile (0, 0) r1: C[8..15][0..7]: row = 8 + g, n = 2t + e
         phase 1 tile (1, 0) r0: C[16..23][0..7]: row = 16 + g, n = 2t + e
         phase 1 tile (1, 0) r1: C[24..31][0..7]: row = 24 + g, n = 2t + e
         phase 1 tile (2, 0) r0: C[32..39][0..7]: row = 32 + g, n = 2t + e
         phase 1 tile (2, 0) r1: C[40..47][0..7]: row = 40 + g, n = 2t + e
             weight byte = 49152 + 192*warp + 2*e
  %r640: phase 1 tile (0, 1) r0: C[0..7][8..15]: row = g, n = 8 + 2t + e
         phase 1 tile (0, 1) r1: C[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
         phase 1 tile (1, 1) r0: C[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
         phase 1 tile (1, 1) r1: C[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
         phase 1 tile (2, 1) r0: C[32..39][8..15]: row = 32 + g, n = 8 + 2t + e
         phase 1 tile (2, 1) r1: C[40..47][8..15]: row = 40 + g, n = 8 + 2t + e
             weight byte = 49168 + 192*warp + 2*e
  %r641: phase 1 tile (0, 2) r0: C[0..7][16..23]: row = g, n = 16 + 2t + e
         phase 1 tile (0, 2) r1: C[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
         phase 1 tile (1, 2) r0: C[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
         phase 1 tile (1, 2) r1: C[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
         phase 1 tile (2, 2) r0: C[32..39][16..23]: row = 32 + g, n = 16 + 2t + e
         phase 1 tile (2, 2) r1: C[40..47][16..23]: row = 40 + g, n = 16 + 2t + e
             weight byte = 49184 + 192*warp + 2*e
  %r642: phase 1 tile (0, 3) r0: C[0..7][24..31]: row = g, n = 24 + 2t + e
         phase 1 tile (0, 3) r1: C[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
         phase 1 tile (1, 3) r0: C[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
         phase 1 tile (1, 3) r1: C[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
         phase 1 tile (2, 3) r0: C[32..39][24..31]: row = 32 + g, n = 24 + 2t + e
         phase 1 tile (2, 3) r1: C[40..47][24..31]: row = 40 + g, n = 24 + 2t + e
             weight byte = 49200 + 192*warp + 2*e
  %r643: phase 1 tile (0, 4) r0: C[0..7][32..39]: row = g, n = 32 + 2t + e
         phase 1 tile (0, 4) r1: C[8..15][32..39]: row = 8 + g, n = 32 + 2t + e
         phase 1 tile (1, 4) r0: C[16..23][32..39]: row = 16 + g, n = 32 + 2t + e
         phase 1 tile (1, 4) r1: C[24..31][32..39]: row = 24 + g, n = 32 + 2t + e
         phase 1 tile (2, 4) r0: C[32..39][32..39]: row = 32 + g, n = 32 + 2t + e
         phase 1 tile (2, 4) r1: C[40..47][32..39]: row = 40 + g, n = 32 + 2t + e
             weight byte = 49216 + 192*warp + 2*e
  %r644: phase 1 tile (0, 5) r0: C[0..7][40..47]: row = g, n = 40 + 2t + e
         phase 1 tile (0, 5) r1: C[8..15][40..47]: row = 8 + g, n = 40 + 2t + e
         phase 1 tile (1, 5) r0: C[16..23][40..47]: row = 16 + g, n = 40 + 2t + e
         phase 1 tile (1, 5) r1: C[24..31][40..47]: row = 24 + g, n = 40 + 2t + e
         phase 1 tile (2, 5) r0: C[32..39][40..47]: row = 32 + g, n = 40 + 2t + e
         phase 1 tile (2, 5) r1: C[40..47][40..47]: row = 40 + g, n = 40 + 2t + e
             weight byte = 49232 + 192*warp + 2*e
  %r645: phase 1 tile (0, 6) r0: C[0..7][48..55]: row = g, n = 48 + 2t + e
         phase 1 tile (0, 6) r1: C[8..15][48..55]: row = 8 + g, n = 48 + 2t + e
         phase 1 tile (1, 6) r0: C[16..23][48..55]: row = 16 + g, n = 48 + 2t + e
         phase 1 tile (1, 6) r1: C[24..31][48..55]: row = 24 + g, n = 48 + 2t + e
         phase 1 tile (2, 6) r0: C[32..39][48..55]: row = 32 + g, n = 48 + 2t + e
         phase 1 tile (2, 6) r1: C[40..47][48..55]: row = 40 + g, n = 48 + 2t + e
             weight byte = 49248 + 192*warp + 2*e
  %r646: phase 1 tile (0, 7) r0: C[0..7][56..63]: row = g, n = 56 + 2t + e
         phase 1 tile (0, 7) r1: C[8..15][56..63]: row = 8 + g, n = 56 + 2t + e
         phase 1 tile (1, 7) r0: C[16..23][56..63]: row = 16 + g, n = 56 + 2t + e
         phase 1 tile (1, 7) r1: C[24..31][56..63]: row = 24 + g, n = 56 + 2t + e
         phase 1 tile (2, 7) r0: C[32..39][56..63]: row = 32 + g, n = 56 + 2t + e
         phase 1 tile (2, 7) r1: C[40..47][56..63]: row = 40 + g, n = 56 + 2t + e
             weight byte = 49264 + 192*warp + 2*e
  %r647: phase 1 tile (0, 8) r0: C[0..7][64..71]: row = g, n = 64 + 2t + e
         phase 1 tile (0, 8) r1: C[8..15][64..71]: row = 8 + g, n = 64 + 2t + e
         phase 1 tile (1, 8) r0: C[16..23][64..71]: row = 16 + g, n = 64 + 2t + e
         phase 1 tile (1, 8) r1: C[24..31][64..71]: row = 24 + g, n = 64 + 2t + e
         phase 1 tile (2, 8) r0: C[32..39][64..71]: row = 32 + g, n = 64 + 2t + e
         phase 1 tile (2, 8) r1: C[40..47][64..71]: row = 40 + g, n = 64 + 2t + e
             weight byte = 49280 + 192*warp + 2*e
  %r648: phase 1 tile (0, 9) r0: C[0..7][72..79]: row = g, n = 72 + 2t + e
         phase 1 tile (0, 9) r1: C[8..15][72..79]: row = 8 + g, n = 72 + 2t + e
         phase 1 tile (1, 9) r0: C[16..23][72..79]: row = 16 + g, n = 72 + 2t + e
         phase 1 tile (1, 9) r1: C[24..31][72..79]: row = 24 + g, n = 72 + 2t + e
         phase 1 tile (2, 9) r0: C[32..39][72..79]: row = 32 + g, n = 72 + 2t + e
         phase 1 tile (2, 9) r1: C[40..47][72..79]: row = 40 + g, n = 72 + 2t + e
             weight byte = 49296 + 192*warp + 2*e
  %r649: phase 1 tile (0, 10) r0: C[0..7][80..87]: row = g, n = 80 + 2t + e
         phase 1 tile (0, 10) r1: C[8..15][80..87]: row = 8 + g, n = 80 + 2t + e
         phase 1 tile (1, 10) r0: C[16..23][80..87]: row = 16 + g, n = 80 + 2t + e
         phase 1 tile (1, 10) r1: C[24..31][80..87]: row = 24 + g, n = 80 + 2t + e
         phase 1 tile (2, 10) r0: C[32..39][80..87]: row = 32 + g, n = 80 + 2t + e
         phase 1 tile (2, 10) r1: C[40..47][80..87]: row = 40 + g, n = 80 + 2t + e
             weight byte = 49312 + 192*warp + 2*e
  %r650: phase 1 tile (0, 11) r0: C[0..7][88..95]: row = g, n = 88 + 2t + e
         phase 1 tile (0, 11) r1: C[8..15][88..95]: row = 8 + g, n = 88 + 2t + e
         phase 1 tile (1, 11) r0: C[16..23][88..95]: row = 16 + g, n = 88 + 2t + e
         phase 1 tile (1, 11) r1: C[24..31][88..95]: row = 24 + g, n = 88 + 2t + e
         phase 1 tile (2, 11) r0: C[32..39][88..95]: row = 32 + g, n = 88 + 2t + e
         phase 1 tile (2, 11) r1: C[40..47][88..95]: row = 40 + g, n = 88 + 2t + e
             weight byte = 49328 + 192*warp + 2*e
RET_REGS (4 of 6 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r24820: phase 22 tile (0, 0) r0: D[0..7][0..7]: row = g, n = 2t + e
  %r24821: phase 22 tile (0, 0) r1: D[8..15][0..7]: row = 8 + g, n = 2t + e
  %r24830: phase 22 tile (0, 1) r0: D[0..7][8..15]: row = g, n = 8 + 2t + e
  %r24831: phase 22 tile (0, 1) r1: D[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
  not a fragment of a phase inside the cut: %r24910 %r24912

Block barrier: the block may run 128 threads (4 warps), and the kernel itself uses
_ZZ17rrswin_big_kernelE4smem (staging in and around the region), so the slots are
guarded on both sides. The native body MUST execute a block barrier (`bar.sync 0` /
`__syncthreads()`) after the region's work and before it stores its returns (no warp may
store a slot while another still uses those bytes), and the call text executes `bar.sync
0` after its scratch reads (no warp may reuse the array before every warp has read its
slot). No barrier is needed between the body's stores and the reads: a slot is stored
and read by the same thread. `rrsplice outline` mirrors the call text's barrier before
the outlined body's stores.
"""

MODULE = 'swin_big_sm120.ptx'
ENTRY = 'rrswin_big_kernel'
# qualifies this recipe's debug-stage names (big_sm120.NAME)
LAYER = 'big_sm120'
CALLEE = 'd4r_swin_big_sm120'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (1151, 43502)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'scratch'

# phase 1's A fragments, in the order its mma first use them
A_REGS = [
    "%r33", "%r36", "%r55", "%r58",
    "%r77", "%r80", "%r99", "%r102",
    "%r121", "%r124", "%r143", "%r146",
    "%r165", "%r168", "%r187", "%r190",
    "%r209", "%r212", "%r231", "%r234",
    "%r253", "%r256", "%r275", "%r278",
    "%r297", "%r300", "%r319", "%r322",
    "%r341", "%r344", "%r363", "%r366",
    "%r385", "%r388", "%r407", "%r410",
    "%r429", "%r432", "%r451", "%r454",
    "%r473", "%r476", "%r495", "%r498",
    "%r517", "%r520", "%r539", "%r542",
]

# phase 1's bias seeds, in weight-image offset order
C_REGS = [
    "%r639", "%r640", "%r641", "%r642",
    "%r643", "%r644", "%r645", "%r646",
    "%r647", "%r648", "%r649", "%r650",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%r543", "%r544", "%r545", "%r546",
    "%r547", "%r548", "%r549", "%r550",
    "%r551", "%r552", "%r553", "%r554",
    "%r555", "%r556", "%r557", "%r558",
    "%r559", "%r560", "%r561", "%r562",
    "%r563", "%r564", "%r565", "%r566",
    "%r567", "%r568", "%r569", "%r570",
    "%r571", "%r572", "%r573", "%r574",
    "%r575", "%r576", "%r577", "%r578",
    "%r579", "%r580", "%r581", "%r582",
    "%r583", "%r584", "%r585", "%r586",
    "%r587", "%r588", "%r589", "%r590",
    "%r591", "%r592", "%r593", "%r594",
    "%r595", "%r596", "%r597", "%r598",
    "%r599", "%r600", "%r601", "%r602",
    "%r603", "%r604", "%r605", "%r606",
    "%r607", "%r608", "%r609", "%r610",
    "%r611", "%r612", "%r613", "%r614",
    "%r615", "%r616", "%r617", "%r618",
    "%r619", "%r620", "%r621", "%r622",
    "%r623", "%r624", "%r625", "%r626",
    "%r627", "%r628", "%r629", "%r630",
    "%r631", "%r632", "%r633", "%r634",
    "%r635", "%r636", "%r637", "%r638",
    "%r24858", "%r24859", "%r24866", "%r24870",
    "%r24874", "%rd6", "%rd383",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r24820", "%r24821", "%r24830", "%r24831",
    "%r24910", "%r24912",
]

# how each register crosses the call when it is not a .b32
REG_TYPES = {"%rd383": ".b64", "%rd6": ".b64"}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = []

SCRATCH = '_ZZ17rrswin_big_kernelE4smem'
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS = 'thread'
W_REG = None
V_REG = None
# `bar.sync 0` after the scratch reads: the block may run several warps and the kernel uses
# the scratch array itself; the native body must execute a block barrier before its stores
BLOCK_BARRIER = True

_SIZE = {".b16": 2, ".b32": 4, ".b64": 8, ".pred": 4}


def _type(reg):
    return REG_TYPES.get(reg, ".b32")


def _ret_layout():
    """(register, byte offset) of each returned value in a lane's slot, and the slot size."""
    off, out, align = 0, [], 4
    for r in RET_REGS:
        n = max(_SIZE[_type(r)], 4)
        align = max(align, n)
        off = (off + n - 1) // n * n
        out.append((r, off))
        off += n
    return out, ((off + align - 1) // align * align if off else 0)


RET_STRIDE = _ret_layout()[1]


def _param_type(reg):
    t = _type(reg)
    return ".b32" if t == ".pred" else t


def cut_call():
    """The PTX that replaces the region. Special registers are read with mov only."""
    args = A_REGS + C_REGS + OTHER_REGS
    lines = ["{", "\t.reg .b32 %rrs<4>;"]
    if SHARED:
        lines.append("\t.reg .b32 %%rrsb<%d>;" % len(SHARED))
    names = []
    for i, r in enumerate(args):
        lines.append("\t.param %s p%d;" % (_param_type(r), i))
        if _type(r) == ".pred":
            lines.append("\tselp.u32 %%rrs3, 1, 0, %s;" % r)
            lines.append("\tst.param.b32 [p%d+0], %%rrs3;" % i)
        else:
            lines.append("\tst.param%s [p%d+0], %s;" % (_param_type(r), i, r))
        names.append("p%d" % i)
    for i, sym in enumerate(SHARED):
        lines.append("\t.param .b32 pb%d;" % i)
        lines.append("\tmov.u32 %%rrsb%d, %s;" % (i, sym))
        lines.append("\tst.param.b32 [pb%d+0], %%rrsb%d;" % (i, i))
        names.append("pb%d" % i)
    layout, size = _ret_layout()
    if ABI == "scratch" and RET_REGS:
        lines.append("\t.param .b32 ps;")
        lines.append("\tmov.u32 %%rrs0, %s;" % SCRATCH)
        lines.append("\tst.param.b32 [ps+0], %rrs0;")
        names.append("ps")
    if ABI == "param" and RET_REGS:
        lines.append("\t.param .align 8 .b8 rv[%d];" % size)
    call = "\tcall.uni "
    if ABI == "param" and RET_REGS:
        call += "(rv), "
    call += CALLEE
    if names:
        call += ", (" + ", ".join(names) + ")"
    lines.append(call + ";")
    if ABI == "scratch" and RET_REGS:
        if SLOTS == "thread":
            lines += ["\tmov.u32 %rrs1, %tid.z;", "\tmov.u32 %rrs2, %ntid.y;",
                      "\tmov.u32 %rrs3, %tid.y;", "\tmad.lo.s32 %rrs1, %rrs1, %rrs2, %rrs3;",
                      "\tmov.u32 %rrs2, %ntid.x;", "\tmov.u32 %rrs3, %tid.x;",
                      "\tmad.lo.s32 %rrs1, %rrs1, %rrs2, %rrs3;"]
        else:
            lines.append("\tmov.u32 %rrs1, %laneid;")
        lines.append("\tmad.lo.s32 %%rrs2, %%rrs1, %d, %%rrs0;" % size)
    for r, off in layout:
        src = "[%%rrs2+%d]" % off if ABI == "scratch" else "[rv+%d]" % off
        space = "shared" if ABI == "scratch" else "param"
        if _type(r) == ".pred":
            lines.append("\tld.%s.b32 %%rrs3, %s;" % (space, src))
            lines.append("\tsetp.ne.u32 %s, %%rrs3, 0;" % r)
        else:
            lines.append("\tld.%s%s %s, %s;" % (space, _type(r), r, src))
    if ABI == "scratch" and RET_REGS and BLOCK_BARRIER:
        # every warp has read its slot before any warp reuses the array
        lines.append("\tbar.sync 0;")
    lines.append("}")
    return "\n".join(lines)


def extern():
    """The .extern .func declaration of the callee, matching cut_call()'s arguments."""
    args = A_REGS + C_REGS + OTHER_REGS
    params = [".param %s %s_p%d" % (_param_type(r), CALLEE, i) for i, r in enumerate(args)]
    params += [".param .b32 %s_shared%d" % (CALLEE, i) for i in range(len(SHARED))]
    if ABI == "scratch" and RET_REGS:
        params.append(".param .b32 %s_scratch" % CALLEE)
    ret = ""
    if ABI == "param" and RET_REGS:
        ret = "(.param .align 8 .b8 %s_ret[%d]) " % (CALLEE, _ret_layout()[1])
    text = ".extern .func %s%s" % (ret, CALLEE)
    if params:
        text += "\n(\n\t" + ",\n\t".join(params) + "\n)"
    return text + "\n;\n"


def recipe():
    """make_ptx.py's recipe for this kernel."""
    return dict(file=MODULE, cut_call=CUT_CALL, call=cut_call(), extern=extern())
