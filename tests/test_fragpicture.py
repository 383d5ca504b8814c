"""`fragments --png/--svg`: a legible default (tile 0,0 of each matrix when the phase is
too large to read), `--tile`/`--matrix` selection, cells checked against the PTX ISA's
m16n8k32 B layout (lane = 4g + t holds B[k = 4t + e (+16 for its second register)][n = g])."""

from __future__ import annotations

import re
import struct

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from rrsplice.cli import main

BIG = FIXTURES / "swin_big_sm89.ptx"        # phase 1: 48x96x128, m16n8k32
SMALL = FIXTURES / "small" / "nvcc_small_mma.ptx"   # phase 1: 16x16x64


def _run(*args):
    return CliRunner().invoke(main, ["fragments", *map(str, args)])


def _png_size(path):
    return struct.unpack(">II", path.read_bytes()[16:24])


def _cells(svg: str) -> dict:
    """(x, y) of each cell's rect -> (lane text, register.element text)."""
    out = {}
    for m in re.finditer(r'<rect x="(\d+)" y="(\d+)" width="46" height="24"[^>]*/>'
                         r'<text[^>]*>(T\d+)</text><text[^>]*>([^<]+)</text>', svg):
        out[(int(m.group(1)), int(m.group(2)))] = (m.group(3), m.group(4))
    return out


@pytest.mark.slow
def test_default_picture_of_a_large_phase_is_tile_0_0(tmp_path):
    r = _run(BIG, "--phase", "1", "--png", tmp_path / "p.png", "--svg", tmp_path / "p.svg")
    assert r.exit_code == 0, r.output
    assert "drew tile (0, 0) of each matrix" in r.stderr
    # A 16x32, B 32x8, C 16x8, D 16x8 cells of 36x14 px, 8 px titles, 4 px gaps
    assert _png_size(tmp_path / "p.png") == (32 * 36 + 8, (8 + 16 * 14 + 4) * 3
                                                         + (8 + 32 * 14 + 4) + 4)
    svg = (tmp_path / "p.svg").read_text()
    assert len(svg) < 300_000 and svg.count("<rect") == 1 + 16 * 32 + 32 * 8 + 16 * 8 * 2


@pytest.mark.slow
def test_tile_and_matrix_select_one_mma_tile(tmp_path):
    r = _run(BIG, "--phase", "1", "--svg", tmp_path / "b.svg", "--matrix", "B",
             "--tile", "1,2")
    assert r.exit_code == 0, r.output
    svg = (tmp_path / "b.svg").read_text()
    assert "B[k][n] 128x96, tile (1, 2): k 32-63, n 16-23" in svg
    cells = _cells(svg)
    assert len(cells) == 32 * 8
    x0, y0 = min(cells)
    at = lambda k, n: cells[(x0 + n * 46, y0 + k * 24)]  # noqa: E731
    for k in range(32):
        for n in range(8):
            lane, re_ = at(k, n)
            t, e = (k % 16) // 4, k % 4
            assert lane == f"T{4 * n + t}", (k, n)
            assert re_.endswith(f".{e}"), (k, n)
    # the two registers of a lane: k 0-15 and k 16-31 are different registers
    assert at(0, 0)[1].split(".")[0] != at(16, 0)[1].split(".")[0]


def test_a_small_phase_is_drawn_whole(tmp_path):
    r = _run(SMALL, "--phase", "1", "--png", tmp_path / "s.png")
    assert r.exit_code == 0, r.output
    assert "drew tile" not in r.stderr
    assert _png_size(tmp_path / "s.png")[0] == 64 * 36 + 8        # A is 16x64


@pytest.mark.slow
def test_bad_selections_are_errors(tmp_path):
    r = _run(BIG, "--phase", "1", "--png", tmp_path / "x.png", "--tile", "9,0")
    assert r.exit_code == 2 and "there is no tile (9, 0)" in r.output
    r = _run(BIG, "--phase", "1", "--png", tmp_path / "x.png", "--tile", "a")
    assert r.exit_code == 2 and "expected two tile indices" in r.output
    r = _run(BIG, "--phase", "1", "--tile", "0,0")
    assert r.exit_code == 2 and "give one of them" in r.output
    assert not (tmp_path / "x.png").exists()
