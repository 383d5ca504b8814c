"""scratch-live: smem is written before lines 26-28 (s7) and read after them (s11), so the
returns must not go through it."""
import pathlib

MODULE = str(pathlib.Path(__file__).with_name("scratch_live.ptx"))
SCRATCH = "smem"


def recipe():
    call = "\n".join([
        "{",
        "\t.reg .b32 %rs<3>;",
        "\t.param .b64 a0;",
        "\tst.param.b64 [a0+0], %rd2;",
        "\t.param .b32 a1;",
        "\tst.param.b32 [a1+0], %r1;",
        "\t.param .b32 ps;",
        "\tmov.u32 %rs0, smem;",
        "\tst.param.b32 [ps+0], %rs0;",
        "\tcall.uni body, (a0, a1, ps);",
        "\tmov.u32 %rs1, %laneid;",
        "\tmad.lo.s32 %rs2, %rs1, 4, %rs0;",
        "\tld.shared.b32 %r7, [%rs2+0];",
        "}"])
    ext = ".extern .func body\n(\n\t.param .b64 b0,\n\t.param .b32 b1,\n\t.param .b32 b2\n)\n;\n"
    return dict(file=MODULE, cut_call=(26, 29), call=call, extern=ext)
