"""`rrsplice check` on small kernels written here, each with the finding a user must get:
a backward branch leaving the cut, a cut of the shape `} ... {`, too few or too many call
arguments, an atomic as the first access to the scratch array after the region, and a
`ret` inside the cut. The line numbers are the kernels' own (counted by hand)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rrsplice.check import check_recipe

KERNEL = textwrap.dedent("""\
    .version 8.7
    .target sm_89
    .address_size 64

    .visible .entry k(
    \t.param .u64 k_param_0
    )
    .maxntid 32, 1, 1
    {
    \t.reg .pred %p<4>;
    \t.reg .b32 %r<20>;
    \t.reg .b64 %rd<4>;
    \t.shared .align 16 .b8 smem[1024];

    \tld.param.u64 %rd1, [k_param_0];
    \tcvta.to.global.u64 %rd2, %rd1;
    \tmov.u32 %r1, %tid.x;
    \tmov.u32 %r2, 0;
    $L_loop:
    \tadd.s32 %r2, %r2, %r1;
    \tsetp.lt.u32 %p1, %r2, 100;
    \tadd.s32 %r3, %r2, 1;
    \t@%p1 bra $L_loop;
    \t{
    \t.reg .b32 t;
    \tadd.s32 t, %r3, 1;
    \tmov.b32 %r4, t;
    \t}
    \tadd.s32 %r5, %r4, 1;
    \t{
    \t.reg .b32 u;
    \tadd.s32 u, %r5, 1;
    \tmov.b32 %r6, u;
    \t}
    \tmov.u32 %r7, smem;
    \tshl.b32 %r8, %r1, 2;
    \tadd.s32 %r9, %r7, %r8;
    \tst.shared.u32 [%r9], %r6;
    \tmul.lo.s32 %r10, %r6, 3;
    \tadd.s32 %r11, %r10, 5;
    \tATOMIC
    \tadd.s32 %r13, %r11, %r12;
    \tst.global.u32 [%rd2], %r13;
    \tret;
    }
    """)
# line numbers of the kernel above
L_LOOP, L_SETP, L_ADD3, L_BRA = 19, 21, 22, 23
L_CLOSE1, L_OPEN2 = 28, 30
L_MUL10, L_ADD11, L_ATOM = 39, 40, 41


def write(tmp_path: Path, call: str, extern: str, cut: tuple, atomic: str =
          "ld.shared.u32 %r12, [%r9];", kernel: str = KERNEL, scratch: bool = False) -> Path:
    ptx = tmp_path / "k.ptx"
    ptx.write_text(kernel.replace("ATOMIC", atomic))
    rec = tmp_path / "k_recipe.py"
    rec.write_text(("SCRATCH = 'smem'\n\n" if scratch else "") + f"def recipe():\n    return dict(file={str(ptx)!r}, "
                   f"cut_call={cut!r}, call={call!r}, extern={extern!r})\n")
    return rec


def call_param(passed: list, returned: list, callee="body", n_decl=None, types=None):
    """Call text passing `passed` and reading `returned` through a .param return."""
    lines = ["{"]
    names = []
    for i, r in enumerate(passed):
        t = (types or {}).get(r, "b32")
        lines += [f"\t.param .{t} a{i};", f"\tst.param.{t} [a{i}+0], {r};"]
        names.append(f"a{i}")
    lines.append(f"\t.param .align 4 .b8 rv[{4 * len(returned)}];")
    lines.append(f"\tcall.uni (rv), {callee}, ({', '.join(names)});")
    lines += [f"\tld.param.b32 {r}, [rv+{4 * i}];" for i, r in enumerate(returned)]
    lines.append("}")
    n = len(passed) if n_decl is None else n_decl
    params = ",\n".join(f"\t.param .{(types or {}).get(passed[i], 'b32') if i < len(passed) else 'b32'} "
                        f"{callee}_a{i}" for i in range(n))
    ext = (f".extern .func (.param .align 4 .b8 {callee}_ret[{4 * len(returned)}]) {callee}\n"
           f"(\n{params}\n)\n;\n")
    return "\n".join(lines), ext


def codes(rep, severity="error"):
    return {f.code for f in rep.findings if f.severity == severity}


def test_backward_branch_leaving_the_cut_is_reported(tmp_path):
    # lines 22-23: `add %r3` and `@%p1 bra $L_loop` (back to line 19, before the cut)
    call, ext = call_param(["%r2"], ["%r3"])
    rep = check_recipe(write(tmp_path, call, ext, (L_ADD3, L_BRA + 1)))
    exits = [f for f in rep.findings if f.code == "branch-exit"]
    assert exits and exits[0].severity == "error"
    assert "$L_loop" in exits[0].message


def test_cut_without_the_branch_has_no_branch_exit(tmp_path):
    call, ext = call_param(["%r2"], ["%r3"])
    rep = check_recipe(write(tmp_path, call, ext, (L_ADD3, L_ADD3 + 1)))
    assert "branch-exit" not in codes(rep)
    assert "cut-block" not in codes(rep)


def test_cut_dipping_below_zero_braces_is_a_cut_block(tmp_path):
    # lines 28-30: `}` of the first block ... `{` of the second: balanced, lowest -1
    call, ext = call_param(["%r4"], ["%r5"])
    rep = check_recipe(write(tmp_path, call, ext, (L_CLOSE1, L_OPEN2 + 1)))
    blocks = [f for f in rep.findings if f.code == "cut-block"]
    assert blocks and blocks[0].severity == "error"
    assert "lowest -1" in blocks[0].message


def test_cut_opening_a_block_is_a_cut_block(tmp_path):
    call, ext = call_param(["%r5"], [])
    rep = check_recipe(write(tmp_path, call, ext, (L_OPEN2 - 1, L_OPEN2 + 1)))
    assert "cut-block" in codes(rep)


@pytest.mark.parametrize("n_decl,n_pass", [(3, 2), (1, 2)])
def test_argument_count_must_match_the_declaration(tmp_path, n_decl, n_pass):
    # lines 39-40 read %r6 and %r10... pass %r6 and %r1
    call, ext = call_param(["%r6", "%r1"], ["%r11"], n_decl=n_decl)
    rep = check_recipe(write(tmp_path, call, ext, (L_MUL10, L_ADD11 + 1)))
    args = [f for f in rep.findings if f.code == "call-args" and f.severity == "error"]
    assert args, rep.findings
    assert f"passes {n_pass} argument(s)" in args[0].message
    assert f"has {n_decl}" in args[0].message


def test_matching_arguments_pass(tmp_path):
    call, ext = call_param(["%r6"], ["%r11"])
    rep = check_recipe(write(tmp_path, call, ext, (L_MUL10, L_ADD11 + 1)))
    assert "call-args" not in codes(rep)
    assert rep.ok, [(f.code, f.message) for f in rep.errors]


def scratch_call():
    call = "\n".join([
        "{", "\t.reg .b32 %rs<3>;", "\t.param .b32 a0;", "\tst.param.b32 [a0+0], %r6;",
        "\t.param .b32 ps;", "\tmov.u32 %rs0, smem;", "\tst.param.b32 [ps+0], %rs0;",
        "\tcall.uni body, (a0, ps);", "\tmov.u32 %rs1, %laneid;",
        "\tmad.lo.s32 %rs2, %rs1, 4, %rs0;", "\tld.shared.b32 %r11, [%rs2+0];", "}"])
    ext = ".extern .func body\n(\n\t.param .b32 b0,\n\t.param .b32 b1\n)\n;\n"
    return call, ext


@pytest.mark.parametrize("first_after,severity", [
    ("atom.shared.add.u32 %r12, [%r9], 1;", "error"),      # reads the live value
    ("ld.shared.u32 %r12, [%r9];", "error"),
    ("st.shared.u32 [%r9], %r1;", "warning"),               # overwrites it first
])
def test_scratch_first_access_after_the_region(tmp_path, first_after, severity):
    kernel = KERNEL
    if first_after.startswith("st."):
        kernel = KERNEL.replace("\tATOMIC\n", "\tATOMIC\n\tld.shared.u32 %r12, [%r9];\n")
    call, ext = scratch_call()
    rep = check_recipe(write(tmp_path, call, ext, (L_MUL10, L_ADD11 + 1), atomic=first_after,
                             kernel=kernel, scratch=True))
    live = [f for f in rep.findings if f.code == "scratch-live"]
    assert live, rep.findings
    assert {f.severity for f in live} == {severity}


def test_ret_inside_the_cut_is_reported(tmp_path):
    lines = KERNEL.splitlines()
    n = len(lines) - 1           # the `ret;` line (1-based: the line before the last '}')
    call, ext = call_param(["%r13", "%rd2"], [], types={"%rd2": "b64"})
    rep = check_recipe(write(tmp_path, call, ext, (n - 1, n + 1)))
    ctl = [f for f in rep.findings if f.code == "control"]
    assert any("`ret`" in f.message for f in ctl), rep.findings


def test_cut_past_the_end_of_the_module(tmp_path):
    n = len(KERNEL.splitlines())
    call, ext = call_param(["%r6"], ["%r11"])
    rep = check_recipe(write(tmp_path, call, ext, (n, n + 2)))
    cut = [f for f in rep.findings if f.code == "cut-range" and f.severity == "error"]
    assert cut and "past the end" in cut[0].message


def test_cut_including_the_body_brace_is_out_of_the_body(tmp_path):
    call, ext = call_param(["%r6"], ["%r11"])
    rep = check_recipe(write(tmp_path, call, ext, (9, 12)))      # line 9 is the body's `{`
    cut = [f for f in rep.findings if f.code == "cut-range" and f.severity == "error"]
    assert cut and "not inside" in cut[0].message


def test_return_count_must_match_the_declaration(tmp_path):
    call, ext = call_param(["%r6"], ["%r11"])
    call = call.replace("call.uni (rv), body, (a0);", "call.uni body, (a0);")
    call = call.replace("\tld.param.b32 %r11, [rv+0];\n", "")
    rep = check_recipe(write(tmp_path, call, ext, (L_MUL10, L_ADD11 + 1)))
    args = [f for f in rep.findings if f.code == "call-args" and f.severity == "error"]
    assert any("takes 0 return value(s)" in f.message and "returns 1" in f.message
               for f in args), rep.findings


def test_braces_in_comments_do_not_count(tmp_path):
    kernel = KERNEL.replace("\tmul.lo.s32 %r10, %r6, 3;\n",
                            "\tmul.lo.s32 %r10, %r6, 3; // } or { in a comment\n")
    call, ext = call_param(["%r6"], ["%r11"])
    rep = check_recipe(write(tmp_path, call, ext, (L_MUL10, L_ADD11 + 1), kernel=kernel))
    assert "cut-block" not in codes(rep)
    assert rep.ok, [(f.code, f.message) for f in rep.errors]


def test_delete_check_text_must_match(tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(KERNEL.replace("ATOMIC", "ld.shared.u32 %r12, [%r9];"))
    rec = tmp_path / "d_recipe.py"
    rec.write_text(f"def recipe():\n    return dict(file={str(ptx)!r}, delete=({L_MUL10}, "
                   f"{L_ADD11 + 1}), delete_check=('mul.lo.s32 %r10', 'sub.s32'), "
                   f"insert='\\tmov.u32 %r11, 0;\\n')\n")
    rep = check_recipe(rec)
    texts = [f for f in rep.findings if f.code == "cut-text"]
    assert len(texts) == 1 and texts[0].severity == "error" and "sub.s32" in texts[0].message
