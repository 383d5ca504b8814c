"""scripts/gpu_diff.py for any kernel: its launch-description parsing and argument and
buffer building, run on the CPU (the GPU launch itself needs a device)."""

from __future__ import annotations

import importlib.util
import struct
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
DYN = FIXTURES / "edge" / "dynamic_smem.launch.json"


def test_params_form_gives_one_argument_per_kernel_parameter():
    launch = gd.load_launch_description(DYN)
    host = gd.host_inputs(launch, seed=5)
    assert sorted(host) == ["in", "out"]
    assert host["in"].size == 262144 + gd.GUARD and host["out"].size == 262144 + gd.GUARD
    f = host["in"][:262144].view(np.float32)
    assert 0 <= f.min() and f.max() < 1 and np.unique(f).size > 1000      # f32_unit
    assert not host["out"].any()                                          # zero, guard zero
    args = gd.pack_args(launch, {"in": 0x7000_0000_1000, "out": 0x7000_0004_1000})
    assert args == [struct.pack("<Q", 0x7000_0000_1000), struct.pack("<Q", 0x7000_0004_1000),
                    struct.pack("<f", 0.5), struct.pack("<i", 65536)]
    # the same seed gives the same bytes; another seed other bytes
    assert np.array_equal(gd.host_inputs(launch, 5)["in"], host["in"])
    assert not np.array_equal(gd.host_inputs(launch, 6)["in"], host["in"])


def test_param_block_form_packs_one_struct_at_the_field_offsets():
    launch = gd.load_launch_description(FIXTURES / "swin_tiny.launch.json")
    handles = {p.name: 0x1000 * (i + 1) for i, p in enumerate(launch.params)
               if p.kind in ("buffer", "texture", "surface")}
    (block,) = gd.pack_args(launch, handles)
    assert len(block) == 96
    for p in launch.params:
        got = block[p.offset:p.offset + p.size]
        if p.name in handles:
            assert struct.unpack("<Q", got)[0] == handles[p.name], p.name
        else:
            assert got == p.scalar_bytes(), p.name


def test_textures_need_the_param_block_form(tmp_path):
    from rrsplice.workflow.launch import parse_launch
    launch = parse_launch({"grid": [1, 1, 1], "block": [32, 1, 1], "params": [
        {"name": "t", "kind": "texture"}]}, "x.json")
    with pytest.raises(ValueError, match="param_block form only"):
        gd.host_inputs(launch, 1)
