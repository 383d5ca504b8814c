"""The outliner: the cut region as the callee's body.

Small kernels are written inline; each test states the region and the call text and checks
what the body does with them. Tests that assemble need ptxas (the `ptxas_path` fixture:
skipped without it, a failure under RRSPLICE_REQUIRE_PTXAS=1).
"""

from __future__ import annotations

import re
import subprocess
import textwrap

import pytest

from rrsplice.outline import OutlineError, build_outline, outline, parse_call
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange

# A kernel with a weight image (%rd3, also read inside the region), a loop, a demoted .shared
# array used through `mov.u32 %r8, smem`, a scoped block and three values read after s24.
K1 = textwrap.dedent("""\
    .version 8.7
    .target sm_89
    .address_size 64

    .visible .entry k1(
    \t.param .align 8 .b8 k1_param_0[96]
    )
    .maxntid 128, 1, 1
    {
    \t.reg .pred \t%p<4>;
    \t.reg .b32 \t%r<40>;
    \t.reg .b64 \t%rd<10>;
    \t.shared .align 16 .b8 smem[4096];

    \tld.param.u64 \t%rd1, [k1_param_0+40];
    \tld.param.u64 \t%rd2, [k1_param_0+16];
    \tcvta.to.global.u64 \t%rd3, %rd1;
    \tcvta.to.global.u64 \t%rd4, %rd2;
    \tmov.u32 \t%r1, %tid.x;
    \tld.global.nc.u32 \t%r2, [%rd3];
    \tld.global.nc.v2.u32 \t{%r3, %r4}, [%rd3+16];
    \tmul.lo.s32 \t%r5, %r1, 3;
    \tmov.u32 \t%r6, 0;
    \tmov.u32 \t%r7, 0;
    $L__BB0_1:
    \tmad.lo.s32 \t%r7, %r2, %r5, %r7;
    \tadd.s32 \t%r6, %r6, 1;
    \tsetp.lt.u32 \t%p1, %r6, %r4;
    \t@%p1 bra \t$L__BB0_1;
    \tmov.u32 \t%r8, smem;
    \tshl.b32 \t%r9, %r1, 2;
    \tadd.s32 \t%r10, %r8, %r9;
    \tst.shared.u32 \t[%r10], %r7;
    \tbar.warp.sync \t-1; ld.global.nc.u32 \t%r14, [%rd3+32];
    \tld.shared.u32 \t%r11, [%r10];
    \t{
    \t.reg .b32 tmp;
    \tadd.s32 tmp, %r11, %r3;
    \tmov.b32 %r12, tmp;
    \t}
    \tadd.s32 \t%r13, %r12, %r7;
    \tmul.wide.u32 \t%rd5, %r1, 4;
    \tadd.s64 \t%rd6, %rd4, %rd5;
    \tst.global.u32 \t[%rd6], %r13;
    \tst.global.u32 \t[%rd6+512], %r11;
    \tret;
    }
    """)
# the region: s9 (mov.u32 %r6, 0) .. the scoped block's last statement s24
K1_RANGE = StatementRange(9, 24)
K1_LINES = (23, 41)    # physical lines 23-40, half-open as a recipe's CUT_CALL

EXTERN_SCRATCH = textwrap.dedent("""\
    .extern .func body1
    (
    \t.param .b64 body1_w, .param .b32 body1_a0, .param .b32 body1_a1, .param .b32 body1_s
    )
    ;
    """)

CALL_SCRATCH = textwrap.dedent("""\
    {
    \t.reg .b32 %rsw<3>;
    \t.param .b64 pw;
    \t.param .b32 p0;
    \t.param .b32 p1;
    \t.param .b32 ps;
    \tst.param.b64 [pw+0], %rd3;
    \tst.param.b32 [p0+0], %r1;
    \tst.param.b32 [p1+0], %r5;
    \tmov.u32 %rsw0, smem;
    \tst.param.b32 [ps+0], %rsw0;
    \tcall.uni body1, (pw, p0, p1, ps);
    \tmov.u32 %rsw2, %laneid;
    \tmad.lo.s32 %rsw1, %rsw2, 12, %rsw0;
    \tld.shared.b32 %r7, [%rsw1+0];
    \tld.shared.b32 %r11, [%rsw1+4];
    \tld.shared.b32 %r12, [%rsw1+8];
    }""")

EXTERN_PARAM = textwrap.dedent("""\
    .extern .func (.param .align 8 .b8 body1_ret[12]) body1
    (
    \t.param .b64 body1_w, .param .b32 body1_a0, .param .b32 body1_a1, .param .b32 body1_s
    )
    ;
    """)

CALL_PARAM = textwrap.dedent("""\
    {
    \t.reg .b32 %rsw<1>;
    \t.param .b64 pw;
    \t.param .b32 p0;
    \t.param .b32 p1;
    \t.param .b32 ps;
    \t.param .align 8 .b8 rv[12];
    \tst.param.b64 [pw+0], %rd3;
    \tst.param.b32 [p0+0], %r1;
    \tst.param.b32 [p1+0], %r5;
    \tmov.u32 %rsw0, smem;
    \tst.param.b32 [ps+0], %rsw0;
    \tcall.uni (rv), body1, (pw, p0, p1, ps);
    \tld.param.b32 %r7, [rv+0];
    \tld.param.b32 %r11, [rv+4];
    \tld.param.b32 %r12, [rv+8];
    }""")


def _k1():
    m = parse(K1)
    return m, m.functions[0]


def _body_lines(ptx: bytes) -> list:
    return [ln.strip() for ln in ptx.decode().splitlines()]


def _assemble(ptxas_path, tmp_path, ptx: bytes, arch="sm_89", name="body.ptx"):
    src = tmp_path / name
    src.write_bytes(ptx)
    proc = subprocess.run([str(ptxas_path), "-O0", "-c", f"-arch={arch}", str(src), "-o",
                           str(tmp_path / (name + ".o"))], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr + ptx.decode()


# ---------------------------------------------------------------- the call text


def test_call_text_maps_registers_to_extern_parameters():
    site = parse_call(CALL_SCRATCH, EXTERN_SCRATCH)
    assert site.callee == "body1"
    by_reg = site.passed_registers()
    assert by_reg["%rd3"].name == "body1_w"
    assert by_reg["%r5"].name == "body1_a1" and by_reg["%r5"].index == 2
    assert by_reg["%rsw0"].name == "body1_s"
    assert site.abi == "scratch"
    assert site.returned_registers() == ["%r7", "%r11", "%r12"]
    assert [rb.offset for rb in site.readbacks] == [0, 4, 8]


def test_call_text_param_returns():
    site = parse_call(CALL_PARAM, EXTERN_PARAM)
    assert site.abi == "param"
    assert [(rb.ret_name, rb.offset) for rb in site.readbacks] == \
        [("body1_ret", 0), ("body1_ret", 4), ("body1_ret", 8)]


def test_call_text_argument_count_must_match_extern():
    bad = CALL_SCRATCH.replace("(pw, p0, p1, ps)", "(pw, p0, p1)")
    with pytest.raises(OutlineError, match="3 argument"):
        parse_call(bad, EXTERN_SCRATCH)


def test_call_text_that_does_not_parse_is_an_outline_error():
    with pytest.raises(OutlineError, match="call text does not parse"):
        parse_call("{ st.param.b32 [p0+0], %r1\n call.uni body1, (p0); }", EXTERN_SCRATCH)


def test_call_text_parse_error_names_the_line_of_the_call_text():
    """The call text is parsed inside a wrapper module after a multi-line extern; the error
    still counts lines of the call text as the user wrote it."""
    bad = "{\n st.param.b32 [p0+0], %r1;\n add.u32 %r1, , %r2;\n call.uni body1, (p0); }"
    assert EXTERN_SCRATCH.count("\n") > 1
    with pytest.raises(OutlineError, match=r"line 3 of the call text: 'add.u32 %r1, , %r2;'"):
        parse_call(bad, EXTERN_SCRATCH)
    with pytest.raises(OutlineError, match=r"extern declaration does not parse.*line 2 of"):
        parse_call("call.uni body1;", ".extern .func body1(\n\t.param .b32 , p0\n);")


# ---------------------------------------------------------------- the body


def test_scratch_body_loads_recomputes_rewrites_and_stores():
    m, fn = _k1()
    o = build_outline(m, fn, K1_RANGE, CALL_SCRATCH, EXTERN_SCRATCH, lines=K1_LINES)
    lines = _body_lines(o.ptx)
    text = o.ptx.decode()
    # header of the original, signature of the extern
    assert text.count(".version 8.7") == 1 and ".target sm_89" in text
    assert ".visible .func body1(" in text
    for p in ("body1_w", "body1_a0", "body1_a1", "body1_s"):
        assert p in text
    # parameters land in the registers the region reads
    assert "ld.param.b64 %rd3, [body1_w+0];" in lines
    assert "ld.param.b32 %r5, [body1_a1+0];" in lines
    # %r2, %r3, %r4 are not passed: recomputed from the passed weight image
    assert o.recomputed == ["%r2", "%r3", "%r4"]
    assert "ld.global.nc.u32 %r2, [%rd3];" in lines
    assert "ld.global.nc.v2.u32 {%r3, %r4}, [%rd3+16];" in lines
    # the .shared symbol becomes the passed base
    assert o.symbols == {"smem": "%rsw0"}
    assert "mov.u32 \t%r8, %rsw0;" in text
    assert re.search(r"(?<![\w$])smem(?![\w$])", text.split("{", 1)[1]) is None
    # the region is verbatim: loop label, scoped block
    assert "$L__BB0_1:" in lines and ".reg .b32 tmp;" in lines
    # the scratch address: %laneid read with mov, then stores where the call reads
    assert "mov.u32 %rsw2, %laneid;" in lines
    assert "mad.lo.s32 %rsw1, %rsw2, 12, %rsw0;" in lines
    tail = lines[lines.index("// ---- end of region ----"):]
    # the stores come in the call's read order, after the address, and the body then returns
    stores = [x for x in tail if x.startswith("st.shared")]
    assert stores == ["st.shared.b32 [%rsw1+0], %r7;", "st.shared.b32 [%rsw1+4], %r11;",
                      "st.shared.b32 [%rsw1+8], %r12;"]
    assert tail.index("mad.lo.s32 %rsw1, %rsw2, 12, %rsw0;") < tail.index(stores[0])
    assert tail[tail.index(stores[-1]) + 1:] == ["ret;", "}"]
    # declarations: the kernel's ranges and the call text's own
    assert ".reg .b32 %r<40>;" in lines and ".reg .b32 %rsw<3>;" in lines


def test_body_region_is_a_verbatim_copy():
    m, fn = _k1()
    o = build_outline(m, fn, K1_RANGE, CALL_SCRATCH, EXTERN_SCRATCH, lines=K1_LINES)
    region = "\n".join(K1.splitlines()[K1_LINES[0] - 1:K1_LINES[1] - 1])
    assert region.replace("smem;", "%rsw0;") in o.ptx.decode()


def test_statement_range_without_lines_takes_the_closing_brace():
    m, fn = _k1()
    o = build_outline(m, fn, K1_RANGE, CALL_SCRATCH, EXTERN_SCRATCH)
    assert o.lines == (23, 40)


def test_param_return_body(ptxas_path, tmp_path):
    m, fn = _k1()
    o = build_outline(m, fn, K1_RANGE, CALL_PARAM, EXTERN_PARAM, lines=K1_LINES)
    lines = _body_lines(o.ptx)
    assert o.abi == "param"
    assert ".visible .func (.param .align 8 .b8 body1_ret[12]) body1(" in o.ptx.decode()
    assert [x for x in lines if x.startswith("st.param")] == [
        "st.param.b32 [body1_ret+0], %r7;", "st.param.b32 [body1_ret+4], %r11;",
        "st.param.b32 [body1_ret+8], %r12;"]
    _assemble(ptxas_path, tmp_path, o.ptx)


def test_scratch_body_assembles(ptxas_path, tmp_path):
    m, fn = _k1()
    _assemble(ptxas_path, tmp_path, outline(m, fn, K1_RANGE, CALL_SCRATCH, EXTERN_SCRATCH))
    _assemble(ptxas_path, tmp_path, outline(m, fn, K1_RANGE, CALL_SCRATCH, EXTERN_SCRATCH),
              arch="sm_120", name="b120.ptx")


def test_special_register_in_call_text_is_read_with_mov(ptxas_path, tmp_path):
    """The seed's form `mad.lo.s32 %rswin1, %laneid, 12, %rswin0`: the body must not copy it."""
    call = CALL_SCRATCH.replace("\tmov.u32 %rsw2, %laneid;\n", "").replace(
        "mad.lo.s32 %rsw1, %rsw2, 12, %rsw0;", "mad.lo.s32 %rsw1, %laneid, 12, %rsw0;")
    m, fn = _k1()
    o = build_outline(m, fn, K1_RANGE, call, EXTERN_SCRATCH)
    lines = _body_lines(o.ptx)
    assert not any("%laneid" in x and not x.startswith("mov.u32") for x in lines)
    i = next(i for i, x in enumerate(lines) if x.startswith("mad.lo.s32 %rsw1"))
    assert lines[i - 1].startswith("mov.u32 ") and lines[i - 1].endswith(", %laneid;")
    _assemble(ptxas_path, tmp_path, o.ptx)


def test_unpassed_shared_symbol_is_refused():
    call = CALL_SCRATCH.replace("mov.u32 %rsw0, smem;", "mov.u32 %rsw0, 0;")
    m, fn = _k1()
    with pytest.raises(OutlineError, match=r"s16 \(line 30\).*\.shared array smem.*pass its "
                                           r"address"):
        build_outline(m, fn, K1_RANGE, call, EXTERN_SCRATCH)


def test_unpassed_underivable_live_in_is_refused():
    # without the weight image %r2 cannot be recomputed
    call = CALL_SCRATCH.replace("st.param.b64 [pw+0], %rd3;", "st.param.b64 [pw+0], %rd4;")
    m, fn = _k1()
    with pytest.raises(OutlineError, match=r"%r2 is live into the region \(first read at s12"):
        build_outline(m, fn, K1_RANGE, call, EXTERN_SCRATCH)


def test_readback_through_an_unknown_register_is_refused():
    call = CALL_SCRATCH.replace("mad.lo.s32 %rsw1, %rsw2, 12, %rsw0;",
                                "mad.lo.s32 %rsw1, %rsw2, 12, %r30;")
    m, fn = _k1()
    with pytest.raises(OutlineError, match="reads back through %r30"):
        build_outline(m, fn, K1_RANGE, call, EXTERN_SCRATCH)


def test_cut_splitting_a_block_is_refused():
    m, fn = _k1()
    with pytest.raises(OutlineError, match="cuts the { } block"):
        build_outline(m, fn, StatementRange(9, 23), CALL_SCRATCH, EXTERN_SCRATCH,
                      lines=(23, 39))


# ---------------------------------------------------------------- kernel parameters

K2 = textwrap.dedent("""\
    .version 8.7
    .target sm_89
    .address_size 64

    .visible .entry k2(
    \t.param .u64 k2_param_0,
    \t.param .u32 k2_param_1
    )
    {
    \t.reg .b32 \t%r<10>;
    \t.reg .b64 \t%rd<6>;

    \tld.param.u64 \t%rd1, [k2_param_0];
    \tld.param.u32 \t%r1, [k2_param_1];
    \tcvta.to.global.u64 \t%rd2, %rd1;
    \tld.param.u32 \t%r2, [k2_param_1];
    \tadd.s32 \t%r3, %r2, %r1;
    \tst.global.u32 \t[%rd2], %r3;
    \tret;
    }
    """)

EXT2 = ".extern .func body2\n(\n\t.param .b32 body2_a, .param .b64 body2_p\n)\n;\n"
CALL2 = textwrap.dedent("""\
    {
    \t.param .b32 pa;
    \t.param .b64 pp;
    \t.param .align 4 .b8 rv[4];
    \tst.param.b32 [pa+0], %r1;
    \tst.param.b64 [pp+0], %rd2;
    \tcall.uni body2, (pa, pp);
    }""")


def test_kernel_parameter_read_becomes_the_passed_value(ptxas_path, tmp_path):
    m = parse(K2)
    fn = m.functions[0]
    # region: s4 (ld.param %r2 = param_1, the same value as the passed %r1) .. s6
    o = build_outline(m, fn, StatementRange(4, 6), CALL2, EXT2)
    assert o.kernel_params == [4]
    text = o.ptx.decode()
    assert "k2_param_1" not in text
    assert re.search(r"mov\.b32 %r2, %\w+;", text)
    _assemble(ptxas_path, tmp_path, o.ptx)


def test_kernel_parameter_read_not_passed_is_refused():
    m = parse(K2)
    fn = m.functions[0]
    call = CALL2.replace("st.param.b32 [pa+0], %r1;", "st.param.b32 [pa+0], 7;")
    with pytest.raises(OutlineError, match=r"s4 \(line 16\) reads a kernel parameter"):
        build_outline(m, fn, StatementRange(4, 6), call, EXT2)


# ---------------------------------------------------------------- branches and loops


def test_cfg_loops_region_with_a_second_entry_is_refused(fixtures_dir):
    m = parse(fixtures_dir / "small" / "cfg_loops.ptx")
    fn = m.functions[0]
    ext = ".extern .func b3\n(\n\t.param .b32 b3_a\n)\n;\n"
    call = "{\n\t.param .b32 pa;\n\tst.param.b32 [pa+0], %r1;\n\tcall.uni b3, (pa);\n}"
    # s15-s32: the loop and the diamond; $L__BB0_3 (s24) is also the prologue's target
    with pytest.raises(OutlineError, match=r"outside the region, branches to \$L__BB0_3"):
        build_outline(m, fn, StatementRange(15, 32), call, ext)


def test_cfg_loops_region_branching_out_is_refused(fixtures_dir):
    m = parse(fixtures_dir / "small" / "cfg_loops.ptx")
    fn = m.functions[0]
    ext = ".extern .func b3\n(\n\t.param .b32 b3_a\n)\n;\n"
    call = "{\n\t.param .b32 pa;\n\tst.param.b32 [pa+0], %r1;\n\tcall.uni b3, (pa);\n}"
    # s25-s35: the diamond and the early exit to $L__BB0_8, outside
    with pytest.raises(OutlineError, match=r"branches to \$L__BB0_8 .*outside the region"):
        build_outline(m, fn, StatementRange(25, 35), call, ext)


CFG_EXT = textwrap.dedent("""\
    .extern .func (.param .align 4 .b8 cfg_ret[8]) cfg_body
    (
    \t.param .b32 cfg_a, .param .b32 cfg_b, .param .b32 cfg_c, .param .b32 cfg_d
    )
    ;
    """)

CFG_CALL = textwrap.dedent("""\
    {
    \t.param .b32 a;
    \t.param .b32 b;
    \t.param .b32 c;
    \t.param .b32 d;
    \t.param .align 4 .b8 r[8];
    \tst.param.b32 [a+0], %r4;
    \tst.param.b32 [b+0], %r5;
    \tst.param.b32 [c+0], %r6;
    \tst.param.b32 [d+0], %r11;
    \tcall.uni (r), cfg_body, (a, b, c, d);
    \tld.param.b32 %r10, [r+0];
    \tld.param.b32 %r11, [r+4];
    }""")


def test_cfg_loops_diamond_region(fixtures_dir, ptxas_path, tmp_path):
    """s26-s32 of cfg_loops: the if/else diamond (`@%p4 bra.uni`, `bra.uni` to the join).
    %p4 is not passed: its definition (s25, `setp.gt.s32 %p4, %r5, %r4`) reads only passed
    registers, so the body recomputes it. %r11 is written on the else arm only, so the body
    needs its incoming value although the region never reads it."""
    m = parse(fixtures_dir / "small" / "cfg_loops.ptx")
    fn = m.functions[0]
    o = build_outline(m, fn, StatementRange(26, 32), CFG_CALL, CFG_EXT)
    text = o.ptx.decode()
    for lab in ("$L__BB0_5:", "$L__BB0_6:"):
        assert lab in text
    assert "@%p4 bra.uni \t$L__BB0_5;" in text
    assert o.abi == "param"
    assert o.recomputed == ["%p4"]
    assert "setp.gt.s32 %p4, %r5, %r4;" in _body_lines(o.ptx)
    assert "%r11" in o.needs
    _assemble(ptxas_path, tmp_path, o.ptx)


def test_cfg_loops_value_with_two_reaching_definitions_is_refused(fixtures_dir):
    """%r6 reaches s25 from s8 (through the side entry) and from s16: not recomputable."""
    m = parse(fixtures_dir / "small" / "cfg_loops.ptx")
    fn = m.functions[0]
    call = CFG_CALL.replace("st.param.b32 [c+0], %r6;", "st.param.b32 [c+0], %r1;")
    with pytest.raises(OutlineError, match=r"%r6 is live into the region.*2 definitions reach"):
        build_outline(m, fn, StatementRange(26, 32), call, CFG_EXT)


def test_cfg_loops_loop_region(fixtures_dir, ptxas_path, tmp_path):
    """s15-s22: the loop with its back edge; %r5 and %r9 come back."""
    m = parse(fixtures_dir / "small" / "cfg_loops.ptx")
    fn = m.functions[0]
    ext = (".extern .func (.param .align 4 .b8 lp_ret[8]) lp\n(\n\t.param .b32 lp_a, "
           ".param .b32 lp_b, .param .b32 lp_c\n)\n;\n")
    call = textwrap.dedent("""\
        {
        \t.param .b32 a;
        \t.param .b32 b;
        \t.param .b32 c;
        \t.param .align 4 .b8 r[8];
        \tst.param.b32 [a+0], %r1;
        \tst.param.b32 [b+0], %r3;
        \tst.param.b32 [c+0], %r5;
        \tcall.uni (r), lp, (a, b, c);
        \tld.param.b32 %r5, [r+0];
        \tld.param.b32 %r9, [r+4];
        }""")
    o = build_outline(m, fn, StatementRange(15, 22), call, ext)
    assert o.needs == ["%r1", "%r3", "%r5"]
    text = o.ptx.decode()
    assert "$L__BB0_1:" in text and "@%p3 bra \t$L__BB0_1;" in text
    _assemble(ptxas_path, tmp_path, o.ptx)


def test_block_barrier_after_scratch_reads_is_mirrored_before_the_stores(ptxas_path, tmp_path):
    """A call text that synchronises the block after reading its scratch slots (so no warp
    reuses the array before all have read) gets the same barrier in the body before the
    slot stores (so no warp writes its slot while another still uses the array)."""
    call = CALL_SCRATCH.replace("\tld.shared.b32 %r12, [%rsw1+8];\n",
                                "\tld.shared.b32 %r12, [%rsw1+8];\n\tbar.sync 0;\n")
    m, fn = _k1()
    o = build_outline(m, fn, K1_RANGE, call, EXTERN_SCRATCH)
    lines = _body_lines(o.ptx)
    i = lines.index("bar.sync 0;")
    assert lines[i + 1] == "st.shared.b32 [%rsw1+0], %r7;"
    assert lines.count("bar.sync 0;") == 1
    _assemble(ptxas_path, tmp_path, o.ptx)
    # without it, no barrier
    assert "bar.sync 0;" not in _body_lines(build_outline(m, fn, K1_RANGE, CALL_SCRATCH,
                                                          EXTERN_SCRATCH).ptx)
