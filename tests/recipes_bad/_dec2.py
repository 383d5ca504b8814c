"""Shared builder for the dec2 test recipes in this directory (not a recipe itself: it has
no recipe()). Each bad recipe loads it by path and changes one thing, so the check it must
fail is the only difference from a recipe that passes."""

MODULE = "0021-PREPASS_ENTRYPOINT_NAME.ptx"
CALLEE = "d4r_swin_dec2"
CUT_CALL = (1535, 36893)
A_REGS = ["%%r%d" % (b + i) for b in (1040, 1060, 1080, 1100, 1520, 1540, 1560, 1580,
                                      2000, 2020, 2040, 2060) for i in range(4)]
C_REGS = ["%r1597", "%r1607", "%r1677", "%r1687", "%r1757", "%r1767", "%r1837", "%r1847",
          "%r1917", "%r1927", "%r1997", "%r2007"]
RET_REGS = ["%r19360", "%r19361", "%r19370", "%r19371"]
SCRATCH = "_ZZ33cuda_dldn_engine_swin_dec2_kernel33DldnEngineSwinEncParamsStructBaseE4smem"
PTRS = [("%rd32", ".b64"), ("%rd7", ".b64")]


def call_text(args=None, ptrs=None, ret_regs=None, stride=None, callee=CALLEE,
              reg_count=3, before="", after="", parens=True):
    args = A_REGS + C_REGS if args is None else args
    ptrs = PTRS if ptrs is None else ptrs
    ret_regs = RET_REGS if ret_regs is None else ret_regs
    stride = 4 * len(ret_regs) if stride is None else stride
    lines = ["{", "\t.reg .b32 %%rswin<%d>;" % reg_count]
    names = []
    for i, r in enumerate(args):
        lines += ["\t.param .b32 p%d;" % i, "\tst.param.b32 [p%d+0], %s;" % (i, r)]
        names.append("p%d" % i)
    for i, (r, t) in enumerate(ptrs):
        lines += ["\t.param %s q%d;" % (t, i), "\tst.param%s [q%d+0], %s;" % (t, i, r)]
        names.append("q%d" % i)
    lines += ["\t.param .b32 ps;", "\tmov.u32 %%rswin0, %s;" % SCRATCH,
              "\tst.param.b32 [ps+0], %rswin0;"]
    names.append("ps")
    if before:
        lines.append(before)
    lines.append("\tcall.uni %s, (%s);" % (callee, ", ".join(names)) if parens
                 else "\tcall.uni %s, ();" % callee)
    lines += ["\tmov.u32 %rswin2, %laneid;",
              "\tmad.lo.s32 %%rswin1, %%rswin2, %d, %%rswin0;" % stride]
    lines += ["\tld.shared.b32 %s, [%%rswin1+%d];" % (r, 4 * i) for i, r in enumerate(ret_regs)]
    if after:
        lines.append(after)
    lines.append("}")
    return "\n".join(lines)


def extern_text(n_args=None, ptr_types=None, callee=CALLEE):
    n_args = len(A_REGS) + len(C_REGS) if n_args is None else n_args
    ptr_types = [t for _, t in PTRS] if ptr_types is None else ptr_types
    params = [".param .b32 d4r_a%d" % i for i in range(n_args)]
    params += [".param %s d4r_q%d" % (t, i) for i, t in enumerate(ptr_types)]
    params.append(".param .b32 d4r_s")
    return ".extern .func %s\n(\n\t%s\n)\n;\n" % (callee, ",\n\t".join(params))


def make(cut=CUT_CALL, call=None, extern=None, **kw):
    return dict(file=MODULE, cut_call=cut, call=call if call is not None else call_text(**kw),
                extern=extern if extern is not None else extern_text())
