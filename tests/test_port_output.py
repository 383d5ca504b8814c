"""What `recipe port` writes: MODULE relative to the ported recipe (never an absolute path),
the reference's first paragraph as one sentence, the fragment maps of the target's own
registers, and the reference's description marked as the reference's; lines in messages
are inclusive, like everywhere else (the recipe's CUT_CALL stays half-open)."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, RECIPES

from rrsplice.check import check_recipe
from rrsplice.cli import main
from rrsplice.workflow.recipe import load_recipe

TINY = RECIPES / "swin_tiny_sm89.py"
VARIANT = "swin_tiny_mvhi_ldr_sm89.ptx"


@pytest.mark.slow
def test_ported_recipe_names_its_module_relatively_and_keeps_a_fragment_header(tmp_path):
    mods, out = tmp_path / "kernels", tmp_path / "recipes" / "p.py"
    mods.mkdir()
    shutil.copy(FIXTURES / VARIANT, mods / VARIANT)
    out.parent.mkdir()
    r = CliRunner().invoke(main, ["recipe", "port", str(TINY), "--to", str(mods / VARIANT),
                                  "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    rec = load_recipe(out)
    assert rec.const("MODULE") == os.path.join("..", "kernels", VARIANT)
    assert data["cut"] == list(rec.cut_call)
    assert data["lines"] == [rec.cut_call[0], rec.cut_call[1] - 1]
    # the recipe keeps working from another directory (MODULE is relative to the recipe)
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        assert check_recipe(out).ok
    finally:
        os.chdir(cwd)
    doc = rec.doc
    first = " ".join(doc.split("\n\n")[0].split())
    assert first == ("Splice recipe for rrswin_tiny_kernel (scaffolded by `rrsplice recipe "
                     "new swin_tiny_sm89 --module swin_tiny_sm89.ptx --range s342-s2656 "
                     "--abi scratch`) -- ported to rrswin_tiny_mvhi_ldr_kernel.")
    assert "Fragment maps of the target" in doc
    maps = doc.split("Fragment maps of the target", 1)[1].split("The reference recipe", 1)[0]
    for reg in rec.const("A_REGS"):
        assert f"\n  {reg}: phase " in maps, reg
    for reg in rec.const("RET_REGS"):            # a map line, or named as not a fragment
        assert f"\n  {reg}: phase " in maps or f" {reg}" in maps.split("not a fragment")[-1]
    # the reference's description follows, indented, without its (reference) maps
    ref = doc.split("The reference recipe's description", 1)[1]
    assert "    The cut replaces statements s342-s2656" in ref
    assert "Fragment maps" not in ref


@pytest.mark.slow
def test_port_message_gives_inclusive_lines(tmp_path):
    r = CliRunner().invoke(main, ["recipe", "port", str(TINY), "--to",
                                  str(FIXTURES / VARIANT), "-o", str(tmp_path / "p.py")])
    assert r.exit_code == 0, r.output
    rec = load_recipe(tmp_path / "p.py")
    assert rec.const("MODULE") == VARIANT          # found through the corpus lookup
    assert f"lines {rec.cut_call[0]}-{rec.cut_call[1] - 1}," in r.stdout
