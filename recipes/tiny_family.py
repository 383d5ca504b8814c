"""Splice recipe for rrswin_tiny_mvhi_hdr_kernel (scaffolded by `rrsplice recipe new
tiny_family --module swin_tiny_mvhi_hdr_sm89.ptx --range s353-s2667 --abi scratch`).

The cut replaces statements s353-s2667 (2315 statements) -- physical lines 864-6950 of
swin_tiny_mvhi_hdr_sm89.ptx -- with one `call.uni d4r_tiny_family`.
It holds 162 mma in 7 phase(s).
Phase 1 (s353-s416, lines 864-1245) is a 32x64x128 m16n8k32 GEMM: 64 mma in 16 chains, 2
m-tiles x 8 n-tiles x 4 k-slices, 8 A fragments.
Its 8 bias seeds are loaded from the weight image at +32768..+32880.
Its B fragments come from weight image bytes [0, 7696).

Live into the region: 123 registers. Passed to the callee, in this order:
  * A_REGS: 32 registers of phase 1's A fragments, first-use order,
  * C_REGS: 8 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 83 more (pointers, special values, values some path leaves unwritten):
    %f264 %r370 %r371 %r372 %r373 %r374 %r375 %r376 ...,
  * the address of the scratch array.

Live out of the region (RET_REGS): 8 registers: %r1743 %r4164 %r4165 %r4174 %r4175
%r4245 %r4279 %r4283.
They come back through _ZZ27rrswin_tiny_mvhi_hdr_kernelE4smem (8192 bytes), 32 bytes per
thread at t * 32, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y +
ntid.y * tid.z); 128 threads).

Block barrier: the block may run 128 threads (4 warps), and the kernel itself uses
_ZZ27rrswin_tiny_mvhi_hdr_kernelE4smem (staging in and around the region), so the slots
are guarded on both sides. The native body MUST execute a block barrier (`bar.sync 0` /
`__syncthreads()`) after the region's work and before it stores its returns (no warp may
store a slot while another still uses those bytes), and the call text executes `bar.sync
0` after its scratch reads (no warp may reuse the array before every warp has read its
slot). No barrier is needed between the body's stores and the reads: a slot is stored
and read by the same thread. `rrsplice outline` mirrors the call text's barrier before
the outlined body's stores.
"""

# the variant family this cut is ported to by `rrsplice apply --all corpus_fixtures`
# (added by hand after scaffolding; the _folded variant does not align and is refused)
FAMILY = r"rrswin_tiny_mv(hi|lo)_(hdr|ldr)(_folded)?_kernel"

MODULE = 'swin_tiny_mvhi_hdr_sm89.ptx'
ENTRY = 'rrswin_tiny_mvhi_hdr_kernel'
# qualifies this recipe's debug-stage names (tiny_family.NAME)
LAYER = 'tiny_family'
CALLEE = 'd4r_tiny_family'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (864, 6951)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'scratch'

# phase 1's A fragments, in the order its mma first use them
A_REGS = [
    "%r36", "%r39", "%r58", "%r61",
    "%r80", "%r83", "%r102", "%r105",
    "%r124", "%r127", "%r146", "%r149",
    "%r168", "%r171", "%r190", "%r193",
    "%r212", "%r215", "%r234", "%r237",
    "%r256", "%r259", "%r278", "%r281",
    "%r300", "%r303", "%r322", "%r325",
    "%r344", "%r347", "%r366", "%r369",
]

# phase 1's bias seeds, in weight-image offset order
C_REGS = [
    "%r434", "%r435", "%r436", "%r437",
    "%r438", "%r439", "%r440", "%r441",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%f264", "%r370", "%r371", "%r372",
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
    "%r429", "%r430", "%r431", "%r432",
    "%r433", "%r1741", "%r4206", "%r4209",
    "%r4218", "%rd7", "%rd123", "%rd125",
    "%rd127", "%rd129", "%rd131", "%rd133",
    "%rd135", "%rd137", "%rd139", "%rd141",
    "%rd143", "%rd145", "%rd156",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r1743", "%r4164", "%r4165", "%r4174",
    "%r4175", "%r4245", "%r4279", "%r4283",
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

SCRATCH = '_ZZ27rrswin_tiny_mvhi_hdr_kernelE4smem'
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
    return dict(file=MODULE, cut_call=CUT_CALL, call=cut_call(), extern=extern(),
                entries=FAMILY)
