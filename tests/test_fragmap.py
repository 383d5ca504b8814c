"""Per-phase fragment maps against the fixture generator's ground truth (launch.json
`phases`, `fragment_truth`), for every real-compiler fixture and every phase."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES

from rrsplice.analysis.mma import phases
from rrsplice.fragments.fragmap import phase_maps
from rrsplice.infra import cache
from rrsplice.ptx.select import select_function

CASES = [(stem, arch) for stem in ("swin_tiny", "swin_small", "swin_big")
         for arch in ("sm89", "sm120")]


def _maps(stem, arch):
    m = cache.load_module(FIXTURES / f"{stem}_{arch}.ptx")
    fn, _ = select_function(m, None)
    fa = cache.load_analysis(m, fn)
    return phase_maps(fn, fa, phases(fn, fa))


@pytest.fixture(scope="module", params=CASES, ids=[f"{s}_{a}" for s, a in CASES])
def case(request):
    stem, arch = request.param
    truth = json.loads((FIXTURES / f"{stem}.launch.json").read_text())
    return truth, _maps(stem, arch)


@pytest.mark.slow
def test_geometry_matches_generator(case):
    truth, maps = case
    assert len(maps) == len(truth["phases"])
    for pm, t in zip(maps, truth["phases"], strict=False):
        p = pm.phase
        assert (p.m, p.n, p.k) == (t["m"], t["n"], t["k"])
        assert len(pm.a) == 4 * t["m_tiles"] * t["k_slices"]
        assert len(pm.b) == 2 * t["k_slices"] * t["n_tiles"]
        assert len(pm.c) == 2 * t["chains"] and len(pm.d) == 2 * t["chains"]
        assert not pm.notes


def test_b_fragments_sit_where_the_generator_put_them(case):
    """Every B register: tile (k-slice, n-tile), register index, and every lane's bytes."""
    truth, maps = case
    for pm, ft in zip(maps, truth["fragment_truth"], strict=False):
        table = ft["b_reg0_offset_by_kslice_ntile"]
        for f in pm.b:
            ks, nt = f.tile
            want0 = table[ks][nt] + f.index * ft["b_reg_bytes"]
            assert f.source is not None, f"phase {ft['phase']} {f.reg}: no weight load"
            for lane in (0, 1, 17, 31):
                assert f.source.offset(lane) == want0 + lane * ft["b_lane_stride"]
            assert f.source.offset(0, warp_z=1) == want0 + ft["b_warp_stride"]
            # and the ISA placement: byte e of lane L is B[32ks + 4(L%4) + e + 16*index][8nt + L/4]
            for lane, e, row, col, wb in f.elements()[::5]:
                assert row == 32 * ks + 4 * (lane % 4) + e + 16 * f.index
                assert col == 8 * nt + lane // 4
                assert wb == want0 + lane * ft["b_lane_stride"] + e


def test_bias_seeds_and_c_tiles(case):
    truth, maps = case
    for pm, ft in zip(maps, truth["fragment_truth"], strict=False):
        offs = ft["bias_seed_offset_by_ntile"]
        for f in pm.c:
            mt, nt = f.tile
            assert f.source is not None and f.source.offset(0) == offs[nt]
            assert f.source.offset(7) == offs[nt]            # uniform over the warp
            assert f.source.offset(0, warp_z=1) == offs[nt] + ft["bias_warp_stride"]
            assert f.rows == (16 * mt + 8 * f.index, 16 * mt + 8 * f.index + 7)
            assert f.cols == (8 * nt, 8 * nt + 7)


def test_a_and_d_tiles_cover_the_phase_once(case):
    _truth, maps = case
    for pm in maps:
        p = pm.phase
        a_cells = [(r, c) for f in pm.a for _l, _e, r, c, _w in f.elements()]
        # each A element is held by exactly one (lane, register, element) of the warp
        assert len(a_cells) == len(set(a_cells)) == p.m * p.k
        d_cells = [(r, c) for f in pm.d for _l, _e, r, c, _w in f.elements()]
        assert len(d_cells) == len(set(d_cells)) == p.m * p.n
