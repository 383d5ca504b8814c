"""The lifted whole-region body of every repository recipe with a cut (the seed recipe
included) compiles without a warning for the H200's architectures and for gfx1201:
`nvcc -O3 -rdc=true -c -arch=sm_89|sm_90` and `clang-19 -x hip --offload-arch=gfx1201
-fgpu-rdc -O2 -c`. Which of them also run (on the host against the interpreter, on the
H200 against the original kernel) is in tests/test_lift_run*.py and docs/proof.md
section 12; this is the check that nothing a recipe cuts leaves the compilers unhappy."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import ROOT

from rrsplice.lift import lift_region

pytestmark = pytest.mark.slow

RECIPES = sorted(p for p in [*(ROOT / "recipes").glob("*.py"), *(ROOT / "recipes" / "seed").glob("*.py")]
                 if "CUT_CALL" in p.read_text())


def _compile(cmd: list, cwd) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "warning" not in res.stderr.lower(), (cmd, res.stderr[:2000])


def test_every_cut_recipe_is_listed():
    names = {p.name for p in RECIPES}
    assert {"swin_big_sm89.py", "swin_dec2_recipe.py", "frag_triton.py", "layer_epi_sm89.py",
            "loops_search.py"} <= names, names


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.stem)
def test_the_lifted_region_compiles_for_sm89_sm90_and_gfx1201(tmp_path, recipe):
    nvcc, clang = shutil.which("nvcc"), shutil.which("clang-19")
    assert nvcc and clang, "nvcc and clang-19 are needed"
    body = lift_region(recipe, "registers")
    (tmp_path / "body.cu").write_text(body.text)
    (tmp_path / "rr_lift.h").write_text(body.header)
    if body.mma_header:
        (tmp_path / "rr_mma.h").write_text(body.mma_header)
    for arch in ("sm_89", "sm_90"):
        _compile([nvcc, "-O3", f"-arch={arch}", "-rdc=true", "-c", "body.cu", "-o", f"{arch}.o"],
                 tmp_path)
    _compile([clang, "-x", "hip", "--offload-arch=gfx1201", "-nogpuinc", "-nogpulib", "-fgpu-rdc",
              "-O2", "-c", "body.cu", "-o", "hip.o"], tmp_path)
