"""`rrsplice fragments`, `descriptor` and the corpus table from the command line."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zlib

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, RECIPES, ROOT

from rrsplice.cli.app import main

TINY = str(FIXTURES / "swin_tiny_sm89.ptx")


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_fragments_text_names_every_register_with_its_rule():
    r = run("fragments", TINY, "--phase", "7")
    assert r.exit_code == 0, r.output
    assert "%r4144 s2655 tile (0, 0) reg 0: A[0..7][0..15]: row = g, k = 4t + e" in r.output
    assert ("%r4155 s2655 tile (0, 0) reg 1: B[16..31][0..7]: k = 16 + 4t + e, n = g; "
            "weight byte = 84484 + 8*lane + 512*warp + e") in r.output
    assert "9.7.14.5.10" in r.output


def test_fragments_json_elements_cover_phase_matrices():
    r = run("fragments", TINY, "--phase", "2", "--json", "--elements")
    data = json.loads(r.output)
    (ph,) = data["phases"]
    cells = {(e[2], e[3]) for f in ph["A"] for e in f["elements"]}
    assert len(cells) == ph["m"] * ph["k"]
    for f in ph["B"]:
        for lane, e, _row, _col, wb in f["elements"]:
            assert wb == f["weight"]["offset"] + lane * f["weight"]["lane_stride"] + e


def test_fragments_of_a_recipe_place_a_regs_c_regs_and_returns():
    r = run("fragments", str(RECIPES / "swin_tiny_sm89.py"), "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    passed = {x["reg"]: x["fragment"] for x in data["passed"]}
    assert passed["%r32"]["matrix"] == "A" and passed["%r32"]["tile"] == [0, 0]
    assert passed["%r430"]["matrix"] == "C" and passed["%r430"]["weight"]["offset"] == 32768
    ret = {x["reg"]: x["fragment"] for x in data["returned"]}
    assert ret["%r4160"]["matrix"] == "D" and ret["%r4160"]["phase"] == 7
    assert ret["%r1739"] is None                     # a shuffle mask, not a fragment


def test_pictures_are_written(tmp_path):
    svg, png = tmp_path / "p.svg", tmp_path / "p.png"
    r = run("fragments", TINY, "--phase", "7", "--svg", str(svg), "--png", str(png))
    assert r.exit_code == 0, r.output
    text = svg.read_text()
    assert text.startswith("<svg") and ">T31<" in text and "%r4144.3" in text
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    raw = zlib.decompress(data[data.index(b"IDAT") + 4:data.index(b"IEND") - 8])
    assert len(raw) == h * (1 + 3 * w)


def test_bad_phase_is_a_clear_error_and_writes_nothing(tmp_path):
    out = tmp_path / "x.svg"
    r = CliRunner().invoke(main, ["fragments", TINY, "--phase", "99", "--svg", str(out)])
    assert r.exit_code == 2 and "phases 1-7, not 99" in r.output
    assert not out.exists()


def test_descriptor_writes_python_with_evidence(tmp_path):
    out = tmp_path / "descriptor_tiny.py"
    r = run("descriptor", TINY, "-o", str(out))
    assert r.exit_code == 0
    text = out.read_text()
    ns: dict = {}
    exec(compile(text, str(out), "exec"), ns)
    assert [p["epilogue"] for p in ns["phases"]()] == [
        "scale", "softmax", "shared staging", "norm", "relu", "transpose", None]
    assert "'+40': 40,  # s5 line 34: ld.param.u64 %rd7, [rrswin_tiny_kernel_param_0+40]" in text


@pytest.mark.slow
def test_descriptor_all_and_phases_all_give_the_corpus_table(tmp_path, monkeypatch):
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("swin_tiny_sm89.ptx", "small/crlf.ptx", "bad/truncated.ptx",
                 "small/multi_entry.ptx"):
        (corpus / name.replace("/", "_")).write_bytes((FIXTURES / name).read_bytes())
    cmd = [sys.executable, "-m", "rrsplice"]
    first = subprocess.run(cmd + ["descriptor", "--all", str(corpus), "--json"],
                           capture_output=True, text=True, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    rows = {r["module"].rsplit("/", 1)[1]: r for r in data["rows"]}
    tiny = rows["swin_tiny_sm89.ptx"]
    assert tiny["mma"] == 162 and tiny["phases"] == 7
    assert tiny["epilogues"][0] == "scale+requantise"
    assert tiny["geometry"][0] == "32x64x128 m16n8k32"
    assert "truncated.ptx:16:20: error" in rows["bad_truncated.ptx"]["error"]
    assert data["failed"] == 1 and data["modules"] == 4 and data["entries"] == 5
    multi = [r["entry"] for r in data["rows"] if r["module"].endswith("multi_entry.ptx")]
    assert multi == ["entry_a", "entry_b", "_Z7entry_c6Params"]
    # the second run is served from the cache, and `phases --all` prints the same table
    again = subprocess.run(cmd + ["phases", "--all", str(corpus), "--json"],
                           capture_output=True, text=True, cwd=ROOT)
    assert json.loads(again.stdout) == data
    text = subprocess.run(cmd + ["phases", "--all", str(corpus)], capture_output=True,
                          text=True, cwd=ROOT)
    assert text.stdout.splitlines()[0].startswith("module\tentry\tlines\tmma\tphases")
    assert "4 modules, 5 entries, 163 mma" in text.stderr


def test_scaffolded_recipes_carry_the_maps_in_their_header():
    """Every committed scaffolded recipe: one map line per A_REGS / C_REGS entry, the bias
    seeds' weight bytes equal the generator's truth, and D lines for returned fragments."""
    import importlib.util
    import re
    for arch in ("sm89", "sm120"):
        for stem in ("swin_tiny", "swin_small", "swin_big"):
            path = RECIPES / f"{stem}_{arch}.py"
            spec = importlib.util.spec_from_file_location(path.stem, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            doc = mod.__doc__
            truth = json.loads((FIXTURES / f"{stem}.launch.json").read_text())
            seeds = truth["fragment_truth"][0]["bias_seed_offset_by_ntile"]
            for r in mod.A_REGS:
                assert re.search(rf"^  {re.escape(r)}: phase 1 tile \(\d+, \d+\) r[0-3]: "
                                 rf"A\[\d+\.\.\d+\]\[\d+\.\.\d+\]: row = ", doc, re.M), r
            for n, r in enumerate(mod.C_REGS):
                block = doc.split(f"\n  {r}: ", 1)[1].split("\n  %", 1)[0]
                assert f"weight byte = {seeds[n]} + " in block, (path.name, r)
            assert re.search(r"^  %\w+: phase \d+ tile \(\d+, \d+\) r[01]: D\[", doc, re.M)
