"""Splice recipe for rrswin_tiny_kernel (scaffolded by `rrsplice recipe new swin_tiny_sm120
--module swin_tiny_sm120.ptx --range s297-s2349 --abi scratch`).

The cut replaces statements s297-s2349 (2053 statements) -- physical lines 801-6304 of
swin_tiny_sm120.ptx -- with one `call.uni d4r_swin_tiny_sm120`.
It holds 162 mma in 7 phase(s).
Phase 1 (s297-s360, lines 801-1182) is a 32x64x128 m16n8k32 GEMM: 64 mma in 16 chains, 2
m-tiles x 8 n-tiles x 4 k-slices, 8 A fragments.
Its 8 bias seeds are loaded from the weight image at +32768..+32880.
Its B fragments come from weight image bytes [0, 7696).

Live into the region: 111 registers. Passed to the callee, in this order:
  * A_REGS: 32 registers of phase 1's A fragments, first-use order,
  * C_REGS: 8 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 71 more (pointers, special values, values some path leaves unwritten):
    %r367 %r368 %r369 %r370 %r371 %r372 %r373 %r374 ...,
  * the address of the scratch array.

Live out of the region (RET_REGS): 6 registers: %r4079 %r4080 %r4089 %r4090 %r4160
%r4162.
They come back through _ZZ18rrswin_tiny_kernelE4smem (8192 bytes), 24 bytes per thread
at t * 24, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y + ntid.y
* tid.z); 128 threads).

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
A_REGS (32 of 32 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
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
C_REGS (8 of 8 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r431: phase 1 tile (0, 0) r0: C[0..7][0..7]: row = g, n = 2t + e
         phase 1 tile (0, 0) r1: C[8..15][0..7]: row = 8 + g, n = 2t + e
         phase 1 tile (1, 0) r0: C[16..23][0..7]: row = 16 + g, n = 2t + e
         phase 1 tile (1, 0) r1: C[24..31][0..7]: row = 24 + g, n = 2t + e
             weight byte = 32768 + 128*warp + 2*e
  %r432: phase 1 tile (0, 1) r0: C[0..7][8..15]: row = g, n = 8 + 2t + e
         phase 1 tile (0, 1) r1: C[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
         phase 1 tile (1, 1) r0: C[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
         phase 1 tile (1, 1) r1: C[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
             weight byte = 32784 + 128*warp + 2*e
  %r433: phase 1 tile (0, 2) r0: C[0..7][16..23]: row = g, n = 16 + 2t + e
         phase 1 tile (0, 2) r1: C[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
         phase 1 tile (1, 2) r0: C[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
         phase 1 tile (1, 2) r1: C[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
             weight byte = 32800 + 128*warp + 2*e
  %r434: phase 1 tile (0, 3) r0: C[0..7][24..31]: row = g, n = 24 + 2t + e
         phase 1 tile (0, 3) r1: C[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
         phase 1 tile (1, 3) r0: C[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
         phase 1 tile (1, 3) r1: C[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
             weight byte = 32816 + 128*warp + 2*e
  %r435: phase 1 tile (0, 4) r0: C[0..7][32..39]: row = g, n = 32 + 2t + e
         phase 1 tile (0, 4) r1: C[8..15][32..39]: row = 8 + g, n = 32 + 2t + e
         phase 1 tile (1, 4) r0: C[16..23][32..39]: row = 16 + g, n = 32 + 2t + e
         phase 1 tile (1, 4) r1: C[24..31][32..39]: row = 24 + g, n = 32 + 2t + e
             weight byte = 32832 + 128*warp + 2*e
  %r436: phase 1 tile (0, 5) r0: C[0..7][40..47]: row = g, n = 40 + 2t + e
         phase 1 tile (0, 5) r1: C[8..15][40..47]: row = 8 + g, n = 40 + 2t + e
         phase 1 tile (1, 5) r0: C[16..23][40..47]: row = 16 + g, n = 40 + 2t + e
         phase 1 tile (1, 5) r1: C[24..31][40..47]: row = 24 + g, n = 40 + 2t + e
             weight byte = 32848 + 128*warp + 2*e
  %r437: phase 1 tile (0, 6) r0: C[0..7][48..55]: row = g, n = 48 + 2t + e
         phase 1 tile (0, 6) r1: C[8..15][48..55]: row = 8 + g, n = 48 + 2t + e
         phase 1 tile (1, 6) r0: C[16..23][48..55]: row = 16 + g, n = 48 + 2t + e
         phase 1 tile (1, 6) r1: C[24..31][48..55]: row = 24 + g, n = 48 + 2t + e
             weight byte = 32864 + 128*warp + 2*e
  %r438: phase 1 tile (0, 7) r0: C[0..7][56..63]: row = g, n = 56 + 2t + e
         phase 1 tile (0, 7) r1: C[8..15][56..63]: row = 8 + g, n = 56 + 2t + e
         phase 1 tile (1, 7) r0: C[16..23][56..63]: row = 16 + g, n = 56 + 2t + e
         phase 1 tile (1, 7) r1: C[24..31][56..63]: row = 24 + g, n = 56 + 2t + e
             weight byte = 32880 + 128*warp + 2*e
RET_REGS (4 of 6 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r4079: phase 7 tile (0, 0) r0: D[0..7][0..7]: row = g, n = 2t + e
  %r4080: phase 7 tile (0, 0) r1: D[8..15][0..7]: row = 8 + g, n = 2t + e
  %r4089: phase 7 tile (0, 1) r0: D[0..7][8..15]: row = g, n = 8 + 2t + e
  %r4090: phase 7 tile (0, 1) r1: D[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
  not a fragment of a phase inside the cut: %r4160 %r4162

Block barrier: the block may run 128 threads (4 warps), and the kernel itself uses
_ZZ18rrswin_tiny_kernelE4smem (staging in and around the region), so the slots are
guarded on both sides. The native body MUST execute a block barrier (`bar.sync 0` /
`__syncthreads()`) after the region's work and before it stores its returns (no warp may
store a slot while another still uses those bytes), and the call text executes `bar.sync
0` after its scratch reads (no warp may reuse the array before every warp has read its
slot). No barrier is needed between the body's stores and the reads: a slot is stored
and read by the same thread. `rrsplice outline` mirrors the call text's barrier before
the outlined body's stores.
"""

MODULE = 'swin_tiny_sm120.ptx'
ENTRY = 'rrswin_tiny_kernel'
# qualifies this recipe's debug-stage names (tiny_sm120.NAME)
LAYER = 'tiny_sm120'
CALLEE = 'd4r_swin_tiny_sm120'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (801, 6305)

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
]

# phase 1's bias seeds, in weight-image offset order
C_REGS = [
    "%r431", "%r432", "%r433", "%r434",
    "%r435", "%r436", "%r437", "%r438",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%r367", "%r368", "%r369", "%r370",
    "%r371", "%r372", "%r373", "%r374",
    "%r375", "%r376", "%r377", "%r378",
    "%r379", "%r380", "%r381", "%r382",
    "%r383", "%r384", "%r385", "%r386",
    "%r387", "%r388", "%r389", "%r390",
    "%r391", "%r392", "%r393", "%r394",
    "%r395", "%r396", "%r397", "%r398",
    "%r399", "%r400", "%r401", "%r402",
    "%r403", "%r404", "%r405", "%r406",
    "%r407", "%r408", "%r409", "%r410",
    "%r411", "%r412", "%r413", "%r414",
    "%r415", "%r416", "%r417", "%r418",
    "%r419", "%r420", "%r421", "%r422",
    "%r423", "%r424", "%r425", "%r426",
    "%r427", "%r428", "%r429", "%r430",
    "%r4117", "%r4118", "%r4126", "%r4129",
    "%r4135", "%rd6", "%rd123",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r4079", "%r4080", "%r4089", "%r4090",
    "%r4160", "%r4162",
]

# how each register crosses the call when it is not a .b32
REG_TYPES = {"%rd123": ".b64", "%rd6": ".b64"}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = []

SCRATCH = '_ZZ18rrswin_tiny_kernelE4smem'
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
