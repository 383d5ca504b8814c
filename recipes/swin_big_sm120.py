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
