"""Splice recipe for frag_areload (scaffolded by `rrsplice recipe new frag_areload --module
frag_areload.ptx --range s37-s242 --abi scratch`).

The cut replaces statements s37-s242 (206 statements) -- physical lines 64-459 of
frag_areload.ptx -- with one `call.uni d4r_frag_areload`.
It holds 32 mma in 1 phase (phase 1 of `rrsplice phases`).
Phase 1 (s37-s242, lines 64-459) is a 32x64x64 m16n8k32 GEMM: 32 mma in 16 chains, 2
m-tiles x 8 n-tiles x 2 k-slices, 4 A fragments.
Its B fragments come from weight image bytes [0, 3636).

Live into the region: 21 registers. Passed to the callee, in this order:
  * A_REGS: 4 registers of phase 1's A fragments, first-use order,
  * C_REGS: 1 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 16 more (pointers, special values, values some path leaves unwritten):
    %rd5 %r7 %r8 %r17 %r18 %r326 %r327 %r328 ...,
  * the address of the scratch array.

Live out of the region (RET_REGS): 32 registers: %r11 %r12 %r31 %r32 %r51 %r52 %r71 %r72
%r91 %r92 %r111 %r112 ....
No .shared array of frag_areload can carry them (the function declares none), so the
recipe declares its own, d4r_frag_areload_scratch (4096 bytes, at module scope in the
extern text; OWN_SCRATCH).
They come back through d4r_frag_areload_scratch (4096 bytes), 128 bytes per thread at t
* 128, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y + ntid.y *
tid.z); 32 threads).

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
A_REGS (4 of 4 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r3: phase 1 tile (0, 0) r0: A[0..7][0..15]: row = g, k = 4t + e
  %r4: phase 1 tile (0, 0) r1: A[8..15][0..15]: row = 8 + g, k = 4t + e
  %r5: phase 1 tile (0, 0) r2: A[0..7][16..31]: row = g, k = 16 + 4t + e
  %r6: phase 1 tile (0, 0) r3: A[8..15][16..31]: row = 8 + g, k = 16 + 4t + e
C_REGS (1 of 1 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r9: phase 1 tile (0, 0) r0: C[0..7][0..7]: row = g, n = 2t + e
       phase 1 tile (0, 0) r1: C[8..15][0..7]: row = 8 + g, n = 2t + e
       phase 1 tile (1, 0) r0: C[16..23][0..7]: row = 16 + g, n = 2t + e
       phase 1 tile (1, 0) r1: C[24..31][0..7]: row = 24 + g, n = 2t + e
RET_REGS (32 of 32 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within
the register):
  %r11: phase 1 tile (0, 0) r0: D[0..7][0..7]: row = g, n = 2t + e
  %r12: phase 1 tile (0, 0) r1: D[8..15][0..7]: row = 8 + g, n = 2t + e
  %r31: phase 1 tile (1, 0) r0: D[16..23][0..7]: row = 16 + g, n = 2t + e
  %r32: phase 1 tile (1, 0) r1: D[24..31][0..7]: row = 24 + g, n = 2t + e
  %r51: phase 1 tile (0, 1) r0: D[0..7][8..15]: row = g, n = 8 + 2t + e
  %r52: phase 1 tile (0, 1) r1: D[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
  %r71: phase 1 tile (1, 1) r0: D[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
  %r72: phase 1 tile (1, 1) r1: D[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
  %r91: phase 1 tile (0, 2) r0: D[0..7][16..23]: row = g, n = 16 + 2t + e
  %r92: phase 1 tile (0, 2) r1: D[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
  %r111: phase 1 tile (1, 2) r0: D[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
  %r112: phase 1 tile (1, 2) r1: D[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
  %r131: phase 1 tile (0, 3) r0: D[0..7][24..31]: row = g, n = 24 + 2t + e
  %r132: phase 1 tile (0, 3) r1: D[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
  %r151: phase 1 tile (1, 3) r0: D[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
  %r152: phase 1 tile (1, 3) r1: D[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
  %r171: phase 1 tile (0, 4) r0: D[0..7][32..39]: row = g, n = 32 + 2t + e
  %r172: phase 1 tile (0, 4) r1: D[8..15][32..39]: row = 8 + g, n = 32 + 2t + e
  %r191: phase 1 tile (1, 4) r0: D[16..23][32..39]: row = 16 + g, n = 32 + 2t + e
  %r192: phase 1 tile (1, 4) r1: D[24..31][32..39]: row = 24 + g, n = 32 + 2t + e
  %r211: phase 1 tile (0, 5) r0: D[0..7][40..47]: row = g, n = 40 + 2t + e
  %r212: phase 1 tile (0, 5) r1: D[8..15][40..47]: row = 8 + g, n = 40 + 2t + e
  %r231: phase 1 tile (1, 5) r0: D[16..23][40..47]: row = 16 + g, n = 40 + 2t + e
  %r232: phase 1 tile (1, 5) r1: D[24..31][40..47]: row = 24 + g, n = 40 + 2t + e
  %r251: phase 1 tile (0, 6) r0: D[0..7][48..55]: row = g, n = 48 + 2t + e
  %r252: phase 1 tile (0, 6) r1: D[8..15][48..55]: row = 8 + g, n = 48 + 2t + e
  %r271: phase 1 tile (1, 6) r0: D[16..23][48..55]: row = 16 + g, n = 48 + 2t + e
  %r272: phase 1 tile (1, 6) r1: D[24..31][48..55]: row = 24 + g, n = 48 + 2t + e
  %r291: phase 1 tile (0, 7) r0: D[0..7][56..63]: row = g, n = 56 + 2t + e
  %r292: phase 1 tile (0, 7) r1: D[8..15][56..63]: row = 8 + g, n = 56 + 2t + e
  %r311: phase 1 tile (1, 7) r0: D[16..23][56..63]: row = 16 + g, n = 56 + 2t + e
  %r312: phase 1 tile (1, 7) r1: D[24..31][56..63]: row = 24 + g, n = 56 + 2t + e
Note: no .shared array of frag_areload can carry the returns (the function declares
none): the recipe declares its own, d4r_frag_areload_scratch (4096 bytes = 128 x 32
threads)
"""

MODULE = '../corpus_fixtures/frag/frag_areload.ptx'
ENTRY = 'frag_areload'
# qualifies this recipe's debug-stage names (frag_areload.NAME)
LAYER = 'frag_areload'
CALLEE = 'd4r_frag_areload'
# "call.uni" where every lane of the warp reaches the cut together; "call" where a per-lane
# branch decides who does (PTX defines call.uni only for a non-divergent call)
CALL_OPCODE = 'call.uni'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (64, 460)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'scratch'

# the region's first phase's A fragments, in the order its mma first use them
A_REGS = [
    "%r3", "%r4", "%r5", "%r6",
]

# the region's first phase's bias seeds, in weight-image offset order
C_REGS = [
    "%r9",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%rd5", "%r7", "%r8", "%r17",
    "%r18", "%r326", "%r327", "%r328",
    "%r329", "%r332", "%rd6", "%rd9",
    "%rd11", "%rd12", "%rd13", "%rd14",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r11", "%r12", "%r31", "%r32",
    "%r51", "%r52", "%r71", "%r72",
    "%r91", "%r92", "%r111", "%r112",
    "%r131", "%r132", "%r151", "%r152",
    "%r171", "%r172", "%r191", "%r192",
    "%r211", "%r212", "%r231", "%r232",
    "%r251", "%r252", "%r271", "%r272",
    "%r291", "%r292", "%r311", "%r312",
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
    "%rd11": ".b64",
    "%rd12": ".b64",
    "%rd13": ".b64",
    "%rd14": ".b64",
    "%rd5": ".b64",
    "%rd6": ".b64",
    "%rd9": ".b64",
}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = []

SCRATCH = 'd4r_frag_areload_scratch'
# bytes of the recipe's own .shared array SCRATCH (declared by extern()), when no array of
# the kernel could carry the returns; None when SCRATCH is the kernel's own
OWN_SCRATCH = 4096
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS = 'thread'
W_REG = '%rd5'
V_REG = None
# kernel parameters by role ("NAME+OFFSET"; rrsplice.analysis.paramroles): the pointer the B fragments
# load from, the one the bias seeds load from, and the one a debug stage's built-in block
# stores through -- one the kernel only writes (`check --debug` refuses a pointer the kernel
# reads through, or an offset past the parameter's end; `--debug-param` overrides it)
W_PARAM = 'frag_areload_param_1+0'
BIAS_PARAM = 'frag_areload_param_2+0'
DEBUG_PARAM = 'frag_areload_param_3+0'
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
