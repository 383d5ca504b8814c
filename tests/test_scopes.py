"""Scoped registers (`{ .reg .b32 %r2; ... }`): each nested declaration is a register of its
own in def/use, liveness, reaching definitions, `check` and `outline`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice import parse
from rrsplice.analysis.dataflow import FunctionAnalysis
from rrsplice.check import check_recipe
from rrsplice.check.scope import _check_scoped_crossing
from rrsplice.cli import main
from rrsplice.outline import outline_recipe
from rrsplice.ptx.scopes import is_scoped, source_name
from rrsplice.ptx.select import StatementRange

ROOT = Path(__file__).resolve().parent.parent
SCOPES = ROOT / "corpus_fixtures" / "small" / "scopes.ptx"
BAD = ROOT / "tests" / "recipes_bad"


def _fa(path=SCOPES):
    return FunctionAnalysis(parse(path).functions[0])


def test_issue_example_inner_register_is_not_live_out():
    fa = _fa()
    fn = fa.fn
    # s5 `mov.u32 %r2, 5` and s6 `add.u32 %r3, %r1, %r2` are the inner block
    assert fn.statement(5).text.strip().startswith("mov.u32") and fn.statement(5).line == 22
    inner = StatementRange(5, 6)
    assert fa.range_live_out(inner) == ["%r3"]
    assert fa.range_live_in(inner) == ["%r1"]
    # the outer %r2 (7, s4) passes through the block untouched and is what s7 reads
    assert "%r2" in fa.range_live_through(inner)
    assert fa.reaching_defs(7, "%r2") == [4]
    (key,) = fa.du[4].defs
    assert key == "%r2@B1" and is_scoped(key) and source_name(key) == "%r2"
    assert fa.reaching_defs(6, key) == [5]
    assert key not in fa.live_in_at(7) and "%r2" in fa.live_in_at(7)


def test_issue_example_from_the_command_line():
    res = CliRunner().invoke(main, ["liveness", str(SCOPES), "--lines", "22-23", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    assert [r["register"] for r in got["live_out"]] == ["%r3"]
    assert [r["register"] for r in got["live_in"]] == ["%r1"]


def test_cut_inside_a_scope_that_declares_registers_is_an_error():
    rep = check_recipe(BAD / "cut_scope.py")
    assert {f.code for f in rep.errors} == {"cut-scope"}
    (f,) = rep.errors
    assert "lines 20-24" in f.message and "%r2" in f.message and f.statement == "s5"


def test_cut_around_the_whole_scope_passes_and_outlines():
    rep = check_recipe(BAD / "good_scopes.py")
    assert rep.ok, [f.render() for f in rep.errors]
    assert rep.facts.live_in == ["%r1"] and rep.facts.live_out == ["%r3"]
    body, _path, _rec = outline_recipe(BAD / "good_scopes.py")
    text = body.ptx.decode()
    assert body.needs == ["%r1"] and body.returned == ["%r3"]
    assert "\t.reg .b32 %r2;\n\tmov.u32 \t%r2, 5;" in text    # the block comes along
    ptxas = shutil.which("ptxas")
    if ptxas is None:
        assert os.environ.get("RRSPLICE_REQUIRE_PTXAS") != "1", "ptxas not found"
        return
    tmp = ROOT / "out"
    tmp.mkdir(exist_ok=True)
    path = tmp / "test_scopes.body.ptx"
    path.write_bytes(body.ptx)
    subprocess.run([ptxas, "-arch=sm_89", "-c", str(path), "-o", os.devnull], check=True)


class _Collect:
    def __init__(self):
        self.found = []

    def add(self, severity, code, message, st=None, line=None, registers=()):
        self.found.append((severity, code, message, list(registers)))


def test_scope_local_register_crossing_the_boundary_is_an_error():
    # the block reads its own t before writing it: t would be live into a cut around it
    text = SCOPES.read_text().replace("mov.u32 \t%r2, 5;", "add.u32 \t%r2, %r2, 5;")
    fa = FunctionAnalysis(parse(text).functions[0])
    rep = _Collect()
    _check_scoped_crossing(rep, fa, StatementRange(5, 6))
    assert [(s, c, r) for s, c, _m, r in rep.found] == [("error", "scope-register",
                                                          ["%r2@B1"])]
    assert "%r2 declared in the { } block of lines 20-24 is live into" in rep.found[0][2]


@pytest.mark.parametrize("decl", ["t", "%t<2>"])
def test_sibling_blocks_on_one_line_and_ranges_get_distinct_keys(decl):
    name = "t" if decl == "t" else "%t1"
    text = SCOPES.read_text().replace(
        "\t{\n\t.reg .b32 %r2;\n", f"\t{{ .reg .b32 {decl}; }}{{ .reg .b32 {decl};\n\t.reg .b32 %r2;\n").replace(
        "mov.u32 \t%r2, 5;", f"mov.u32 \t%r2, 5;\n\tmov.u32 {name}, 1;")
    fn = parse(text).functions[0]
    keys = {k for st in fn.statements if not st.is_label
            for k in FunctionAnalysis(fn).du[st.index - 1].defs if source_name(k) == name}
    assert keys == {f"{name}@B2"}        # the second block's, not the first's (B1)


TWO_WAITS = """.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 %r<8>;
	.reg .pred %p<3>;
	mov.u32 %r1, 1;
	mov.u32 %r2, 2;
	{
	.reg .pred P1;
LAB_WAIT:
	setp.gt.u32 P1, %r1, 5;
	add.u32 %r1, %r1, 1;
	@!P1 bra LAB_WAIT;
	}
	{
	.reg .pred P1;
LAB_WAIT:
	setp.gt.u32 P1, %r2, 5;
	add.u32 %r3, %r2, 1;
	@!P1 bra LAB_WAIT;
	}
	st.global.u32 [%rd0], %r3;
	ret;
}
""".replace("[%rd0]", "[%r4]")


def test_labels_are_local_to_their_block():
    from rrsplice.analysis.cfg import build_cfg
    fn = parse(TWO_WAITS).functions[0]
    cfg = build_cfg(fn)
    assert not cfg.unresolved
    labs = [st.index for st in fn.statements if st.is_label]
    bras = [st.index for st in fn.statements if st.base == "bra"]
    assert len(labs) == 2 and len(bras) == 2
    for lab, bra in zip(labs, bras, strict=False):       # each retry loop branches back to its own label
        assert lab in cfg.stmt_succs(bra)
    fa = FunctionAnalysis(fn)
    # %r1 is only read in the first loop: not live in the second one
    second = StatementRange(labs[1], bras[1])
    assert "%r1" not in fa.range_live_in(second)
    assert "%r2" in fa.live_in_at(labs[1])
    # the first loop's back edge reads %r1 again: live after its branch
    assert "%r1" in fa.live_out_at(bras[0])


def test_inline_asm_retry_loops_of_the_conformance_corpus_resolve_to_their_own_block():
    from rrsplice.analysis.cfg import build_cfg
    path = ROOT / "corpus_fixtures" / "conformance" / "nvcc" / "hopper_sm_90a.ptx"
    for fn in parse(path).functions:
        cfg = build_cfg(fn)
        assert not cfg.unresolved
        for st in fn.statements:
            if st.base == "bra" and st.operands[0].name in ("LAB_WAIT", "DONE"):
                (to,) = [s for s in cfg.stmt_succs(st.index)
                         if fn.statements[s - 1].is_label
                         and fn.statements[s - 1].label == st.operands[0].name]
                assert fn.statements[to - 1].block is st.block


def test_issue_warp_scan_block_keeps_its_registers_inside():
    text = """.version 8.7
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
	.reg .b32 %r<5>;
	.reg .pred %p<2>;
	.reg .b64 %rd<2>;
	ld.param.u64 %rd1, [k_param_0];
	ld.global.u32 %r3, [%rd1];
	{ .reg .pred p; .reg .b32 t;
	shfl.sync.down.b32 t|p, %r3, 1, 31, -1;
	@p add.u32 %r3, %r3, t; }
	elect.sync _|%p1, -1;
	@%p1 st.global.u32 [%rd1], %r3;
	ret;
}
"""
    fn = parse(text).functions[0]
    fa = FunctionAnalysis(fn)
    shfl, add = fn.statement(3), fn.statement(4)
    assert set(fa.du[2].defs) == {"t@B1", "p@B1"}
    assert set(fa.du[3].uses) == {"p@B1", "%r3", "t@B1"}
    block = StatementRange(3, 4)
    assert fa.range_live_in(block) == ["%r3"] and fa.range_live_out(block) == ["%r3"]
    assert set(fa.du[4].defs) == {"%p1"} and fa.du[4].kills == ("%p1",)
    assert shfl.text.strip().startswith("shfl") and add.guard is not None
