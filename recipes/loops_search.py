"""Splice recipe for search (scaffolded by `rrsplice recipe new loops_search --module corpus_fixtures/loops/loops_sm90.ptx --range s17-s42 --abi param`).

The cut replaces statements s17-s42 (26 statements) -- physical lines 256-284 of
loops_sm90.ptx -- with one `call.uni d4r_loops_search`.
It holds 0 mma in 0 phase(s).

Live into the region: 5 registers. Passed to the callee, in this order:
  * A_REGS: 0 registers of phase 1's A fragments, first-use order,
  * C_REGS: 0 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 5 more (pointers, special values, values some path leaves unwritten):
    %r2 %r12 %r34 %rd1 %rd2,

Live out of the region (RET_REGS): 2 registers: %r2 %r34.
They come back as the call's return value, one 12-byte .param array read with ld.param.

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
RET_REGS (0 of 2 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  not a fragment of a phase inside the cut: %r2 %r34

The region leaves to 2 label(s) besides the statement after it: the callee returns an
exit index after RET_REGS (0: go on after the call), and the call text branches on it: 1
-> $L__BB2_6, 2 -> $L__BB2_8.
"""

MODULE = 'loops/loops_sm90.ptx'
ENTRY = 'search'
# qualifies this recipe's debug-stage names (loops_search.NAME)
LAYER = 'loops_search'
CALLEE = 'd4r_loops_search'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (256, 285)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'param'

# the region's first phase's A fragments, in the order its mma first use them
A_REGS = []

# the region's first phase's bias seeds, in weight-image offset order
C_REGS = []

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%r2", "%r12", "%r34", "%rd1",
    "%rd2",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r2", "%r34",
]

# the region's first statement, a label that code outside the region branches to: the
# splice text begins with it (the cut removes it from the kernel)
HEAD_LABELS = []

# labels outside the region it branches to, besides the statement right after it: the
# callee returns an exit index (after RET_REGS; 0 = go on after the call) and the call
# text branches to EXITS[index - 1]
EXITS = [
    "$L__BB2_6",
    "$L__BB2_8",
]
_RETURNS = RET_REGS + (["%rrsx"] if EXITS else [])

# how each register crosses the call when it is not a .b32
REG_TYPES = {"%rd1": ".b64", "%rd2": ".b64"}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = []

SCRATCH = None
# bytes of the recipe's own .shared array SCRATCH (declared by extern()), when no array of
# the kernel could carry the returns; None when SCRATCH is the kernel's own
OWN_SCRATCH = None
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS = 'lane'
W_REG = None
V_REG = None
# `bar.sync 0` after the scratch reads: the block may run several warps and the kernel uses
# the scratch array itself; the native body must execute a block barrier before its stores
BLOCK_BARRIER = False

_SIZE = {".b16": 2, ".b32": 4, ".b64": 8, ".pred": 4}


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


def _param_type(reg):
    t = _type(reg)
    return ".b32" if t == ".pred" else t


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
    if ABI == "scratch" and _RETURNS:
        lines.append("\t.param .b32 ps;")
        lines.append("\tmov.u32 %%rrs0, %s;" % SCRATCH)
        lines.append("\tst.param.b32 [ps+0], %rrs0;")
        names.append("ps")
    if ABI == "param" and _RETURNS:
        lines.append("\t.param .align 8 .b8 rv[%d];" % size)
    call = "\tcall.uni "
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
        else:
            lines.append("\tld.%s%s %s, %s;" % (space, _type(r), r, src))
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
    params = [".param %s %s_p%d" % (_param_type(r), CALLEE, i) for i, r in enumerate(args)]
    params += [".param .b32 %s_shared%d" % (CALLEE, i) for i in range(len(SHARED))]
    if ABI == "scratch" and _RETURNS:
        params.append(".param .b32 %s_scratch" % CALLEE)
    own = ""
    if OWN_SCRATCH:
        own = ".shared .align 16 .b8 %s[%d];\n" % (SCRATCH, OWN_SCRATCH)
    ret = ""
    if ABI == "param" and _RETURNS:
        ret = "(.param .align 8 .b8 %s_ret[%d]) " % (CALLEE, _ret_layout()[1])
    text = own + ".extern .func %s%s" % (ret, CALLEE)
    if params:
        text += "\n(\n\t" + ",\n\t".join(params) + "\n)"
    return text + "\n;\n"


def recipe():
    """make_ptx.py's recipe for this kernel."""
    return dict(file=MODULE, cut_call=CUT_CALL, call=cut_call(), extern=extern())
