"""`rrsplice descriptor` against the fixture generator's truth, for every fixture and phase;
the rendered descriptor is plain Python whose every value line carries evidence."""

from __future__ import annotations

import ast
import json
import re

import pytest
from conftest import FIXTURES

from rrsplice.fragments.descriptor import EPILOGUE_SIGNATURES, classify_gap, describe, plain, render
from rrsplice.infra import cache
from rrsplice.ptx.select import select_function

CASES = [(stem, arch) for stem in ("swin_tiny", "swin_small", "swin_big")
         for arch in ("sm89", "sm120")]


@pytest.fixture(scope="module", params=CASES, ids=[f"{s}_{a}" for s, a in CASES])
def case(request):
    stem, arch = request.param
    truth = json.loads((FIXTURES / f"{stem}.launch.json").read_text())
    m = cache.load_module(FIXTURES / f"{stem}_{arch}.ptx")
    fn, _ = select_function(m, None)
    fa = cache.load_analysis(m, fn)
    return truth, fn, describe(fn, fa)


@pytest.mark.slow
def test_phases_match_the_generator(case):
    truth, _fn, desc = case
    got = plain(desc)["phases"]
    assert len(got) == len(truth["phases"])
    for ph, t, ft in zip(got, truth["phases"], truth["fragment_truth"], strict=False):
        assert (ph["M"], ph["N"], ph["K"]) == (t["m"], t["n"], t["k"])
        assert ph["k_tiling"] == {"k_slices": t["k_slices"], "k_per_mma": 32}
        assert ph["mma"] == t["mma"] and ph["chains"] == t["chains"]
        assert ph["types"] == {"d": "f16", "a": "e4m3", "b": "e4m3", "c": "f16"}
        assert ph["a_source"] == ("prologue" if ft["phase"] == 1 else ft["a_source"])
        assert ph["epilogue"] == ft["epilogue_kind"]
        if ph["epilogue"] is not None:
            assert ph["epilogue_requantises"] is True
        want_b = {f"k{k}_n{n}_r{r}": off + 4 * r
                  for k, row in enumerate(ft["b_reg0_offset_by_kslice_ntile"])
                  for n, off in enumerate(row) for r in (0, 1)}
        assert ph["b_fragments"] == want_b
        assert ph["b_layout"]["lane_stride"] == ft["b_lane_stride"]
        assert ph["b_layout"]["warp_stride"] == ft["b_warp_stride"]
        assert ph["bias_seed_offsets"] == {f"n{n}": off for n, off
                                           in enumerate(ft["bias_seed_offset_by_ntile"])}


def test_layer_reads_and_geometry(case):
    truth, _fn, desc = case
    layer = plain(desc["layer"])
    assert layer["entry"] == truth["kernel"]
    reads = layer["param_reads"]
    for f in truth["param_block"]["fields"]:
        if f["name"] in ("weights", "arena", "plane_out", "tex_color", "surf_out"):
            assert reads[f"+{f['offset']}"] == f["offset"]
    assert "weight image" in desc["layer"]["param_reads"]["+40"].why
    assert layer["warps"] == truth["block"][0] * truth["block"][2] // 32
    assert desc["layer"]["warps"].verified is False


def test_rendered_descriptor_is_plain_python_with_evidence(case):
    _truth, fn, desc = case
    text = render(desc, module="m.ptx", source_note="test")
    tree = ast.parse(text)
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    ns: dict = {}
    exec(compile(tree, "descriptor", "exec"), ns)
    assert plain(desc["phases"]) == json.loads(json.dumps(ns["phases"]()))
    body = text.split('"""', 2)[2]
    for line in body.splitlines():
        if re.search(r"=\s*[\[\d'(]|:\s*[\d\[]", line) and "def " not in line:
            assert "  # " in line, f"value without evidence: {line}"
            assert re.search(r"# (UNVERIFIED \(inferred\): )?(s\d+ line \d+|line \d+|\d+ |"
                             r"phase |chain|first mma|every |A fragments|dense|not dense|"
                             r"no |immediates|\w)", line)


def test_every_signature_names_a_kind_and_an_empty_gap_is_unrecognised():
    assert len({k for k, _ in EPILOGUE_SIGNATURES}) == len(EPILOGUE_SIGNATURES)
    got = classify_gap([])
    assert got["kind"].value == "unrecognised" and got["kind"].verified is False
