"""Splice recipe for rrswin_tiny_kernel (scaffolded by `rrsplice recipe new swin_tiny_sm89
--module swin_tiny_sm89.ptx --range s342-s2656 --abi scratch`).

The cut replaces statements s342-s2656 (2315 statements) -- physical lines 847-6933 of
swin_tiny_sm89.ptx -- with one `call.uni d4r_swin_tiny_sm89`.
It holds 162 mma in 7 phase(s).
Phase 1 (s342-s405, lines 847-1228) is a 32x64x128 m16n8k32 GEMM: 64 mma in 16 chains, 2
m-tiles x 8 n-tiles x 4 k-slices, 8 A fragments.
Its 8 bias seeds are loaded from the weight image at +32768..+32880.
Its B fragments come from weight image bytes [0, 7696).

Live into the region: 123 registers. Passed to the callee, in this order:
  * A_REGS: 32 registers of phase 1's A fragments, first-use order,
  * C_REGS: 8 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 83 more (pointers, special values, values some path leaves unwritten):
    %f262 %r366 %r367 %r368 %r369 %r370 %r371 %r372 ...,
  * the address of the scratch array.

Live out of the region (RET_REGS): 8 registers: %r1739 %r4160 %r4161 %r4170 %r4171
%r4241 %r4275 %r4279.
They come back through _ZZ18rrswin_tiny_kernelE4smem (8192 bytes), 32 bytes per thread
at t * 32, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y + ntid.y
* tid.z); 128 threads).

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
A_REGS (32 of 32 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r32: phase 1 tile (0, 0) r0: A[0..7][0..15]: row = g, k = 4t + e
  %r35: phase 1 tile (0, 0) r1: A[8..15][0..15]: row = 8 + g, k = 4t + e
  %r54: phase 1 tile (0, 0) r2: A[0..7][16..31]: row = g, k = 16 + 4t + e
  %r57: phase 1 tile (0, 0) r3: A[8..15][16..31]: row = 8 + g, k = 16 + 4t + e
  %r76: phase 1 tile (0, 1) r0: A[0..7][32..47]: row = g, k = 32 + 4t + e
  %r79: phase 1 tile (0, 1) r1: A[8..15][32..47]: row = 8 + g, k = 32 + 4t + e
  %r98: phase 1 tile (0, 1) r2: A[0..7][48..63]: row = g, k = 48 + 4t + e
  %r101: phase 1 tile (0, 1) r3: A[8..15][48..63]: row = 8 + g, k = 48 + 4t + e
  %r120: phase 1 tile (0, 2) r0: A[0..7][64..79]: row = g, k = 64 + 4t + e
  %r123: phase 1 tile (0, 2) r1: A[8..15][64..79]: row = 8 + g, k = 64 + 4t + e
  %r142: phase 1 tile (0, 2) r2: A[0..7][80..95]: row = g, k = 80 + 4t + e
  %r145: phase 1 tile (0, 2) r3: A[8..15][80..95]: row = 8 + g, k = 80 + 4t + e
  %r164: phase 1 tile (0, 3) r0: A[0..7][96..111]: row = g, k = 96 + 4t + e
  %r167: phase 1 tile (0, 3) r1: A[8..15][96..111]: row = 8 + g, k = 96 + 4t + e
  %r186: phase 1 tile (0, 3) r2: A[0..7][112..127]: row = g, k = 112 + 4t + e
  %r189: phase 1 tile (0, 3) r3: A[8..15][112..127]: row = 8 + g, k = 112 + 4t + e
  %r208: phase 1 tile (1, 0) r0: A[16..23][0..15]: row = 16 + g, k = 4t + e
  %r211: phase 1 tile (1, 0) r1: A[24..31][0..15]: row = 24 + g, k = 4t + e
  %r230: phase 1 tile (1, 0) r2: A[16..23][16..31]: row = 16 + g, k = 16 + 4t + e
  %r233: phase 1 tile (1, 0) r3: A[24..31][16..31]: row = 24 + g, k = 16 + 4t + e
  %r252: phase 1 tile (1, 1) r0: A[16..23][32..47]: row = 16 + g, k = 32 + 4t + e
  %r255: phase 1 tile (1, 1) r1: A[24..31][32..47]: row = 24 + g, k = 32 + 4t + e
  %r274: phase 1 tile (1, 1) r2: A[16..23][48..63]: row = 16 + g, k = 48 + 4t + e
  %r277: phase 1 tile (1, 1) r3: A[24..31][48..63]: row = 24 + g, k = 48 + 4t + e
  %r296: phase 1 tile (1, 2) r0: A[16..23][64..79]: row = 16 + g, k = 64 + 4t + e
  %r299: phase 1 tile (1, 2) r1: A[24..31][64..79]: row = 24 + g, k = 64 + 4t + e
  %r318: phase 1 tile (1, 2) r2: A[16..23][80..95]: row = 16 + g, k = 80 + 4t + e
  %r321: phase 1 tile (1, 2) r3: A[24..31][80..95]: row = 24 + g, k = 80 + 4t + e
  %r340: phase 1 tile (1, 3) r0: A[16..23][96..111]: row = 16 + g, k = 96 + 4t + e
  %r343: phase 1 tile (1, 3) r1: A[24..31][96..111]: row = 24 + g, k = 96 + 4t + e
  %r362: phase 1 tile (1, 3) r2: A[16..23][112..127]: row = 16 + g, k = 112 + 4t + e
  %r365: phase 1 tile (1, 3) r3: A[24..31][112..127]: row = 24 + g, k = 112 + 4t + e
C_REGS (8 of 8 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r430: phase 1 tile (0, 0) r0: C[0..7][0..7]: row = g, n = 2t + e
         phase 1 tile (0, 0) r1: C[8..15][0..7]: row = 8 + g, n = 2t + e
         phase 1 tile (1, 0) r0: C[16..23][0..7]: row = 16 + g, n = 2t + e
         phase 1 tile (1, 0) r1: C[24..31][0..7]: row = 24 + g, n = 2t + e
             weight byte = 32768 + 128*warp + 2*e
  %r431: phase 1 tile (0, 1) r0: C[0..7][8..15]: row = g, n = 8 + 2t + e
         phase 1 tile (0, 1) r1: C[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
         phase 1 tile (1, 1) r0: C[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
         phase 1 tile (1, 1) r1: C[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
             weight byte = 32784 + 128*warp + 2*e
  %r432: phase 1 tile (0, 2) r0: C[0..7][16..23]: row = g, n = 16 + 2t + e
         phase 1 tile (0, 2) r1: C[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
         phase 1 tile (1, 2) r0: C[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
         phase 1 tile (1, 2) r1: C[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
             weight byte = 32800 + 128*warp + 2*e
  %r433: phase 1 tile (0, 3) r0: C[0..7][24..31]: row = g, n = 24 + 2t + e
         phase 1 tile (0, 3) r1: C[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
         phase 1 tile (1, 3) r0: C[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
         phase 1 tile (1, 3) r1: C[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
             weight byte = 32816 + 128*warp + 2*e
  %r434: phase 1 tile (0, 4) r0: C[0..7][32..39]: row = g, n = 32 + 2t + e
         phase 1 tile (0, 4) r1: C[8..15][32..39]: row = 8 + g, n = 32 + 2t + e
         phase 1 tile (1, 4) r0: C[16..23][32..39]: row = 16 + g, n = 32 + 2t + e
         phase 1 tile (1, 4) r1: C[24..31][32..39]: row = 24 + g, n = 32 + 2t + e
             weight byte = 32832 + 128*warp + 2*e
  %r435: phase 1 tile (0, 5) r0: C[0..7][40..47]: row = g, n = 40 + 2t + e
         phase 1 tile (0, 5) r1: C[8..15][40..47]: row = 8 + g, n = 40 + 2t + e
         phase 1 tile (1, 5) r0: C[16..23][40..47]: row = 16 + g, n = 40 + 2t + e
         phase 1 tile (1, 5) r1: C[24..31][40..47]: row = 24 + g, n = 40 + 2t + e
             weight byte = 32848 + 128*warp + 2*e
  %r436: phase 1 tile (0, 6) r0: C[0..7][48..55]: row = g, n = 48 + 2t + e
         phase 1 tile (0, 6) r1: C[8..15][48..55]: row = 8 + g, n = 48 + 2t + e
         phase 1 tile (1, 6) r0: C[16..23][48..55]: row = 16 + g, n = 48 + 2t + e
         phase 1 tile (1, 6) r1: C[24..31][48..55]: row = 24 + g, n = 48 + 2t + e
             weight byte = 32864 + 128*warp + 2*e
  %r437: phase 1 tile (0, 7) r0: C[0..7][56..63]: row = g, n = 56 + 2t + e
         phase 1 tile (0, 7) r1: C[8..15][56..63]: row = 8 + g, n = 56 + 2t + e
         phase 1 tile (1, 7) r0: C[16..23][56..63]: row = 16 + g, n = 56 + 2t + e
         phase 1 tile (1, 7) r1: C[24..31][56..63]: row = 24 + g, n = 56 + 2t + e
             weight byte = 32880 + 128*warp + 2*e
RET_REGS (4 of 8 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r4160: phase 7 tile (0, 0) r0: D[0..7][0..7]: row = g, n = 2t + e
  %r4161: phase 7 tile (0, 0) r1: D[8..15][0..7]: row = 8 + g, n = 2t + e
  %r4170: phase 7 tile (0, 1) r0: D[0..7][8..15]: row = g, n = 8 + 2t + e
  %r4171: phase 7 tile (0, 1) r1: D[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
  not a fragment of a phase inside the cut: %r1739 %r4241 %r4275 %r4279

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

MODULE = 'swin_tiny_sm89.ptx'
ENTRY = 'rrswin_tiny_kernel'
# qualifies this recipe's debug-stage names (tiny_sm89.NAME)
LAYER = 'tiny_sm89'
CALLEE = 'd4r_swin_tiny_sm89'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (847, 6934)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'scratch'

# phase 1's A fragments, in the order its mma first use them
A_REGS = [
    "%r32", "%r35", "%r54", "%r57",
    "%r76", "%r79", "%r98", "%r101",
    "%r120", "%r123", "%r142", "%r145",
    "%r164", "%r167", "%r186", "%r189",
    "%r208", "%r211", "%r230", "%r233",
    "%r252", "%r255", "%r274", "%r277",
    "%r296", "%r299", "%r318", "%r321",
    "%r340", "%r343", "%r362", "%r365",
]

# phase 1's bias seeds, in weight-image offset order
C_REGS = [
    "%r430", "%r431", "%r432", "%r433",
    "%r434", "%r435", "%r436", "%r437",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%f262", "%r366", "%r367", "%r368",
    "%r369", "%r370", "%r371", "%r372",
    "%r373", "%r374", "%r375", "%r376",
    "%r377", "%r378", "%r379", "%r380",
    "%r381", "%r382", "%r383", "%r384",
    "%r385", "%r386", "%r387", "%r388",
    "%r389", "%r390", "%r391", "%r392",
    "%r393", "%r394", "%r395", "%r396",
    "%r397", "%r398", "%r399", "%r400",
    "%r401", "%r402", "%r403", "%r404",
    "%r405", "%r406", "%r407", "%r408",
    "%r409", "%r410", "%r411", "%r412",
    "%r413", "%r414", "%r415", "%r416",
    "%r417", "%r418", "%r419", "%r420",
    "%r421", "%r422", "%r423", "%r424",
    "%r425", "%r426", "%r427", "%r428",
    "%r429", "%r1737", "%r4202", "%r4205",
    "%r4214", "%rd7", "%rd123", "%rd125",
    "%rd127", "%rd129", "%rd131", "%rd133",
    "%rd135", "%rd137", "%rd139", "%rd141",
    "%rd143", "%rd145", "%rd156",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r1739", "%r4160", "%r4161", "%r4170",
    "%r4171", "%r4241", "%r4275", "%r4279",
]

# how each register crosses the call when it is not a .b32
REG_TYPES = {
    "%rd123": ".b64",
    "%rd125": ".b64",
    "%rd127": ".b64",
    "%rd129": ".b64",
    "%rd131": ".b64",
    "%rd133": ".b64",
    "%rd135": ".b64",
    "%rd137": ".b64",
    "%rd139": ".b64",
    "%rd141": ".b64",
    "%rd143": ".b64",
    "%rd145": ".b64",
    "%rd156": ".b64",
    "%rd7": ".b64",
}

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
