"""Debug stages: `stages new`, `apply --debug`, the point checks and layer-qualified names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.check import check_recipe
from rrsplice.cli import main
from rrsplice.infra.tools import ptxas
from rrsplice.workflow.recipe import RecipeError, load_recipe
from rrsplice.workflow.splice import apply
from rrsplice.workflow.stages import StageError, add_stage

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def dec2(tmp_path) -> Path:
    p = tmp_path / "swin_dec2.py"
    shutil.copyfile(ROOT / "recipes" / "swin_dec2.py", p)
    # dec2 writes through no pointer (its output is a surface): the debug window goes into
    # the plane arena, past what the prologue reads, as the users' own project does
    with p.open("a") as f:
        f.write('\nDEBUG_PARAM = "+8"\nDEBUG_BASE = 1 << 24\nDEBUG_ALIAS_OK = '
                '"the window starts 16 MiB into the arena; the prologue reads its first '
                'planes"\n')
    return p


@pytest.mark.slow
def test_phase_stage_is_written_qualified_and_applies(dec2, tmp_path, ptxas_path):
    res = add_stage(dec2, phase=1)
    assert res["name"] == "dec2.p1_out" and res["line"] == 2396 and res["after"] == "s595"
    assert len(res["registers"]) == 72           # 36 chains x {d0, d1}
    table = load_recipe(dec2).stages()
    assert table["dec2.p1_out"] == (2396, res["registers"])
    out = apply(dec2, stage="p1_out", out=tmp_path / "dbg.ptx")   # unqualified: qualified
    data = out.output.read_text()
    assert "rrsplice debug stage dec2.p1_out" in data
    assert "call.uni" not in data                 # the body is kept, not cut
    for arch in ("sm_89", "sm_120"):
        r = ptxas(out.output, arch, verbose=False, out=tmp_path / f"{arch}.cubin")
        assert r.ok, r.log[-2000:]


def test_at_statement_and_line(dec2):
    a = add_stage(dec2, at="s452", regs="%r1040, %r1041", name="a_in")
    assert a["name"] == "dec2.a_in" and a["line"] == 1538
    b = add_stage(dec2, line=2396, regs=["%r2089"])
    assert b["name"] == "dec2.L2396"
    assert set(load_recipe(dec2).stages()) == {"dec2.a_in", "dec2.L2396"}
    rep = check_recipe(dec2, stage="dec2.a_in")
    assert rep.ok and rep.facts.stage.after == "s452"


def test_point_must_end_a_statement(dec2):
    with pytest.raises(StageError, match="inside s452"):
        add_stage(dec2, line=1536, regs="%r1040")
    with pytest.raises(StageError, match="holds no statement"):
        add_stage(dec2, line=1532, regs="%r1040")


def test_registers_must_be_defined_on_every_path(dec2):
    with pytest.raises(StageError, match="stage-undefined"):
        add_stage(dec2, at="s452", regs="%r19360")
    with pytest.raises(StageError, match="undeclared"):
        add_stage(dec2, at="s452", regs="%q1")


def test_guarded_definition_is_not_every_path(tmp_path):
    # cfg_loops: %r10 is written on both diamond arms; %r9 only in the loop, which the
    # side entry into $L__BB0_3 skips. cfg_loops reads through its only pointer, so the
    # built-in block has nowhere safe to store: the recipe brings its own debug block
    p = tmp_path / "cfg.py"
    p.write_text("F = 'small/cfg_loops.ptx'\n\ndef recipe():\n    return dict(file=F)\n\n"
                 "def debug_block(regs):\n    return '\\t// ' + ' '.join(regs)\n")
    assert add_stage(p, line=111, regs="%r10", name="join")["name"] == "cfg.join"
    with pytest.raises(StageError, match="%r9 is not defined on every path"):
        add_stage(p, line=111, regs="%r9")


def test_layers_never_resolve_each_others_stages(dec2, tmp_path):
    add_stage(dec2, phase=1)
    with pytest.raises(RecipeError, match="belongs to layer 'dec1'"):
        apply(dec2, stage="dec1.p1_out", out=tmp_path / "x.ptx")
    with pytest.raises(StageError, match="another layer"):
        add_stage(dec2, phase=2, name="dec1.p2_out")
    with pytest.raises(RecipeError, match="no debug stage 'dec2.nope'"):
        check_recipe(dec2, stage="nope")


@pytest.mark.slow
def test_duplicate_and_foreign_tables(dec2, tmp_path):
    add_stage(dec2, phase=1)
    with pytest.raises(StageError, match="already has a stage"):
        add_stage(dec2, phase=1)
    own = tmp_path / "swin_dec2_own.py"
    own.write_text(dec2.read_text().split("# --- debug stages")[0]
                   + "\ndef stages():\n    return {}\n")
    with pytest.raises(StageError, match="without rrsplice's markers"):
        add_stage(own, phase=1)


@pytest.mark.slow
def test_recipe_debug_block_is_used(dec2, tmp_path):
    add_stage(dec2, at="s452", regs="%r1040")
    with dec2.open("a") as f:
        f.write("\n\ndef debug_block(regs):\n    return '\\t// mine ' + ' '.join(regs)\n")
    out = apply(dec2, stage="dec2.s452", out=tmp_path / "o.ptx").output.read_text()
    assert "\t// mine %r1040\n" in out


@pytest.mark.slow
def test_cli_stages_new_and_apply_debug(dec2, tmp_path):
    r = CliRunner().invoke(main, ["stages", "new", str(dec2), "--phase", "2"])
    assert r.exit_code == 0, r.output
    assert "dec2.p2_out" in r.output
    r = CliRunner().invoke(main, ["apply", str(dec2), "--debug", "dec2.p2_out", "-o",
                                  str(tmp_path / "d.ptx")])
    assert r.exit_code == 0, r.output
    assert "dec2.p2_out" in r.output
    r = CliRunner().invoke(main, ["stages", "new", str(dec2), "--line", "1536", "--regs",
                                  "%r1040"])
    assert r.exit_code == 2 and "Traceback" not in r.output


def test_recipe_that_reads_the_environment_builds_its_own_stage(tmp_path, monkeypatch):
    monkeypatch.delenv("D4R_RRSWIN_DEBUG", raising=False)
    small = ROOT / "tests" / "recipes_bad" / "scratch_live.ptx"
    p = tmp_path / "env_recipe.py"
    p.write_text(f"""import os
F = {str(small)!r}

def recipe():
    stage = os.environ.get("D4R_RRSWIN_DEBUG")
    if stage == "after_mul":
        return dict(file=F, debug=(28, ["%r7"]), debug_block=lambda r: "\\t// " + stage)
    return dict(file=F)
""")
    res = apply(p, stage="after_mul", out=tmp_path / "o.ptx")
    assert "\t// after_mul\n" in res.output.read_text()
    assert res.report.facts.stage.line == 28
