"""Whole regions of more fixtures, lifted, run on the host against the warp interpreter on
every register of every lane (tests/lift_region_run.py), in both staging modes: the layer
fixtures (corpus_fixtures/layer/: residual add + layer norm, tanh GELU, an f32 softmax over
shfl.bfly, requantisation from f32; plain and --use_fast_math), swin_small and swin_big.
Each fixture's test runs both modes against one interpreter run. The layer fixtures also
carry the GPU proof's two negative controls, which must change what the host computes."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import ROOT
from lift_region_run import run_region

from rrsplice.analysis.mma import phases as find_phases
from rrsplice.infra.cache import load_analysis
from rrsplice.ptx.parser import parse

LAYER = ROOT / "corpus_fixtures" / "layer"

# recipe, launch description, the fewest (register, lane) values the run must compare
CASES = {
    "layer_epi": ("layer_epi_sm89.py", LAYER / "layer_epi.launch.json", 100_000),
    "layer_epi_fast": ("layer_epi_fast_sm89.py", LAYER / "layer_epi_fast.launch.json", 65_000),
    "swin_small": ("swin_small_sm89.py", ROOT / "corpus_fixtures" / "swin_small.launch.json",
                   160_000),
    "swin_big": ("swin_big_sm89.py", ROOT / "corpus_fixtures" / "swin_big.launch.json",
                 450_000),
}


def _both_stagings(tmp_path, name):
    recipe, launch, least = CASES[name]
    for staging in ("registers", "image"):
        d = tmp_path / staging
        d.mkdir()
        out = run_region(d, ROOT / "recipes" / recipe, staging, launch)
        assert out.checked >= least, (staging, out.checked)
        assert not out.bad, (staging, len(out.bad), out.bad[:6])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["layer_epi", "layer_epi_fast", "swin_small"])
def test_whole_region_every_register_of_every_lane_both_stagings(tmp_path, name):
    _both_stagings(tmp_path, name)


@pytest.mark.slow
def test_swin_big_whole_region_every_register_of_every_lane_both_stagings(tmp_path):
    """swin_big's whole region (22 phases, 916 mma): ~460,000 values per staging mode; about two
    minutes of CPU, most of it the interpreter's one run."""
    _both_stagings(tmp_path, "swin_big")


def _controls():
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_prepare_lift as g
    return g


@pytest.mark.slow
@pytest.mark.parametrize("name,staging,control", [
    ("layer_epi", "registers", "flip_rounding"), ("layer_epi_fast", "registers", "flip_rounding"),
    ("layer_epi", "image", "swap_stagings")])
def test_the_gpu_proofs_negative_controls_change_the_layer_on_the_host(tmp_path, name, staging,
                                                                      control):
    """scripts/gpu_prepare_lift.py's controls on the layer bodies (no f16 conversion there:
    the first fma.rn lifted as fma.rm; two staged A entries swapped) make the same
    comparison fail."""
    g = _controls()
    recipe, launch, _ = CASES[name]
    seen = {}

    def edit(body, header):
        if control == "flip_rounding":
            body, header, why = g.flip_rounding(body, header)
        else:
            body, why = g.swap_stagings(body)
        seen["why"] = why
        return body, header
    out = run_region(tmp_path, ROOT / "recipes" / recipe, staging, launch, edit=edit)
    if control == "flip_rounding":
        assert "lifted as fma.rm.f32" in seen["why"]
    assert len(out.bad) > 0, seen


@pytest.mark.slow
@pytest.mark.parametrize("stem", ["layer_epi", "layer_epi_fast"])
def test_the_layer_fixtures_phases_are_their_ground_truths(stem):
    """`rrsplice phases`' view of the layer kernels (B loaded beside each mma, the f16
    accumulators unpacked only after the phase) against the generator's ground truth:
    four phases, their geometry, mma, chains and the weight-image bytes of B and the bias
    seeds; the recipe's cut is the whole layer, first to last mma."""
    truth = json.loads((LAYER / f"{stem}.truth.json").read_text())
    mod = parse(LAYER / f"{stem}_sm89.ptx")
    fn = mod.function(truth["entry"])
    got = find_phases(fn, load_analysis(mod, fn))
    assert len(got) == len(truth["phases"]) == 4
    for p, t in zip(got, truth["phases"], strict=True):
        assert p.geometry == t["geometry"]
        assert len(p.mmas) == t["mma"] and p.chain_count == t["chains"]
        # lane 0's B bytes: the first fragment's first byte to the last one's end
        assert p.b_weight_range == (t["b_offset"], t["b_offset"] + t["b_bytes"] - 256 + 8)
        assert sorted(p.bias_seed_offsets.values()) == t["bias_offsets"]
    mma = [st.index for st in fn.statements if st.opcode and st.opcode.startswith("mma.")]
    assert truth["region"]["statements"] == f"s{mma[0]}-s{mma[-1]}"
    assert (got[0].first, got[-1].last) == (mma[0], mma[-1])
