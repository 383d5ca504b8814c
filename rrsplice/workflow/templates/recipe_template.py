# The recipe module `rrsplice recipe new` writes, as Python that ruff, mypy and the tests read
# (rrsplice.workflow.scaffold_render fills it in). What the renderer does, and all it does:
# these leading comment lines are dropped; the docstring becomes the recipe's own; each
# annotated top-level constant becomes `NAME = <the recipe's value>` (the annotation and the
# sample value below are for the linters: a generated recipe imports nothing); `<layer>` in a
# comment becomes the recipe's layer. Everything else is copied byte for byte, so the
# generated recipe runs exactly the code checked here.
# ruff: noqa: UP031
"""A recipe's docstring: what it cuts, what crosses the call and how (written by the renderer).
"""

MODULE: str = "kernel_sm89.ptx"
ENTRY: str = "kernel"
# qualifies this recipe's debug-stage names (<layer>.NAME)
LAYER: str = "layer"
CALLEE: str = "d4r_recipe"
# "call.uni" where every lane of the warp reaches the cut together; "call" where a per-lane
# branch decides who does (PTX defines call.uni only for a non-divergent call)
CALL_OPCODE: str = "call.uni"

# the region: its first statement's first physical line, and the line after its last
# statement's last physical line (half-open)
CUT_CALL: tuple[int, int] = (10, 20)

# "scratch": returns cross back through the .shared array SCRATCH (lane * RET_STRIDE);
# "param": they come back as the call's return value (one .param .b8 array)
ABI: str = "scratch"

# the region's first phase's A fragments, in the order its mma first use them
A_REGS: list[str] = ["%r1", "%r2"]

# the region's first phase's bias seeds, in weight-image offset order
C_REGS: list[str] = ["%r3"]

# other values the body needs: pointers, special values, values not always overwritten
OTHER_REGS: list[str] = ["%rd1", "%p1"]

# what the code after the region reads back out of it
RET_REGS: list[str] = ["%r4", "%rd2", "%p2"]

# the region's first statement, a label that code outside the region branches to: the
# splice text begins with it (the cut removes it from the kernel)
HEAD_LABELS: list[str] = ["$L__BB0_1"]

# labels outside the region it branches to, besides the statement right after it: the
# callee returns an exit index (after RET_REGS; 0 = go on after the call) and the call
# text branches to EXITS[index - 1]
EXITS: list[str] = ["$L__BB0_9"]
_RETURNS = RET_REGS + (["%rrsx"] if EXITS else [])

# how each register crosses the call when it is not a .b32
REG_TYPES: dict[str, str] = {"%p1": ".pred", "%p2": ".pred", "%rd1": ".b64", "%rd2": ".v2.b32"}

# .shared arrays the region names: their shared-window addresses are passed (after
# OTHER_REGS), since the body, a separate .func, cannot name the entry's arrays
SHARED: list[str] = ["smem"]

SCRATCH: str | None = "d4r_recipe_scratch"
# bytes of the recipe's own .shared array SCRATCH (declared by extern()), when no array of
# the kernel could carry the returns; None when SCRATCH is the kernel's own
OWN_SCRATCH: int | None = 8192
# "thread": a thread's slot is at its linear index in the block x RET_STRIDE;
# "lane": at %laneid x RET_STRIDE (every warp of the block uses the same 32 slots)
SLOTS: str = "thread"
W_REG: str | None = "%rd1"
V_REG: str | None = None
# kernel parameters by role ("NAME+OFFSET"; rrsplice.analysis.paramroles): the pointer the B fragments
# load from, the one the bias seeds load from, and the one a debug stage's built-in block
# stores through -- one the kernel only writes (`check --debug` refuses a pointer the kernel
# reads through, or an offset past the parameter's end; `--debug-param` overrides it)
W_PARAM: str | None = "kernel_param_0+0"
BIAS_PARAM: str | None = None
DEBUG_PARAM: str | None = "kernel_param_1+0"
# `bar.sync 0` after the scratch reads: the block may run several warps and the kernel uses
# the scratch array itself; the native body must execute a block barrier before its stores
BLOCK_BARRIER: bool = True

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
