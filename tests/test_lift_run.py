"""A real fixture's whole region, lifted, run on the host: swin_tiny_sm89's s342-s2656
(7 GEMM phases, 162 mma, layer norms, softmax over shfl reductions, e4m3 requantisation)
through its recipe's scratch ABI, one warp of 32 lanes on the warp harness
(tests/warp_harness), against the same region run on tests/lift_warp_interp.py from the
same inputs (tests/lift_region_run.py: the kernel's launch description and prologue).
One test runs both staging modes and the GPU proof's two negative controls against one
interpreter run."""

from __future__ import annotations

import sys

import pytest
from conftest import ROOT
from lift_region_run import SHARED_ADDR, run_region

from rrsplice.workflow.recipe import load_recipe

RECIPE = ROOT / "recipes" / "swin_tiny_sm89.py"
LAUNCH = ROOT / "corpus_fixtures" / "swin_tiny.launch.json"


def _controls():
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_prepare_lift as g
    return g


@pytest.mark.slow
def test_tiny_every_register_of_every_lane_both_stagings_and_the_negative_controls(tmp_path):
    """Not only what the call text reads back: every register the region writes, on every
    lane (a rounding that the e4m3 requantisation absorbs still shows here), in both
    staging modes (`image`: each phase's A fragments staged into the per-warp e4m3 image
    and every mma reading A there); the values the scratch slots return are the
    interpreter's RET_REGS. Then the two edits scripts/gpu_prepare_lift.py makes for its
    negative controls (one cvt.rn.f16x2.f32 lifted as .rz; two staged A entries swapped)
    change what the region computes, so the same comparison fails on them."""
    rec = load_recipe(RECIPE)
    rets, stride = rec.const("RET_REGS"), rec.const("RET_STRIDE")
    for staging in ("registers", "image"):
        d = tmp_path / staging
        d.mkdir()
        out = run_region(d, RECIPE, staging, LAUNCH)
        assert out.checked > 32 * 2000, out.checked
        assert not out.bad, (staging, len(out.bad), out.bad[:6])
        scratch = out.lanes[0].symbols[rec.const("SCRATCH")][1] - SHARED_ADDR
        got = [[int.from_bytes(out.smem[scratch + lane * stride + 4 * k:][:4], "little")
                for k in range(len(rets))] for lane in range(32)]
        assert got == [[m.regs[r] for r in rets] for m in out.lanes]
    g = _controls()
    from rrsplice.lift.header import helper_text
    from rrsplice.lift.semantics import ROWS

    def flip(body, header):
        body, _h, why = g.flip_rounding(body, "")
        assert "cvt.rn.f16x2.f32 lifted as cvt.rz.f16x2.f32" in why
        return body.replace('#include "rr_lift.h"', '#include "rr_lift.h"\n'
                            + helper_text(ROWS["cvt.rz.f16x2.f32"]), 1), header

    def swap(body, header):
        return g.swap_stagings(body)[0], header
    for staging, edit in (("registers", flip), ("image", swap)):
        d = tmp_path / f"control_{staging}"
        d.mkdir()
        out = run_region(d, RECIPE, staging, LAUNCH, edit=edit)
        assert out.bad, staging
