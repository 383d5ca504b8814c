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
from rrsplice.check import check_recipe
from rrsplice.check.scope import _check_scoped_crossing
from rrsplice.cli import main
from rrsplice.dataflow import FunctionAnalysis
from rrsplice.outline import outline_recipe
from rrsplice.scopes import is_scoped, source_name
from rrsplice.select import StatementRange

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
    assert key == "%r2@L21" and is_scoped(key) and source_name(key) == "%r2"
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
    assert rep.facts["live_in"] == ["%r1"] and rep.facts["live_out"] == ["%r3"]
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
                                                          ["%r2@L21"])]
    assert "%r2 declared in the { } block at line 21 is live into" in rep.found[0][2]


@pytest.mark.parametrize("decl", ["t", "%t<2>"])
def test_same_line_declarations_and_ranges_get_distinct_keys(decl):
    name = "t" if decl == "t" else "%t1"
    text = SCOPES.read_text().replace(
        "\t{\n\t.reg .b32 %r2;\n", "\t{ .reg .b32 %s; }{ .reg .b32 %s;\n\t.reg .b32 %%r2;\n"
        % (decl, decl)).replace("mov.u32 \t%r2, 5;", f"mov.u32 \t%r2, 5;\n\tmov.u32 {name}, 1;")
    fn = parse(text).functions[0]
    keys = {k for st in fn.statements if not st.is_label
            for k in FunctionAnalysis(fn).du[st.index - 1].defs if source_name(k) == name}
    assert len(keys) == 1 and next(iter(keys)).startswith(f"{name}@L20c")
