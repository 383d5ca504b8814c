"""Shared builder for the scratch_race test recipes in this directory (not a recipe itself:
it has no recipe()). The region is lines 30-35 of scratch_race.ptx; %rd2, %r1 and %r7 go
in, %r9 and %r11 come back through smem."""
import pathlib

MODULE = str(pathlib.Path(__file__).with_name("scratch_race.ptx"))
SCRATCH = "smem"
RET_REGS = ["%r9", "%r11"]
RET_STRIDE = 8
CUT = (30, 36)


def call_text(slots="thread", barrier="", abi="scratch", pass_base=True):
    lines = ["{", "\t.reg .b32 %rs<4>;",
             "\t.param .b64 a0;", "\tst.param.b64 [a0+0], %rd2;",
             "\t.param .b32 a1;", "\tst.param.b32 [a1+0], %r1;",
             "\t.param .b32 a2;", "\tst.param.b32 [a2+0], %r7;"]
    if abi == "param":
        if pass_base:
            lines += ["\t.param .b32 ps;", "\tmov.u32 %rs0, smem;",
                      "\tst.param.b32 [ps+0], %rs0;"]
        lines += ["\t.param .align 8 .b8 rv[8];",
                  "\tcall.uni (rv), body, (a0, a1, a2%s);" % (", ps" if pass_base else ""),
                  "\tld.param.b32 %r9, [rv+0];", "\tld.param.b32 %r11, [rv+4];", "}"]
        return "\n".join(lines)
    lines += ["\t.param .b32 ps;", "\tmov.u32 %rs0, smem;", "\tst.param.b32 [ps+0], %rs0;",
              "\tcall.uni body, (a0, a1, a2, ps);"]
    if slots == "thread":
        lines += ["\tmov.u32 %rs1, %tid.z;", "\tmov.u32 %rs2, %ntid.y;",
                  "\tmov.u32 %rs3, %tid.y;", "\tmad.lo.s32 %rs1, %rs1, %rs2, %rs3;",
                  "\tmov.u32 %rs2, %ntid.x;", "\tmov.u32 %rs3, %tid.x;",
                  "\tmad.lo.s32 %rs1, %rs1, %rs2, %rs3;"]
    else:
        lines.append("\tmov.u32 %rs1, %laneid;")
    lines += ["\tmad.lo.s32 %rs2, %rs1, 8, %rs0;",
              "\tld.shared.b32 %r9, [%rs2+0];", "\tld.shared.b32 %r11, [%rs2+4];"]
    if barrier:
        lines.append("\t" + barrier)
    lines.append("}")
    return "\n".join(lines)


def extern_text(abi="scratch", pass_base=True):
    params = [".param .b64 b0", ".param .b32 b1", ".param .b32 b2"]
    if abi == "scratch" or pass_base:
        params.append(".param .b32 b3")
    ret = "(.param .align 8 .b8 r[8]) " if abi == "param" else ""
    return ".extern .func %sbody\n(\n\t%s\n)\n;\n" % (ret, ",\n\t".join(params))


def make(**kw):
    abi = kw.get("abi", "scratch")
    return dict(file=MODULE, cut_call=CUT, call=call_text(**kw),
                extern=extern_text(abi, kw.get("pass_base", True)))
