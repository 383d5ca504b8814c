"""`recipe new --abi scratch` when no .shared array of the kernel can carry the returns:
the recipe declares its own array; its cost is measured with ptxas."""

from __future__ import annotations

import re

import pytest
from conftest import FIXTURES

from rrsplice.check import check_recipe
from rrsplice.infra.tools import ptxas
from rrsplice.workflow.recipe import load_recipe
from rrsplice.workflow.scaffold import new_recipe
from rrsplice.workflow.splice import apply

TINY = FIXTURES / "swin_tiny_sm89.ptx"
SMEM = "_ZZ18rrswin_tiny_kernelE4smem"


@pytest.mark.slow
def test_own_scratch_when_no_array_fits(tmp_path, ptxas_path):
    # phase 1 of tiny returns 32 registers: 128 bytes x 128 threads = 16384 > smem's 8192
    res = new_recipe("t_p1", TINY, "s342-s405", abi="scratch", out=tmp_path / "t_p1.py")
    own = res.own_scratch
    assert own["symbol"] == "d4r_t_p1_scratch" and own["bytes"] == 128 * 128
    assert f"{SMEM} holds 8192 bytes, 16384 needed" in own["why"]
    assert res.scratch == "d4r_t_p1_scratch" and not res.barrier
    rec = load_recipe(res.path)
    assert rec.const("OWN_SCRATCH") == 16384
    assert ".shared .align 16 .b8 d4r_t_p1_scratch[16384];" in rec.extern
    # the cost, from ptxas -v on the original and on the patched module
    assert own["shared_before"] == 8192 and own["shared_after"] == 8192 + 16384
    # sm_89: 100 KiB per SM, 1 KiB reserved per block
    assert own["blocks_before"] == 102400 // (8192 + 1024)
    assert own["blocks_after"] == 102400 // (24576 + 1024)
    assert any("+16384" in n for n in res.notes)
    # the recipe checks clean for both targets, and the patched module assembles
    for target in ("ptxas", "zluda"):
        rep = check_recipe(res.path, target=target)
        assert rep.ok, rep.errors
        assert rep.facts.scratch.bytes == 16384
    out = apply(res.path, out=tmp_path / "patched.ptx")
    text = out.output.read_text()
    assert text.index("d4r_t_p1_scratch[16384]") < text.index(".entry rrswin_tiny_kernel")
    assert ptxas(out.output, "sm_89", out=tmp_path / "p.o").ok


def test_a_dead_array_that_fits_is_still_preferred(tmp_path):
    res = new_recipe("t_p2", TINY, "s556-s563", abi="scratch", out=tmp_path / "t_p2.py",
                     occupancy=False)
    assert res.own_scratch is None and res.scratch == SMEM
    assert load_recipe(res.path).const("OWN_SCRATCH") is None
    assert not re.search(r"^\.shared", load_recipe(res.path).extern, re.M)


def test_named_scratch_that_does_not_fit_still_fails(tmp_path):
    import pytest

    from rrsplice.workflow.scaffold import ScaffoldError
    with pytest.raises(ScaffoldError):
        new_recipe("t_p1b", TINY, "s342-s405", abi="scratch", scratch="nope",
                   out=tmp_path / "x.py", occupancy=False)
