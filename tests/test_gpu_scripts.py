"""The GPU differential check's pure parts, on the CPU: input generation (`fill`), the
launch descriptions' parameter-block layout (`check_launch`), and the byte comparison with
its poison bookkeeping (`compare_outputs`, `_where`). The device side (loading cubins,
launching) is exercised only by the GPU run itself (docs/proof.md)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys

import numpy as np
import pytest
from conftest import FIXTURES, ROOT


def _load():
    spec = importlib.util.spec_from_file_location("gpu_diff", ROOT / "scripts" / "gpu_diff.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["gpu_diff"] = mod
    spec.loader.exec_module(mod)
    return mod


gd = _load()
DESCS = {f: json.loads((FIXTURES / f"swin_{f}.launch.json").read_text())
         for f in ("tiny", "small", "big")}


# ---------------------------------------------------------------- input generation

@pytest.mark.parametrize("kind,lo,hi,dtype", [("f16_unit", -1, 1, np.float16),
                                              ("f32_unit", 0, 1, np.float32),
                                              ("f32_signed2", -2, 2, np.float32)])
def test_fill_values_lie_in_their_range(kind, lo, hi, dtype):
    a = gd.fill(np.random.default_rng(1), kind, 4096)
    assert a.dtype == np.uint8 and a.size == 4096
    v = a.view(dtype)
    assert np.all(v >= lo) and np.all(v <= hi)
    assert np.unique(v).size > 100             # random, not constant


def test_fill_e4m3_small_never_sets_bit_6():
    a = gd.fill(np.random.default_rng(2), "e4m3_small", 10000)
    assert not np.any(a & 0x40) and np.any(a & 0x80) and np.any(a & 0x3F)


def test_fill_is_reproducible_from_the_seed_and_zero_is_zero():
    a = gd.fill(np.random.default_rng(7), "f32_unit", 64)
    b = gd.fill(np.random.default_rng(7), "f32_unit", 64)
    c = gd.fill(np.random.default_rng(8), "f32_unit", 64)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert not gd.fill(np.random.default_rng(1), "zero", 32).any()
    with pytest.raises(ValueError, match="unknown fill"):
        gd.fill(np.random.default_rng(1), "f8_random", 8)


# ---------------------------------------------------------------- launch descriptions

@pytest.mark.parametrize("name", sorted(DESCS))
def test_committed_launch_descriptions_lay_out_the_96_byte_block(name):
    spans = gd.check_launch(DESCS[name])
    # 9 pointers/objects then 6 four-byte scalars fill the 96 bytes exactly, no gap
    assert [o for o, _, _ in spans] == [8 * i for i in range(9)] + [72 + 4 * i for i in range(6)]
    assert sum(n for _, n, _ in spans) == DESCS[name]["param_block"]["size"] == 96


def _broken(name, edit):
    d = copy.deepcopy(DESCS[name])
    edit(d)
    return d


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d["param_block"]["fields"][1].update(offset=4), "overlaps|alignment"),
    (lambda d: d["param_block"]["fields"][-1].update(offset=96), "does not fit"),
    (lambda d: d["param_block"]["fields"][0].update(kind="pointer"), "unknown parameter kind"),
    (lambda d: d["param_block"]["fields"][0].update(fill="noise"), "unknown fill"),
    (lambda d: d["param_block"]["fields"][10].update(offset=72), "overlaps"),
    (lambda d: d.update(block=[32, 0, 4]), "positive"),
])
def test_broken_launch_descriptions_are_refused(edit, needle):
    with pytest.raises(ValueError, match=needle):
        gd.check_launch(_broken("tiny", edit))


# ---------------------------------------------------------------- comparison

def _outputs(n=512, seed=3):
    rng = np.random.default_rng(seed)
    return {"plane_out": rng.integers(0, 256, n * 16, dtype=np.uint8),
            "surf_out": rng.integers(0, 256, n * 8, dtype=np.uint8)}


def test_identical_runs_compare_clean():
    a = _outputs()
    per = gd.compare_outputs(a, copy.deepcopy(a), copy.deepcopy(a), DESCS["tiny"])
    assert per["plane_out"]["bytes"] == 512 * 16 and per["surf_out"]["bytes"] == 512 * 8
    assert all(o["mismatches"] == 0 and o["original_repeat_mismatches"] == 0 for o in per.values())
    assert "where" not in per["plane_out"]


def test_mismatches_are_counted_and_located():
    a = _outputs()
    b = copy.deepcopy(a)
    width = 128
    # pixel (x=3, y=2) of plane_out: 16 bytes per pixel; flip 5 of its bytes
    p = 2 * width + 3
    b["plane_out"][p * 16:p * 16 + 5] ^= 0xFF
    per = gd.compare_outputs(a, copy.deepcopy(a), b, DESCS["tiny"])
    assert per["plane_out"]["mismatches"] == 5 and per["surf_out"]["mismatches"] == 0
    where = per["plane_out"]["where"]
    assert where["pixels"] == 1 and where["first"] == [[3, 2]]
    assert where["by_warp"] == {"0": 0, "1": 0, "2": 1, "3": 0}


def test_unwritten_bytes_show_by_their_poison():
    n = 64
    a = {"plane_out": np.full(n * 16, 0xA5, np.uint8)}       # original wrote nothing
    a2 = {"plane_out": np.full(n * 16, 0x3C, np.uint8)}
    b = {"plane_out": np.full(n * 16, 0x5A, np.uint8)}       # neither did the spliced one
    per = gd.compare_outputs(a, a2, b, DESCS["tiny"])["plane_out"]
    assert per["unwritten_original"] == n * 16 and per["unwritten_spliced"] == n * 16
    # bytes the original never writes are not compared as values: nothing was written, so
    # nothing differs, and `written_original` 0 tells the caller the comparison was empty
    assert per["original_repeat_mismatches"] == 0 and per["mismatches"] == 0
    assert per["written_original"] == 0
    # a kernel that writes part of an output (one pixel in 16, as the dec stand-ins'
    # surface) is compared on what the original writes, and a write where it wrote
    # nothing, or a byte it wrote that the spliced kernel leaves, is a mismatch
    part = np.zeros(n * 16, bool)
    part[::16] = True
    a = {"plane_out": np.where(part, 7, 0xA5).astype(np.uint8)}
    a2 = {"plane_out": np.where(part, 7, 0x3C).astype(np.uint8)}
    b = {"plane_out": np.where(part, 7, 0x5A).astype(np.uint8)}
    per = gd.compare_outputs(a, a2, copy.deepcopy(b), DESCS["tiny"])["plane_out"]
    assert per["mismatches"] == 0 and per["written_original"] == n
    b2 = copy.deepcopy(b)
    b2["plane_out"][1] = 9          # written where the original wrote nothing
    b2["plane_out"][16] = 0x5A      # left where the original wrote
    per = gd.compare_outputs(a, a2, b2, DESCS["tiny"])["plane_out"]
    assert per["mismatches"] == 2
    a2["plane_out"][32] = 8         # the original disagrees with itself on a written byte
    assert gd.compare_outputs(a, a2, b, DESCS["tiny"])["plane_out"]["original_repeat_mismatches"] == 1
    # a byte both kernels really wrote as 0x5A is not counted as unwritten
    a = {"plane_out": np.full(4, 0x5A, np.uint8)}
    per = gd.compare_outputs(a, copy.deepcopy(a), copy.deepcopy(a), DESCS["tiny"])
    assert per["plane_out"]["unwritten_spliced"] == 0
