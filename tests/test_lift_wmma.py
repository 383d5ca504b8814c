"""The image-mode HIP body of a whole region with its phases through gfx12 WMMA
(rrsplice/lift/wmma_phase.py): run on the host with the WMMA builtin replaced by an exact
stand-in (tests/lift_region_run.py's WMMA_STANDIN) against the warp interpreter on every
register of every lane; a negative control that swaps two A operand rows; a phase the
program cannot take keeps the scalar fallback, said in the body; and the gfx1201 assembly
of the tiny body: one v_wmma per expected WMMA, none of the phase code a cross-lane
permute."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT, require_clang19
from lift_region_run import run_region

from rrsplice.body.plan import BodyError
from rrsplice.lift import lift_region

RECIPES = ROOT / "recipes"
# recipe, launch, the fewest (register, lane) values compared
CASES = {"tiny": ("swin_tiny_sm89.py", "swin_tiny.launch.json", 60_000),
         "small": ("swin_small_sm89.py", "swin_small.launch.json", 150_000)}


def _run(tmp_path, name, edit_mma=None):
    recipe, launch, _ = CASES[name]
    return run_region(tmp_path, RECIPES / recipe, "image", ROOT / "corpus_fixtures" / launch,
                      mma="wmma", edit_mma=edit_mma)


@pytest.mark.slow
def test_tiny_wmma_body_matches_the_interpreter_and_a_row_swap_does_not(tmp_path):
    """Every phase of tiny through WMMA (162 mma as 162 k16 WMMAs); every register the body
    computes, on every lane, equals the interpreter's. Then rr_mma.h's A operand load reads
    rows 2i and 2i+1 of each tile swapped: the same comparison fails."""
    body = lift_region(RECIPES / "swin_tiny_sm89.py", "image", mma="wmma")
    assert [w.index for w in body.wmma] == list(range(1, 8))
    assert sum(w.wmmas for w in body.wmma) == 162
    assert "rr_lift_mma_image(rr_img" not in body.text     # no phase left on the fallback
    # every f32 statement of tiny's region is .ftz or blind to the mode (h2exp's
    # fma.rn.f32 a, ULP, a grows a normal): .ftz flushes through the mode register, and
    # the run below has rr_ftz the identity with the host's DAZ/FTZ set
    assert "#  define RR_LIFT_FTZ_BY_MODE 1" in body.text
    assert any("mode register" in n for n in body.notes)
    (tmp_path / "ok").mkdir()
    out = _run(tmp_path / "ok", "tiny")
    assert out.checked >= CASES["tiny"][2]
    assert not out.bad, (len(out.bad), out.bad[:6])
    # the control: two operand rows swapped in the WMMA A load
    row = "img + (m0 + (lane & 15)) * ld"

    def swap_rows(header: str) -> str:
        assert header.count(row) == 1
        return header.replace(row, "img + (m0 + ((lane & 15) ^ 1)) * ld")
    (tmp_path / "swap").mkdir()
    bad = _run(tmp_path / "swap", "tiny", edit_mma=swap_rows)
    assert len(bad.bad) > 1000, len(bad.bad)


@pytest.mark.slow
def test_small_wmma_body_matches_the_interpreter(tmp_path):
    out = _run(tmp_path, "small")
    assert out.checked >= CASES["small"][2]
    assert not out.bad, (len(out.bad), out.bad[:6])


def test_a_phase_the_program_cannot_take_keeps_the_fallback_and_says_why(monkeypatch):
    """A phase whose WMMA program is refused (here: phase 2's, by a stand-in refusal) is
    lifted mma by mma through rr_mma.h's step, with the reason in the body; the others
    stay WMMA."""
    from rrsplice.lift import wmma_phase
    real = wmma_phase.wmma_program

    def refuse_phase_2(plan):
        if plan.phase.index == 2:
            raise BodyError("phase 2: N = 24 is not a multiple of 16 (test)")
        return real(plan)
    monkeypatch.setattr(wmma_phase, "wmma_program", refuse_phase_2)
    body = lift_region(RECIPES / "swin_tiny_sm89.py", "image", mma="wmma")
    assert [w.index for w in body.wmma] == [1, 3, 4, 5, 6, 7]
    assert "/* phase 2: not WMMA, each mma through the scalar fallback: N = 24 is not a " \
           "multiple of 16 (test) */" in body.text
    assert body.text.count("rr_lift_mma_image(rr_img") == 8       # phase 2's 8 mma
    assert any("phase 2: the scalar fallback" in n for n in body.notes)


def test_wmma_needs_hip_image_bodies(tmp_path):
    from rrsplice.lift.write import region_mma
    assert region_mma("image", "hip", None) == "wmma"
    assert region_mma("image", "hip", "scalar") is None
    assert region_mma("image", "cuda", None) is None
    assert region_mma("registers", "hip", None) is None
    with pytest.raises(BodyError, match="--lang hip --staging image"):
        region_mma("registers", "hip", "wmma")
    with pytest.raises(BodyError, match="--lang hip"):
        region_mma("image", "cuda", "scalar")


def _tools():
    require_clang19()


@pytest.mark.slow
def test_tiny_wmma_body_for_gfx1201_one_v_wmma_per_wmma_and_no_permutes_in_phase_code(
        tmp_path):
    """clang-19 -O2 + llc-19 for gfx1201 (scripts/bench_gfx12.py --regions, tiny only: the
    larger bodies take longer): 162 v_wmma; the phase code holds no ds_bpermute, v_cndmask
    or v_perm, counted directly (the instructions llc's line table puts on a line of
    rr_mma.h or of a phase's program: all 162 v_wmma among them) and as the difference
    with the same body with its phases stubbed (no ds_bpermute)."""
    _tools()
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_gfx12 as bench
    r = bench.bench_region(RECIPES / "swin_tiny_sm89.py", tmp_path)
    assert r["full"]["v_wmma"] == r["expected_wmma"] == 162
    assert r["stub"]["v_wmma"] == 0
    line = r["phase_by_line"]
    assert line["v_wmma"] == 162
    assert line["ds_bpermute"] == line["v_cndmask"] == line["v_perm"] == 0
    assert r["phase"]["ds_bpermute"] == r["phase"]["v_perm"] == 0
    assert 0.9 < line["instructions"] / r["phase"]["instructions"] < 1.1
