"""Splice recipe for frag_breload (scaffolded by `rrsplice recipe new frag_breload --module
frag_breload.ptx --range s60-s748 --abi scratch`).

The cut replaces statements s60-s748 (689 statements) -- physical lines 87-1925 of
frag_breload.ptx -- with one `call.uni d4r_frag_breload`.
It holds 192 mma in 1 phase (phase 1 of `rrsplice phases`).
Phase 1 (s60-s748, lines 87-1925) is a 48x128x128 m16n8k32 GEMM: 192 mma in 48 chains, 3
m-tiles x 16 n-tiles x 4 k-slices, 12 A fragments.
Its B fragments come from weight image bytes [0, 15476).

Live into the region: 32 registers. Passed to the callee, in this order:
  * A_REGS: 16 registers of phase 1's A fragments, first-use order,
  * C_REGS: 1 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 15 more (pointers, special values, values some path leaves unwritten):
    %rd6 %r7 %r8 %r1926 %r1927 %r1928 %r1932 %r1934 ...,
  * the address of the scratch array.

Live out of the region (RET_REGS): 96 registers: %r31 %r32 %r71 %r72 %r111 %r112 %r151
%r152 %r191 %r192 %r231 %r232 ....
No .shared array of frag_breload can carry them (the function declares none), so the
recipe declares its own, d4r_frag_breload_scratch (12288 bytes, at module scope in the
extern text; OWN_SCRATCH).
They come back through d4r_frag_breload_scratch (12288 bytes), 384 bytes per thread at t
* 384, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y + ntid.y *
tid.z); 32 threads).

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
A_REGS (16 of 16 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r3: phase 1 tile (0, 0) r0: A[0..7][0..15]: row = g, k = 4t + e
  %r4: phase 1 tile (0, 0) r1: A[8..15][0..15]: row = 8 + g, k = 4t + e
  %r5: phase 1 tile (0, 0) r2: A[0..7][16..31]: row = g, k = 16 + 4t + e
  %r6: phase 1 tile (0, 0) r3: A[8..15][16..31]: row = 8 + g, k = 16 + 4t + e
  %r13: phase 1 tile (0, 1) r0: A[0..7][32..47]: row = g, k = 32 + 4t + e
  %r14: phase 1 tile (0, 1) r1: A[8..15][32..47]: row = 8 + g, k = 32 + 4t + e
  %r15: phase 1 tile (0, 1) r2: A[0..7][48..63]: row = g, k = 48 + 4t + e
  %r16: phase 1 tile (0, 1) r3: A[8..15][48..63]: row = 8 + g, k = 48 + 4t + e
  %r23: phase 1 tile (0, 2) r0: A[0..7][64..79]: row = g, k = 64 + 4t + e
  %r24: phase 1 tile (0, 2) r1: A[8..15][64..79]: row = 8 + g, k = 64 + 4t + e
  %r25: phase 1 tile (0, 2) r2: A[0..7][80..95]: row = g, k = 80 + 4t + e
  %r26: phase 1 tile (0, 2) r3: A[8..15][80..95]: row = 8 + g, k = 80 + 4t + e
  %r33: phase 1 tile (0, 3) r0: A[0..7][96..111]: row = g, k = 96 + 4t + e
  %r34: phase 1 tile (0, 3) r1: A[8..15][96..111]: row = 8 + g, k = 96 + 4t + e
  %r35: phase 1 tile (0, 3) r2: A[0..7][112..127]: row = g, k = 112 + 4t + e
  %r36: phase 1 tile (0, 3) r3: A[8..15][112..127]: row = 8 + g, k = 112 + 4t + e
C_REGS (1 of 1 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r9: phase 1 tile (0, 0) r0: C[0..7][0..7]: row = g, n = 2t + e
       phase 1 tile (0, 0) r1: C[8..15][0..7]: row = 8 + g, n = 2t + e
RET_REGS (96 of 96 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within
the register):
  %r31: phase 1 tile (0, 0) r0: D[0..7][0..7]: row = g, n = 2t + e
  %r32: phase 1 tile (0, 0) r1: D[8..15][0..7]: row = 8 + g, n = 2t + e
  %r71: phase 1 tile (0, 1) r0: D[0..7][8..15]: row = g, n = 8 + 2t + e
  %r72: phase 1 tile (0, 1) r1: D[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
  %r111: phase 1 tile (0, 2) r0: D[0..7][16..23]: row = g, n = 16 + 2t + e
  %r112: phase 1 tile (0, 2) r1: D[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
  %r151: phase 1 tile (0, 3) r0: D[0..7][24..31]: row = g, n = 24 + 2t + e
  %r152: phase 1 tile (0, 3) r1: D[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
  %r191: phase 1 tile (0, 4) r0: D[0..7][32..39]: row = g, n = 32 + 2t + e
  %r192: phase 1 tile (0, 4) r1: D[8..15][32..39]: row = 8 + g, n = 32 + 2t + e
  %r231: phase 1 tile (0, 5) r0: D[0..7][40..47]: row = g, n = 40 + 2t + e
  %r232: phase 1 tile (0, 5) r1: D[8..15][40..47]: row = 8 + g, n = 40 + 2t + e
  %r271: phase 1 tile (0, 6) r0: D[0..7][48..55]: row = g, n = 48 + 2t + e
  %r272: phase 1 tile (0, 6) r1: D[8..15][48..55]: row = 8 + g, n = 48 + 2t + e
  %r311: phase 1 tile (0, 7) r0: D[0..7][56..63]: row = g, n = 56 + 2t + e
  %r312: phase 1 tile (0, 7) r1: D[8..15][56..63]: row = 8 + g, n = 56 + 2t + e
  %r351: phase 1 tile (0, 8) r0: D[0..7][64..71]: row = g, n = 64 + 2t + e
  %r352: phase 1 tile (0, 8) r1: D[8..15][64..71]: row = 8 + g, n = 64 + 2t + e
  %r391: phase 1 tile (0, 9) r0: D[0..7][72..79]: row = g, n = 72 + 2t + e
  %r392: phase 1 tile (0, 9) r1: D[8..15][72..79]: row = 8 + g, n = 72 + 2t + e
  %r431: phase 1 tile (0, 10) r0: D[0..7][80..87]: row = g, n = 80 + 2t + e
  %r432: phase 1 tile (0, 10) r1: D[8..15][80..87]: row = 8 + g, n = 80 + 2t + e
  %r471: phase 1 tile (0, 11) r0: D[0..7][88..95]: row = g, n = 88 + 2t + e
  %r472: phase 1 tile (0, 11) r1: D[8..15][88..95]: row = 8 + g, n = 88 + 2t + e
  %r511: phase 1 tile (0, 12) r0: D[0..7][96..103]: row = g, n = 96 + 2t + e
  %r512: phase 1 tile (0, 12) r1: D[8..15][96..103]: row = 8 + g, n = 96 + 2t + e
  %r551: phase 1 tile (0, 13) r0: D[0..7][104..111]: row = g, n = 104 + 2t + e
  %r552: phase 1 tile (0, 13) r1: D[8..15][104..111]: row = 8 + g, n = 104 + 2t + e
  %r591: phase 1 tile (0, 14) r0: D[0..7][112..119]: row = g, n = 112 + 2t + e
  %r592: phase 1 tile (0, 14) r1: D[8..15][112..119]: row = 8 + g, n = 112 + 2t + e
  %r631: phase 1 tile (0, 15) r0: D[0..7][120..127]: row = g, n = 120 + 2t + e
  %r632: phase 1 tile (0, 15) r1: D[8..15][120..127]: row = 8 + g, n = 120 + 2t + e
  %r671: phase 1 tile (1, 0) r0: D[16..23][0..7]: row = 16 + g, n = 2t + e
  %r672: phase 1 tile (1, 0) r1: D[24..31][0..7]: row = 24 + g, n = 2t + e
  %r711: phase 1 tile (1, 1) r0: D[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
  %r712: phase 1 tile (1, 1) r1: D[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
  %r751: phase 1 tile (1, 2) r0: D[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
  %r752: phase 1 tile (1, 2) r1: D[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
  %r791: phase 1 tile (1, 3) r0: D[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
  %r792: phase 1 tile (1, 3) r1: D[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
  %r831: phase 1 tile (1, 4) r0: D[16..23][32..39]: row = 16 + g, n = 32 + 2t + e
  %r832: phase 1 tile (1, 4) r1: D[24..31][32..39]: row = 24 + g, n = 32 + 2t + e
  %r871: phase 1 tile (1, 5) r0: D[16..23][40..47]: row = 16 + g, n = 40 + 2t + e
  %r872: phase 1 tile (1, 5) r1: D[24..31][40..47]: row = 24 + g, n = 40 + 2t + e
  %r911: phase 1 tile (1, 6) r0: D[16..23][48..55]: row = 16 + g, n = 48 + 2t + e
  %r912: phase 1 tile (1, 6) r1: D[24..31][48..55]: row = 24 + g, n = 48 + 2t + e
  %r951: phase 1 tile (1, 7) r0: D[16..23][56..63]: row = 16 + g, n = 56 + 2t + e
  %r952: phase 1 tile (1, 7) r1: D[24..31][56..63]: row = 24 + g, n = 56 + 2t + e
  %r991: phase 1 tile (1, 8) r0: D[16..23][64..71]: row = 16 + g, n = 64 + 2t + e
  %r992: phase 1 tile (1, 8) r1: D[24..31][64..71]: row = 24 + g, n = 64 + 2t + e
  %r1031: phase 1 tile (1, 9) r0: D[16..23][72..79]: row = 16 + g, n = 72 + 2t + e
  %r1032: phase 1 tile (1, 9) r1: D[24..31][72..79]: row = 24 + g, n = 72 + 2t + e
  %r1071: phase 1 tile (1, 10) r0: D[16..23][80..87]: row = 16 + g, n = 80 + 2t + e
  %r1072: phase 1 tile (1, 10) r1: D[24..31][80..87]: row = 24 + g, n = 80 + 2t + e
  %r1111: phase 1 tile (1, 11) r0: D[16..23][88..95]: row = 16 + g, n = 88 + 2t + e
  %r1112: phase 1 tile (1, 11) r1: D[24..31][88..95]: row = 24 + g, n = 88 + 2t + e
  %r1151: phase 1 tile (1, 12) r0: D[16..23][96..103]: row = 16 + g, n = 96 + 2t + e
  %r1152: phase 1 tile (1, 12) r1: D[24..31][96..103]: row = 24 + g, n = 96 + 2t + e
  %r1191: phase 1 tile (1, 13) r0: D[16..23][104..111]: row = 16 + g, n = 104 + 2t + e
  %r1192: phase 1 tile (1, 13) r1: D[24..31][104..111]: row = 24 + g, n = 104 + 2t + e
  %r1231: phase 1 tile (1, 14) r0: D[16..23][112..119]: row = 16 + g, n = 112 + 2t + e
  %r1232: phase 1 tile (1, 14) r1: D[24..31][112..119]: row = 24 + g, n = 112 + 2t + e
  %r1271: phase 1 tile (1, 15) r0: D[16..23][120..127]: row = 16 + g, n = 120 + 2t + e
  %r1272: phase 1 tile (1, 15) r1: D[24..31][120..127]: row = 24 + g, n = 120 + 2t + e
  %r1311: phase 1 tile (2, 0) r0: D[32..39][0..7]: row = 32 + g, n = 2t + e
  %r1312: phase 1 tile (2, 0) r1: D[40..47][0..7]: row = 40 + g, n = 2t + e
  %r1351: phase 1 tile (2, 1) r0: D[32..39][8..15]: row = 32 + g, n = 8 + 2t + e
  %r1352: phase 1 tile (2, 1) r1: D[40..47][8..15]: row = 40 + g, n = 8 + 2t + e
  %r1391: phase 1 tile (2, 2) r0: D[32..39][16..23]: row = 32 + g, n = 16 + 2t + e
  %r1392: phase 1 tile (2, 2) r1: D[40..47][16..23]: row = 40 + g, n = 16 + 2t + e
  %r1431: phase 1 tile (2, 3) r0: D[32..39][24..31]: row = 32 + g, n = 24 + 2t + e
  %r1432: phase 1 tile (2, 3) r1: D[40..47][24..31]: row = 40 + g, n = 24 + 2t + e
  %r1471: phase 1 tile (2, 4) r0: D[32..39][32..39]: row = 32 + g, n = 32 + 2t + e
  %r1472: phase 1 tile (2, 4) r1: D[40..47][32..39]: row = 40 + g, n = 32 + 2t + e
  %r1511: phase 1 tile (2, 5) r0: D[32..39][40..47]: row = 32 + g, n = 40 + 2t + e
  %r1512: phase 1 tile (2, 5) r1: D[40..47][40..47]: row = 40 + g, n = 40 + 2t + e
  %r1551: phase 1 tile (2, 6) r0: D[32..39][48..55]: row = 32 + g, n = 48 + 2t + e
  %r1552: phase 1 tile (2, 6) r1: D[40..47][48..55]: row = 40 + g, n = 48 + 2t + e
  %r1591: phase 1 tile (2, 7) r0: D[32..39][56..63]: row = 32 + g, n = 56 + 2t + e
  %r1592: phase 1 tile (2, 7) r1: D[40..47][56..63]: row = 40 + g, n = 56 + 2t + e
  %r1631: phase 1 tile (2, 8) r0: D[32..39][64..71]: row = 32 + g, n = 64 + 2t + e
  %r1632: phase 1 tile (2, 8) r1: D[40..47][64..71]: row = 40 + g, n = 64 + 2t + e
  %r1671: phase 1 tile (2, 9) r0: D[32..39][72..79]: row = 32 + g, n = 72 + 2t + e
  %r1672: phase 1 tile (2, 9) r1: D[40..47][72..79]: row = 40 + g, n = 72 + 2t + e
  %r1711: phase 1 tile (2, 10) r0: D[32..39][80..87]: row = 32 + g, n = 80 + 2t + e
  %r1712: phase 1 tile (2, 10) r1: D[40..47][80..87]: row = 40 + g, n = 80 + 2t + e
  %r1751: phase 1 tile (2, 11) r0: D[32..39][88..95]: row = 32 + g, n = 88 + 2t + e
  %r1752: phase 1 tile (2, 11) r1: D[40..47][88..95]: row = 40 + g, n = 88 + 2t + e
  %r1791: phase 1 tile (2, 12) r0: D[32..39][96..103]: row = 32 + g, n = 96 + 2t + e
  %r1792: phase 1 tile (2, 12) r1: D[40..47][96..103]: row = 40 + g, n = 96 + 2t + e
  %r1831: phase 1 tile (2, 13) r0: D[32..39][104..111]: row = 32 + g, n = 104 + 2t + e
  %r1832: phase 1 tile (2, 13) r1: D[40..47][104..111]: row = 40 + g, n = 104 + 2t + e
  %r1871: phase 1 tile (2, 14) r0: D[32..39][112..119]: row = 32 + g, n = 112 + 2t + e
  %r1872: phase 1 tile (2, 14) r1: D[40..47][112..119]: row = 40 + g, n = 112 + 2t + e
  %r1911: phase 1 tile (2, 15) r0: D[32..39][120..127]: row = 32 + g, n = 120 + 2t + e
  %r1912: phase 1 tile (2, 15) r1: D[40..47][120..127]: row = 40 + g, n = 120 + 2t + e
Note: no .shared array of frag_breload can carry the returns (the function declares
none): the recipe declares its own, d4r_frag_breload_scratch (12288 bytes = 384 x 32
threads)
"""

MODULE = '../corpus_fixtures/frag/frag_breload.ptx'
ENTRY = 'frag_breload'
# qualifies this recipe's debug-stage names (frag_breload.NAME)
LAYER = 'frag_breload'
CALLEE = 'd4r_frag_breload'
# "call.uni" where every lane of the warp reaches the cut together; "call" where a per-lane
# branch decides who does (PTX defines call.uni only for a non-divergent call)
CALL_OPCODE = 'call.uni'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (87, 1926)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'scratch'

# the region's first phase's A fragments, in the order its mma first use them
A_REGS = [
    "%r3", "%r4", "%r5", "%r6",
    "%r13", "%r14", "%r15", "%r16",
    "%r23", "%r24", "%r25", "%r26",
    "%r33", "%r34", "%r35", "%r36",
]

# the region's first phase's bias seeds, in weight-image offset order
C_REGS = [
    "%r9",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%rd6", "%r7", "%r8", "%r1926",
    "%r1927", "%r1928", "%r1932", "%r1934",
    "%r1936", "%rd5", "%rd8", "%rd10",
    "%rd11", "%rd20", "%rd21",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r31", "%r32", "%r71", "%r72",
    "%r111", "%r112", "%r151", "%r152",
    "%r191", "%r192", "%r231", "%r232",
    "%r271", "%r272", "%r311", "%r312",
    "%r351", "%r352", "%r391", "%r392",
    "%r431", "%r432", "%r471", "%r472",
    "%r511", "%r512", "%r551", "%r552",
    "%r591", "%r592", "%r631", "%r632",
    "%r671", "%r672", "%r711", "%r712",
    "%r751", "%r752", "%r791", "%r792",
    "%r831", "%r832", "%r871", "%r872",
    "%r911", "%r912", "%r951", "%r952",
    "%r991", "%r992", "%r1031", "%r1032",
    "%r1071", "%r1072", "%r1111", "%r1112",
    "%r1151", "%r1152", "%r1191", "%r1192",
    "%r1231", "%r1232", "%r1271", "%r1272",
    "%r1311", "%r1312", "%r1351", "%r1352",
    "%r1391", "%r1392", "%r1431", "%r1432",
    "%r1471", "%r1472", "%r1511", "%r1512",
    "%r1551", "%r1552", "%r1591", "%r1592",
    "%r1631", "%r1632", "%r1671", "%r1672",
    "%r1711", "%r1712", "%r1751", "%r1752",
    "%r1791", "%r1792", "%r1831", "%r1832",
    "%r1871", "%r1872", "%r1911", "%r1912",
]

# the region's first statement, a label that code outside the region branches to: the
# splice text begins with it (the cut removes it from the kernel)
HEAD_LABELS = []

# labels outside the region it branches to, besides the statement right after it: the
# callee returns an exit index (after RET_REGS; 0 = go on after the call) and the call
# text branches to EXITS[index - 1]
EXITS = []
_RETURNS = RET_REGS + (["%rrsx"] if EXITS else [])

# how each register crosses the call when it is not a .b32
REG_TYPES = {
    "%rd10": ".b64",
    "%rd11": ".b64",
    "%rd20": ".b64",
    "%rd21": ".b64",
    "%rd5": ".b64",
    "%rd6": ".b64",
    "%rd8": ".b64",
}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = []

SCRATCH = 'd4r_frag_breload_scratch'
# bytes of the recipe's own .shared array SCRATCH (declared by extern()), when no array of
# the kernel could carry the returns; None when SCRATCH is the kernel's own
OWN_SCRATCH = 12288
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS = 'thread'
W_REG = '%rd6'
V_REG = None
# kernel parameters by role ("NAME+OFFSET"; rrsplice.analysis.paramroles): the pointer the B fragments
# load from, the one the bias seeds load from, and the one a debug stage's built-in block
# stores through -- one the kernel only writes (`check --debug` refuses a pointer the kernel
# reads through, or an offset past the parameter's end; `--debug-param` overrides it)
W_PARAM = 'frag_breload_param_1+0'
BIAS_PARAM = 'frag_breload_param_2+0'
DEBUG_PARAM = 'frag_breload_param_3+0'
# `bar.sync 0` after the scratch reads: the block may run several warps and the kernel uses
# the scratch array itself; the native body must execute a block barrier before its stores
BLOCK_BARRIER = False

_SIZE = {".b16": 2, ".b32": 4, ".b64": 8, ".pred": 4, ".v2.b16": 4, ".v4.b16": 8,
         ".v2.b32": 8, ".v4.b32": 16, ".v2.b64": 16, ".v4.b64": 32}


def _type(reg):
    return REG_TYPES.get(reg, ".b32")


def _ret_layout():
    """(register, byte offset) of each returned value in a lane's slot, and the slot size."""
    off, out, align = 0, [], 4
    for r in _RETURNS:
        n = max(_SIZE[_type(r)], 4)
        align = max(align, n)
        off = (off + n - 1) // n * n
        out.append((r, off))
        off += n
    return out, ((off + align - 1) // align * align if off else 0)


RET_STRIDE = _ret_layout()[1]
# the .param return array's alignment: a vector register is read back whole from it
RET_ALIGN = max([8] + [_SIZE[_type(r)] for r in _RETURNS if _type(r).startswith(".v")])


def _param_type(reg):
    """How `reg` is stored into its parameter: a predicate as a .b32 1/0, a vector
    register whole (`st.param.v2.b32`)."""
    t = _type(reg)
    return ".b32" if t == ".pred" else t


def _param_decl(reg, name):
    """The .param declaration carrying `reg`: a vector register's is an aligned byte array."""
    t = _param_type(reg)
    if t.startswith(".v"):
        return ".align %d .b8 %s[%d]" % (_SIZE[t], name, _SIZE[t])
    return "%s %s" % (t, name)


def _elements(reg):
    """(operand, type, byte offset) of each part a returned `reg` is read back as: from a
    scratch slot (whose address is aligned only to 4) a vector register element by element
    (`%v.x`, `%v.y`, ...), anything else whole."""
    t = _type(reg)
    if not t.startswith(".v") or ABI == "param":
        return [(reg, t, 0)]
    n, et = int(t[2]), t[3:]
    return [("%s.%s" % (reg, "xyzw"[k]), et, k * _SIZE[et]) for k in range(n)]


def cut_call():
    """The PTX that replaces the region. Special registers are read with mov only."""
    args = A_REGS + C_REGS + OTHER_REGS
    lines = ["%s:" % lab for lab in HEAD_LABELS] + ["{", "\t.reg .b32 %rrs<4>;"]
    if EXITS:
        lines += ["\t.reg .b32 %rrsx;", "\t.reg .pred %rrsq;"]
    if SHARED:
        lines.append("\t.reg .b32 %%rrsb<%d>;" % len(SHARED))
    names = []
    for i, r in enumerate(args):
        lines.append("\t.param %s;" % _param_decl(r, "p%d" % i))
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
    if ABI == "scratch" and _RETURNS:
        lines.append("\t.param .b32 ps;")
        lines.append("\tmov.u32 %%rrs0, %s;" % SCRATCH)
        lines.append("\tst.param.b32 [ps+0], %rrs0;")
        names.append("ps")
    if ABI == "param" and _RETURNS:
        lines.append("\t.param .align %d .b8 rv[%d];" % (RET_ALIGN, size))
    call = "\t%s " % CALL_OPCODE
    if ABI == "param" and _RETURNS:
        call += "(rv), "
    call += CALLEE
    if names:
        call += ", (" + ", ".join(names) + ")"
    lines.append(call + ";")
    if ABI == "scratch" and _RETURNS:
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
            continue
        for part, t, k in _elements(r):
            src = "[%%rrs2+%d]" % (off + k) if ABI == "scratch" else "[rv+%d]" % (off + k)
            lines.append("\tld.%s%s %s, %s;" % (space, t, part, src))
    if ABI == "scratch" and _RETURNS and BLOCK_BARRIER:
        # every warp has read its slot before any warp reuses the array
        lines.append("\tbar.sync 0;")
    for k, label in enumerate(EXITS, 1):
        lines.append("\tsetp.eq.u32 %%rrsq, %%rrsx, %d;" % k)
        lines.append("\t@%%rrsq bra %s;" % label)
    lines.append("}")
    return "\n".join(lines)


def extern():
    """The .extern .func declaration of the callee, matching cut_call()'s arguments."""
    args = A_REGS + C_REGS + OTHER_REGS
    params = [".param %s" % _param_decl(r, "%s_p%d" % (CALLEE, i)) for i, r in enumerate(args)]
    params += [".param .b32 %s_shared%d" % (CALLEE, i) for i in range(len(SHARED))]
    if ABI == "scratch" and _RETURNS:
        params.append(".param .b32 %s_scratch" % CALLEE)
    own = ""
    if OWN_SCRATCH:
        own = ".shared .align 16 .b8 %s[%d];\n" % (SCRATCH, OWN_SCRATCH)
    ret = ""
    if ABI == "param" and _RETURNS:
        ret = "(.param .align %d .b8 %s_ret[%d]) " % (RET_ALIGN, CALLEE, _ret_layout()[1])
    text = own + ".extern .func %s%s" % (ret, CALLEE)
    if params:
        text += "\n(\n\t" + ",\n\t".join(params) + "\n)"
    return text + "\n;\n"


def recipe():
    """make_ptx.py's recipe for this kernel."""
    return dict(file=MODULE, cut_call=CUT_CALL, call=cut_call(), extern=extern())
