"""The make_ptx hook: apply_recipe and kernel_recipe, with typed errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rrsplice.ptx.errors import RRSpliceError
from rrsplice.workflow.hook import HookError, apply_recipe, kernel_recipe, recipe_kernel

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "recipes_bad"


def test_kernel_recipe_maps_both_names(tmp_path):
    assert kernel_recipe("cuda_dldn_engine_swin_dec2_kernel", tmp_path) is None
    (tmp_path / "swin_dec2_recipe.py").write_text("")
    assert kernel_recipe("cuda_dldn_engine_swin_dec2_kernel", tmp_path).name == \
        "swin_dec2_recipe.py"
    (tmp_path / "swin_dec2.py").write_text("")
    assert kernel_recipe("cuda_dldn_engine_swin_dec2_kernel", tmp_path).name == "swin_dec2.py"
    assert kernel_recipe("cuda_dldn_engine_swin_enc0_kernel", tmp_path) is None
    assert kernel_recipe("cuda_dldn_engine_swin_dec1_kernel", ROOT / "recipes").name == \
        "swin_dec1.py"
    assert recipe_kernel("swin_dec2_recipe.py") == "cuda_dldn_engine_swin_dec2_kernel"


@pytest.mark.slow
def test_apply_recipe_returns_the_output(tmp_path):
    out = apply_recipe(ROOT / "recipes" / "swin_dec2.py", out=tmp_path / "p.ptx")
    assert out == tmp_path / "p.ptx" and out.read_text().count("call.uni d4r_swin_dec2") == 1
    seed = kernel_recipe("cuda_dldn_engine_swin_dec2_kernel", ROOT / "recipes" / "seed")
    assert apply_recipe(seed, out=tmp_path / "s.ptx").is_file()


@pytest.mark.slow
def test_apply_recipe_with_corpus(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    shutil.copyfile(ROOT / "corpus_fixtures" / "0022-PREPASS_ENTRYPOINT_NAME.ptx",
                    corpus / "0022-PREPASS_ENTRYPOINT_NAME.ptx")
    out = apply_recipe(ROOT / "recipes" / "swin_dec1.py", corpus=corpus)
    assert out.parent == corpus / "out"


@pytest.mark.parametrize("recipe, kind", [
    (BAD / "unknown_key.py", "recipe"),
    (BAD / "import_fails.py", "recipe"),
    (BAD / "mma_pair.py", "check"),
])
def test_errors_are_typed(recipe, kind, tmp_path):
    with pytest.raises(HookError) as ei:
        apply_recipe(recipe, out=tmp_path / "x.ptx")
    assert ei.value.kind == kind
    assert isinstance(ei.value, RRSpliceError)
    if kind == "check":
        assert not ei.value.report.ok
    assert not (tmp_path / "x.ptx").exists()


def test_missing_module_is_a_module_error(tmp_path):
    p = tmp_path / "r.py"
    p.write_text("def recipe():\n    return dict(file='nowhere.ptx')\n")
    with pytest.raises(HookError) as ei:
        apply_recipe(p, corpus=tmp_path)
    assert ei.value.kind == "module"


def test_ptxas_failure_is_a_ptxas_error(tmp_path, ptxas_path):
    with pytest.raises(HookError) as ei:
        apply_recipe(ROOT / "recipes" / "seed" / "swin_dec2_recipe.py", out=tmp_path / "s.ptx",
                     ptxas=["sm_89"])
    assert ei.value.kind == "ptxas" and "Special register" in str(ei.value)


def test_debug_environment_reaches_the_recipe(tmp_path, monkeypatch):
    p = tmp_path / "env_recipe.py"
    p.write_text(f"""import os
F = {str(BAD / 'scratch_live.ptx')!r}

def recipe():
    if os.environ.get("D4R_RRSWIN_DEBUG"):
        return dict(file=F, debug=(28, ["%r7"]), debug_block=lambda r: "\\t// dbg")
    return dict(file=F)
""")
    monkeypatch.setenv("D4R_RRSWIN_DEBUG", "x")
    assert "\t// dbg\n" in apply_recipe(p, out=tmp_path / "o.ptx").read_text()
