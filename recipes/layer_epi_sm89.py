"""Splice recipe for rrlayer_kernel (scaffolded by `rrsplice recipe new layer_epi_sm89
--module corpus_fixtures/layer/layer_epi_sm89.ptx --range s106-s3789 --abi scratch`).

The cut replaces statements s106-s3789 (3684 statements) -- physical lines 183-5974 of
layer_epi_sm89.ptx -- with one `call.uni d4r_layer_epi_sm89`.
It holds 88 mma in 4 phases (1-4 as `rrsplice phases` numbers them).
Phase 1 (s106-s183, lines 183-512) is a 32x64x64 m16n8k32 GEMM: 32 mma in 16 chains, 2
m-tiles x 8 n-tiles x 2 k-slices, 4 A fragments.
Its 8 bias seeds are loaded from the weight image at +4096..+4124.
Its B fragments come from weight image bytes [0, 3848).

Live into the region: 45 registers. Passed to the callee, in this order:
  * A_REGS: 16 registers of phase 1's A fragments, first-use order,
  * C_REGS: 8 phase-1 bias seeds, weight-image offset order,
  * OTHER_REGS: 19 more (pointers, special values, values some path leaves unwritten):
    %f513 %r1354 %r1355 %r1356 %r1357 %r1358 %r1360 %r1361 ...,
  * the address of the scratch array.
Not passed: 2 registers the body can reload from a passed pointer, e.g. %r25 =
ld.global.nc.v2 [%rd41+0] element 0 (weight image +0 + runtime).

Live out of the region (RET_REGS): 16 registers: %r1259 %r1260 %r1271 %r1272 %r1283
%r1284 %r1295 %r1296 %r1307 %r1308 %r1319 %r1320 ....
No .shared array of rrlayer_kernel can carry them (the function declares none), so the
recipe declares its own, d4r_layer_epi_sm89_scratch (2048 bytes, at module scope in the
extern text; OWN_SCRATCH).
They come back through d4r_layer_epi_sm89_scratch (2048 bytes), 64 bytes per thread at t
* 64, t = the thread's linear index in its block (tid.x + ntid.x * (tid.y + ntid.y *
tid.z); 32 threads).

Fragment maps (`rrsplice fragments` on this recipe; layouts from PTX ISA 9.7.14.5): what
each passed and returned register holds in its phase's matrices A[row][k] and
C/D[row][n], per lane (g, t) and element e; bias seeds with their weight-image bytes.
A_REGS (16 of 16 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r1: phase 1 tile (0, 0) r0: A[0..7][0..15]: row = g, k = 4t + e
  %r2: phase 1 tile (0, 0) r1: A[8..15][0..15]: row = 8 + g, k = 4t + e
  %r3: phase 1 tile (0, 0) r2: A[0..7][16..31]: row = g, k = 16 + 4t + e
  %r4: phase 1 tile (0, 0) r3: A[8..15][16..31]: row = 8 + g, k = 16 + 4t + e
  %r5: phase 1 tile (0, 1) r0: A[0..7][32..47]: row = g, k = 32 + 4t + e
  %r6: phase 1 tile (0, 1) r1: A[8..15][32..47]: row = 8 + g, k = 32 + 4t + e
  %r7: phase 1 tile (0, 1) r2: A[0..7][48..63]: row = g, k = 48 + 4t + e
  %r8: phase 1 tile (0, 1) r3: A[8..15][48..63]: row = 8 + g, k = 48 + 4t + e
  %r9: phase 1 tile (1, 0) r0: A[16..23][0..15]: row = 16 + g, k = 4t + e
  %r10: phase 1 tile (1, 0) r1: A[24..31][0..15]: row = 24 + g, k = 4t + e
  %r11: phase 1 tile (1, 0) r2: A[16..23][16..31]: row = 16 + g, k = 16 + 4t + e
  %r12: phase 1 tile (1, 0) r3: A[24..31][16..31]: row = 24 + g, k = 16 + 4t + e
  %r13: phase 1 tile (1, 1) r0: A[16..23][32..47]: row = 16 + g, k = 32 + 4t + e
  %r14: phase 1 tile (1, 1) r1: A[24..31][32..47]: row = 24 + g, k = 32 + 4t + e
  %r15: phase 1 tile (1, 1) r2: A[16..23][48..63]: row = 16 + g, k = 48 + 4t + e
  %r16: phase 1 tile (1, 1) r3: A[24..31][48..63]: row = 24 + g, k = 48 + 4t + e
C_REGS (8 of 8 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within the
register):
  %r17: phase 1 tile (0, 0) r0: C[0..7][0..7]: row = g, n = 2t + e
        phase 1 tile (0, 0) r1: C[8..15][0..7]: row = 8 + g, n = 2t + e
        phase 1 tile (1, 0) r0: C[16..23][0..7]: row = 16 + g, n = 2t + e
        phase 1 tile (1, 0) r1: C[24..31][0..7]: row = 24 + g, n = 2t + e
            weight byte = 4096 + 2*e
  %r18: phase 1 tile (0, 1) r0: C[0..7][8..15]: row = g, n = 8 + 2t + e
        phase 1 tile (0, 1) r1: C[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
        phase 1 tile (1, 1) r0: C[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
        phase 1 tile (1, 1) r1: C[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
            weight byte = 4100 + 2*e
  %r19: phase 1 tile (0, 2) r0: C[0..7][16..23]: row = g, n = 16 + 2t + e
        phase 1 tile (0, 2) r1: C[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
        phase 1 tile (1, 2) r0: C[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
        phase 1 tile (1, 2) r1: C[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
            weight byte = 4104 + 2*e
  %r20: phase 1 tile (0, 3) r0: C[0..7][24..31]: row = g, n = 24 + 2t + e
        phase 1 tile (0, 3) r1: C[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
        phase 1 tile (1, 3) r0: C[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
        phase 1 tile (1, 3) r1: C[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
            weight byte = 4108 + 2*e
  %r21: phase 1 tile (0, 4) r0: C[0..7][32..39]: row = g, n = 32 + 2t + e
        phase 1 tile (0, 4) r1: C[8..15][32..39]: row = 8 + g, n = 32 + 2t + e
        phase 1 tile (1, 4) r0: C[16..23][32..39]: row = 16 + g, n = 32 + 2t + e
        phase 1 tile (1, 4) r1: C[24..31][32..39]: row = 24 + g, n = 32 + 2t + e
            weight byte = 4112 + 2*e
  %r22: phase 1 tile (0, 5) r0: C[0..7][40..47]: row = g, n = 40 + 2t + e
        phase 1 tile (0, 5) r1: C[8..15][40..47]: row = 8 + g, n = 40 + 2t + e
        phase 1 tile (1, 5) r0: C[16..23][40..47]: row = 16 + g, n = 40 + 2t + e
        phase 1 tile (1, 5) r1: C[24..31][40..47]: row = 24 + g, n = 40 + 2t + e
            weight byte = 4116 + 2*e
  %r23: phase 1 tile (0, 6) r0: C[0..7][48..55]: row = g, n = 48 + 2t + e
        phase 1 tile (0, 6) r1: C[8..15][48..55]: row = 8 + g, n = 48 + 2t + e
        phase 1 tile (1, 6) r0: C[16..23][48..55]: row = 16 + g, n = 48 + 2t + e
        phase 1 tile (1, 6) r1: C[24..31][48..55]: row = 24 + g, n = 48 + 2t + e
            weight byte = 4120 + 2*e
  %r24: phase 1 tile (0, 7) r0: C[0..7][56..63]: row = g, n = 56 + 2t + e
        phase 1 tile (0, 7) r1: C[8..15][56..63]: row = 8 + g, n = 56 + 2t + e
        phase 1 tile (1, 7) r0: C[16..23][56..63]: row = 16 + g, n = 56 + 2t + e
        phase 1 tile (1, 7) r1: C[24..31][56..63]: row = 24 + g, n = 56 + 2t + e
            weight byte = 4124 + 2*e
RET_REGS (16 of 16 are mma fragments; g = lane>>2, t = lane%4, e = byte or half within
the register):
  %r1259: phase 4 tile (0, 0) r0: D[0..7][0..7]: row = g, n = 2t + e
  %r1260: phase 4 tile (0, 0) r1: D[8..15][0..7]: row = 8 + g, n = 2t + e
  %r1271: phase 4 tile (0, 1) r0: D[0..7][8..15]: row = g, n = 8 + 2t + e
  %r1272: phase 4 tile (0, 1) r1: D[8..15][8..15]: row = 8 + g, n = 8 + 2t + e
  %r1283: phase 4 tile (0, 2) r0: D[0..7][16..23]: row = g, n = 16 + 2t + e
  %r1284: phase 4 tile (0, 2) r1: D[8..15][16..23]: row = 8 + g, n = 16 + 2t + e
  %r1295: phase 4 tile (0, 3) r0: D[0..7][24..31]: row = g, n = 24 + 2t + e
  %r1296: phase 4 tile (0, 3) r1: D[8..15][24..31]: row = 8 + g, n = 24 + 2t + e
  %r1307: phase 4 tile (1, 0) r0: D[16..23][0..7]: row = 16 + g, n = 2t + e
  %r1308: phase 4 tile (1, 0) r1: D[24..31][0..7]: row = 24 + g, n = 2t + e
  %r1319: phase 4 tile (1, 1) r0: D[16..23][8..15]: row = 16 + g, n = 8 + 2t + e
  %r1320: phase 4 tile (1, 1) r1: D[24..31][8..15]: row = 24 + g, n = 8 + 2t + e
  %r1331: phase 4 tile (1, 2) r0: D[16..23][16..23]: row = 16 + g, n = 16 + 2t + e
  %r1332: phase 4 tile (1, 2) r1: D[24..31][16..23]: row = 24 + g, n = 16 + 2t + e
  %r1343: phase 4 tile (1, 3) r0: D[16..23][24..31]: row = 16 + g, n = 24 + 2t + e
  %r1344: phase 4 tile (1, 3) r1: D[24..31][24..31]: row = 24 + g, n = 24 + 2t + e
Note: no .shared array of rrlayer_kernel can carry the returns (the function declares
none): the recipe declares its own, d4r_layer_epi_sm89_scratch (2048 bytes = 64 x 32
threads)
"""

MODULE = 'layer/layer_epi_sm89.ptx'
ENTRY = 'rrlayer_kernel'
# qualifies this recipe's debug-stage names (layer_epi_sm89.NAME)
LAYER = 'layer_epi_sm89'
CALLEE = 'd4r_layer_epi_sm89'
# "call.uni" where every lane of the warp reaches the cut together; "call" where a per-lane
# branch decides who does (PTX defines call.uni only for a non-divergent call)
CALL_OPCODE = 'call.uni'

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL = (183, 5975)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI = 'scratch'

# the region's first phase's A fragments, in the order its mma first use them
A_REGS = [
    "%r1", "%r2", "%r3", "%r4",
    "%r5", "%r6", "%r7", "%r8",
    "%r9", "%r10", "%r11", "%r12",
    "%r13", "%r14", "%r15", "%r16",
]

# the region's first phase's bias seeds, in weight-image offset order
C_REGS = [
    "%r17", "%r18", "%r19", "%r20",
    "%r21", "%r22", "%r23", "%r24",
]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS = [
    "%f513", "%r1354", "%r1355", "%r1356",
    "%r1357", "%r1358", "%r1360", "%r1361",
    "%r1365", "%r1366", "%r1368", "%r1369",
    "%rd41", "%rd55", "%rd289", "%rd290",
    "%rd291", "%rd319", "%rd321",
]

# what the code after the region reads back out of it
RET_REGS = [
    "%r1259", "%r1260", "%r1271", "%r1272",
    "%r1283", "%r1284", "%r1295", "%r1296",
    "%r1307", "%r1308", "%r1319", "%r1320",
    "%r1331", "%r1332", "%r1343", "%r1344",
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
    "%rd289": ".b64",
    "%rd290": ".b64",
    "%rd291": ".b64",
    "%rd319": ".b64",
    "%rd321": ".b64",
    "%rd41": ".b64",
    "%rd55": ".b64",
}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED = []

SCRATCH = 'd4r_layer_epi_sm89_scratch'
# bytes of the recipe's own .shared array SCRATCH (declared by extern()), when no array of
# the kernel could carry the returns; None when SCRATCH is the kernel's own
OWN_SCRATCH = 2048
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS = 'thread'
W_REG = None
V_REG = None
# kernel parameters by role ("NAME+OFFSET"; rrsplice.analysis.paramroles): the pointer the B fragments
# load from, the one the bias seeds load from, and the one a debug stage's built-in block
# stores through -- one the kernel only writes (`check --debug` refuses a pointer the kernel
# reads through, or an offset past the parameter's end; `--debug-param` overrides it)
W_PARAM = 'rrlayer_kernel_param_0+8'
BIAS_PARAM = 'rrlayer_kernel_param_0+8'
DEBUG_PARAM = 'rrlayer_kernel_param_0+32'
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
