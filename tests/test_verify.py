"""`rrsplice verify`: apply + outline + ptxas -c both + nvlink, on small inline recipes, on
the seed recipe (whose call text ptxas rejects) and on every repository recipe.

Repository recipes are verified with `original=False` (the original module is not assembled
for a resource comparison), which keeps this file to about a minute of ptxas -O0 time.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_outline import CALL_PARAM, CALL_SCRATCH, EXTERN_PARAM, EXTERN_SCRATCH, K1

from rrsplice.check import CheckFailed
from rrsplice.cli import main
from rrsplice.infra.arch import ArchError
from rrsplice.workflow.verify import verify

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "recipes" / "seed" / "swin_dec2_recipe.py"
# the repository's cut recipes (verify outlines a cut; zluda_surface_round only rewrites)
REPO_RECIPES = sorted(p for p in (ROOT / "recipes").glob("*.py") if "cut_call" in p.read_text())


def _recipe(tmp_path: Path, call: str, extern: str, name: str = "k1_recipe",
            cut=(23, 41)) -> Path:
    """A self-contained recipe module over K1 (written next to it)."""
    mod = tmp_path / "k1.ptx"
    mod.write_text(K1)
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(f"""\
        MODULE = {str(mod)!r}
        CUT_CALL = {cut!r}
        CALL = {call!r}
        EXTERN = {extern!r}

        def recipe():
            return dict(file=MODULE, cut_call=CUT_CALL, call=CALL, extern=EXTERN)
        """))
    return path


def _arch_of(recipe: Path) -> str:
    from rrsplice.workflow.recipe import load_recipe, resolve_module
    path, _ = resolve_module(load_recipe(recipe))
    m = re.search(rb"^\.target\s+(sm_\d+)", path.read_bytes(), re.M)
    return m.group(1).decode()


@pytest.mark.parametrize("call,extern", [(CALL_SCRATCH, EXTERN_SCRATCH),
                                         (CALL_PARAM, EXTERN_PARAM)], ids=["scratch", "param"])
def test_small_recipe_verifies_and_links(tmp_path, call, extern, ptxas_path, nvlink_path):
    rec = _recipe(tmp_path, call, extern)
    res = verify(rec, "sm_89", keep=tmp_path / "out")
    assert res.ok, [s.to_json() for s in res.steps]
    assert [s.name for s in res.steps] == ["ptxas original", "ptxas patched", "ptxas body",
                                           "nvlink", "nvlink original"]
    rows = {r["what"]: r for r in res.resource_table()}
    assert rows["original kernel"]["registers"] > 0
    assert rows["linked kernel"]["registers"] > 0          # from nvlink -v
    assert Path(res.files["linked_cubin"]).stat().st_size > 0
    patched = Path(res.files["patched"]).read_text()
    assert "call.uni" in patched and ".extern .func" in patched


def test_verify_reports_special_register_operand(tmp_path, ptxas_path, nvlink_path):
    """The seed's own form (`mad.lo.s32 %rswin1, %laneid, ...`) on the small kernel: the
    patched module is rejected by ptxas and the report names the statement."""
    call = CALL_SCRATCH.replace("\tmov.u32 %rsw2, %laneid;\n", "").replace(
        "mad.lo.s32 %rsw1, %rsw2, 12, %rsw0;", "mad.lo.s32 %rsw1, %laneid, 12, %rsw0;")
    res = verify(_recipe(tmp_path, call, EXTERN_SCRATCH), "sm_89", original=False)
    assert not res.ok
    step = res.step("ptxas patched")
    assert not step.ok
    assert step.problems[0]["statement"] == "mad.lo.s32 %rsw1, %laneid, 12, %rsw0;"
    assert "Special register" in step.problems[0]["message"]
    assert res.step("ptxas body").ok          # the body reads %laneid with mov first
    assert res.step("nvlink") is None


def test_dropped_return_is_rejected_by_check_first(tmp_path, ptxas_path, nvlink_path):
    """The negative control: one returned register removed from the call text. `check`
    rejects the recipe; with the check off the body still links (and a GPU comparison shows
    the difference, see scripts/gpu_diff.py)."""
    call = CALL_SCRATCH.replace("\tld.shared.b32 %r11, [%rsw1+4];\n", "")
    rec = _recipe(tmp_path, call, EXTERN_SCRATCH, name="k1_dropped")
    with pytest.raises(CheckFailed, match="%r11"):
        verify(rec, "sm_89", original=False)
    res = verify(rec, "sm_89", original=False, check=False)
    assert res.ok
    assert "%r11" not in res.outline.returned


def test_unknown_or_too_old_arch_is_one_clear_error(tmp_path):
    rec = _recipe(tmp_path, CALL_SCRATCH, EXTERN_SCRATCH)
    with pytest.raises(ArchError, match="unknown architecture 'sm_999'"):
        verify(rec, "sm_999")
    # K1 says `.target sm_89`: ptxas cannot build it for an older GPU
    with pytest.raises(ArchError, match=r"\.target is sm_89; ptxas cannot assemble it for "
                                        r"sm_75 \(only for sm_89 or newer\)"):
        verify(rec, "sm_75")
    r = CliRunner().invoke(main, ["verify", str(rec), "--arch", "sm_75"])
    assert r.exit_code == 2
    assert r.stderr.count("\n") == 1 and ": error: " in r.stderr and "ptxas fatal" not in r.stderr


def test_verify_defaults_to_the_modules_target(tmp_path, ptxas_path, nvlink_path):
    res = verify(_recipe(tmp_path, CALL_SCRATCH, EXTERN_SCRATCH))
    assert res.arch == "sm_89" and res.ok
    tools = res.to_json()["tools"]
    assert tools["ptxas"]["path"] == str(ptxas_path)
    assert "release" in tools["ptxas"]["version"] and tools["nvlink"]["found_via"]


@pytest.mark.slow
def test_seed_recipe_reports_ptxas_rejection(ptxas_path, nvlink_path):
    res = verify(SEED, "sm_89", original=False)
    assert not res.ok
    problems = res.step("ptxas patched").problems
    assert problems and problems[0]["statement"] == "mad.lo.s32 %rswin1, %laneid, 16, %rswin0;"
    assert "Special register argument not allowed" in problems[0]["message"]
    assert res.step("ptxas body").ok
    assert res.outline.returned == ["%r19360", "%r19361", "%r19370", "%r19371"]
    # the B fragments are not passed: recomputed from the weight image %rd32
    assert len(res.outline.recomputed) == 96


@pytest.mark.slow
@pytest.mark.parametrize("recipe", REPO_RECIPES, ids=[p.stem for p in REPO_RECIPES])
def test_repository_recipes_verify(recipe, ptxas_path, nvlink_path):
    res = verify(recipe, _arch_of(recipe), original=False)
    assert res.ok, json.dumps([s.to_json() for s in res.steps], indent=1)[:4000]


def test_cli_verify_json(tmp_path, ptxas_path, nvlink_path):
    rec = _recipe(tmp_path, CALL_SCRATCH, EXTERN_SCRATCH)
    r = CliRunner().invoke(main, ["verify", str(rec), "--arch", "sm_89", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["ok"] and data["callee"] == "body1" and data["region"] == "s9-s24"
    assert {row["what"] for row in data["resources"]} == {
        "original kernel", "patched kernel", "outlined body", "linked kernel"}


def test_cli_verify_table_and_failure_exit(tmp_path, ptxas_path, nvlink_path):
    call = CALL_SCRATCH.replace("\tmov.u32 %rsw2, %laneid;\n", "").replace(
        "mad.lo.s32 %rsw1, %rsw2, 12, %rsw0;", "mad.lo.s32 %rsw1, %laneid, 12, %rsw0;")
    r = CliRunner().invoke(main, ["verify", str(_recipe(tmp_path, call, EXTERN_SCRATCH)),
                                  "--arch", "sm_89"])
    assert r.exit_code == 1
    assert "mad.lo.s32 %rsw1, %laneid, 12, %rsw0;" in r.output
    assert "NOT verified" in r.output


def test_cli_outline_writes_the_body(tmp_path):
    rec = _recipe(tmp_path, CALL_PARAM, EXTERN_PARAM)
    out = tmp_path / "body.ptx"
    r = CliRunner().invoke(main, ["outline", str(rec), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["output"] == str(out) and data["abi"] == "param"
    assert ".visible .func (.param .align 8 .b8 body1_ret[12]) body1(" in out.read_text()


def test_cli_outline_refuses_a_failing_recipe(tmp_path):
    call = CALL_SCRATCH.replace("\tld.shared.b32 %r11, [%rsw1+4];\n", "")
    rec = _recipe(tmp_path, call, EXTERN_SCRATCH, name="k1_dropped")
    r = CliRunner().invoke(main, ["outline", str(rec), "-o", str(tmp_path / "b.ptx")])
    assert r.exit_code == 1
    assert "%r11" in r.output
    r = CliRunner().invoke(main, ["outline", str(rec), "-o", str(tmp_path / "b.ptx"),
                                  "--no-check"])
    assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_original_and_linked_figures_come_from_one_tool(tmp_path, ptxas_path, nvlink_path):
    """On sm_90 nvlink -v counts 1 KiB of shared memory per block that ptxas -v does not:
    the original and the linked kernel are both nvlink -v's, so a splice that declares no
    shared memory shows +0, and the call ABI's stack is the linked frame's."""
    from rrsplice.infra.tools import ptxas
    rec = _recipe(tmp_path, CALL_SCRATCH, EXTERN_SCRATCH)
    res = verify(rec, "sm_90", keep=tmp_path / "out")
    assert res.ok, [s.to_json() for s in res.steps]
    rows = {r["what"]: r for r in res.resource_table()}
    assert rows["original kernel"]["source"] == rows["linked kernel"]["source"] == "nvlink -v"
    assert rows["outlined body"]["source"] == "ptxas -v"
    whole = ptxas(Path(res.module), "sm_90", out=tmp_path / "w.cubin", relocatable=False)
    ptxas_smem = next(r.shared for r in whole.resources if r.function == res.kernel)
    assert rows["original kernel"]["shared"] == ptxas_smem + 1024     # the two accountings
    cost = res.call_cost()
    assert cost["shared"] == 0 and cost["source"] == "nvlink -v"
    assert cost["stack"] == rows["linked kernel"]["stack"] - rows["original kernel"]["stack"]
    assert cost["linked_stack"] >= 0 and cost["registers"] == (
        rows["linked kernel"]["registers"] - rows["original kernel"]["registers"])
    r = CliRunner().invoke(main, ["verify", str(rec), "--arch", "sm_90"])
    assert r.exit_code == 0, r.output
    assert "call ABI cost (linked - original, nvlink -v): " in r.stdout
    assert "+0 bytes of shared memory" in r.stdout
