"""Launch descriptions (rrsplice.workflow.launch) and the occupancy report of a kernel launched with
dynamic shared memory (`.extern .shared`), which ptxas -v cannot see."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT

from rrsplice.analysis.occupancy import blocks_per_sm, shared_limits
from rrsplice.cli import main
from rrsplice.workflow.launch import LaunchError, load_launch, parse_launch

EDGE = FIXTURES / "edge"
DYN = EDGE / "dynamic_smem_sm89.ptx"
DYN_LAUNCH = EDGE / "dynamic_smem.launch.json"
# the 32 fma results of dyn_stage: 32 live-out floats, 128 bytes x 256 threads = 32 KiB
DYN_RANGE = "s117-s180"


def test_every_bundled_launch_description_loads():
    for path in sorted(FIXTURES.rglob("*.launch.json")):
        d = load_launch(path)
        assert d.threads > 0 and d.params, path
    swin = load_launch(FIXTURES / "swin_tiny.launch.json")
    assert swin.by_value_block and swin.block_size == 96 and swin.threads == 128
    assert [p.offset for p in swin.params][:3] == [0, 8, 16]
    dyn = load_launch(DYN_LAUNCH)
    assert not dyn.by_value_block and dyn.dynamic_shared_bytes == 32768
    assert [(p.name, p.kind, p.size) for p in dyn.params] == [
        ("in", "buffer", 8), ("out", "buffer", 8), ("scale", "f32", 4), ("n", "i32", 4)]
    assert dyn.params[2].scalar_bytes() == b"\x00\x00\x00\x3f"      # 0.5f


def _desc(**kw):
    d = {"format": "rrsplice-launch/1", "grid": [1, 1, 1], "block": [32, 1, 1],
         "params": [{"name": "p", "kind": "u32", "value": 1}]}
    d.update(kw)
    return d


@pytest.mark.parametrize("change, message", [
    (dict(grid=[1, 0, 1]), "'grid' must be three positive integers"),
    (dict(block=[32, True, 1]), "'block' must be three positive integers"),
    (dict(dynamic_shared_bytes=-1), "'dynamic_shared_bytes' must be a non-negative"),
    (dict(format="other/2"), "is not 'rrsplice-launch/1'"),
    (dict(params=[{"name": "p", "kind": "u128", "value": 1}]), "p: unknown kind 'u128'"),
    (dict(params=[{"name": "p", "kind": "u32", "value": 1.5}]), "a u32 needs a numeric"),
    (dict(params=[{"name": "p", "kind": "u16", "value": 70000}]), "does not fit a u16"),
    (dict(params=[{"name": "p", "kind": "buffer"}]), "a buffer needs a positive integer"),
    (dict(params=[{"name": "p", "kind": "buffer", "bytes": 4, "role": "sink"}]),
     "role 'sink' is not one of"),
    (dict(params=[{"name": "p", "kind": "i32", "value": 1}] * 2), "'p' appears twice"),
    (dict(params=[{"name": "p", "kind": "buffer", "bytes": 4, "bytes_before": 8}]),
     "'bytes_before' .* must be a non-negative multiple of 16, got 8"),
    (dict(params=[{"name": "p", "kind": "buffer", "bytes": 4, "bytes_before": -16}]),
     "'bytes_before' .* got -16"),
    (dict(param_block={"size": 16, "fields": []}), "give exactly one of"),
])
def test_bad_descriptions_are_refused_naming_the_key(change, message):
    with pytest.raises(LaunchError, match=message):
        parse_launch(_desc(**change), "x.launch.json")


def test_param_block_fields_must_fit_and_not_overlap():
    def block(fields, size=16):
        d = _desc(param_block={"size": size, "fields": fields})
        del d["params"]
        return parse_launch(d, "x.launch.json")
    ok = block([{"name": "a", "kind": "u64", "offset": 0, "value": 1},
                {"name": "b", "kind": "i32", "offset": 8, "value": 1}])
    assert [p.offset for p in ok.params] == [0, 8]
    with pytest.raises(LaunchError, match="b at offset 12 does not fit the 12-byte"):
        block([{"name": "b", "kind": "i32", "offset": 12, "value": 1}], size=12)
    with pytest.raises(LaunchError, match="with 8-byte alignment"):
        block([{"name": "a", "kind": "buffer", "bytes": 8, "offset": 4}])
    with pytest.raises(LaunchError, match="a \\(offset 0\\) overlaps b \\(offset 4\\)"):
        block([{"name": "a", "kind": "u64", "offset": 0, "value": 1},
               {"name": "b", "kind": "i32", "offset": 4, "value": 1}])


def test_json_errors_name_line_and_column(tmp_path):
    p = tmp_path / "x.launch.json"
    p.write_text('{\n  "grid": [1, 1, 1],\n  "block": [32 1 1]\n}\n')
    with pytest.raises(LaunchError) as exc:
        load_launch(p)
    assert str(exc.value).startswith(f"{p}:3:16: not JSON")


def test_shared_limits_at_the_48_KiB_default_and_the_arch_maximum():
    assert not shared_limits("sm_89", 16384, 32768)["opt_in"]          # exactly 48 KiB
    assert shared_limits("sm_89", 16385, 32768)["opt_in"]
    assert shared_limits("sm_89", 0, 99 * 1024)["fits"]
    assert not shared_limits("sm_89", 1, 99 * 1024)["fits"]
    assert shared_limits("sm_90a", 0, 227 * 1024) == {
        "total": 227 * 1024, "opt_in": True, "max_per_block": 227 * 1024, "fits": True}
    assert shared_limits("sm_70", 0, 1)["fits"] is None
    assert blocks_per_sm("sm_90a", 0, 128).arch == "sm_90"


@pytest.mark.slow
def test_occupancy_counts_the_launch_dynamic_shared_memory(tmp_path, ptxas_path):
    from rrsplice.workflow.scaffold import new_recipe
    res = new_recipe("dyn", DYN, DYN_RANGE, abi="scratch", out=tmp_path / "dyn.py",
                     launch=DYN_LAUNCH)
    own = res.own_scratch
    # static arrays from ptxas -v: none before, the 32 KiB scratch after; dynamic 32 KiB
    assert (own["static_before"], own["static_after"], own["dynamic"]) == (0, 32768, 32768)
    assert (own["shared_before"], own["shared_after"]) == (32768, 65536)
    # sm_89: 100 KiB per SM, 1 KiB reserved per block; 256 threads of 1536 allow 6
    assert own["blocks_before"] == min(6, 102400 // (32768 + 1024)) == 3
    assert own["blocks_after"] == 102400 // (65536 + 1024) == 1
    assert not own["opt_in_before"] and own["opt_in_after"] and own["fits_after"]
    assert "cudaFuncAttributeMaxDynamicSharedMemorySize, 32768" in own["note"]
    # the flag says the same; past sm_89's 99 KiB per block the note says it cannot launch
    res = new_recipe("dyn2", DYN, DYN_RANGE, out=tmp_path / "dyn2.py", dynamic_smem=70000)
    assert res.own_scratch["shared_after"] == 70000 + 32768
    assert res.own_scratch["fits_after"] is False
    assert "exceed the 101376 a block may use on sm_89" in res.own_scratch["note"]


def test_cli_launch_options(tmp_path):
    r = CliRunner().invoke(main, ["recipe", "new", "d", "--module", str(DYN), "--range",
                                  DYN_RANGE, "-o", str(tmp_path / "d.py"), "--launch",
                                  str(DYN_LAUNCH), "--dynamic-smem", "1"])
    assert r.exit_code == 2 and "give --launch or --dynamic-smem, not both" in r.output
    other = tmp_path / "other.launch.json"
    other.write_text(json.dumps(_desc(kernel="k2")))
    r = CliRunner().invoke(main, ["recipe", "new", "d", "--module", str(DYN), "--range",
                                  DYN_RANGE, "-o", str(tmp_path / "d.py"), "--launch",
                                  str(other)])
    assert r.exit_code == 2 and "describes the launch of k2, not dyn_stage" in r.output
    assert not (tmp_path / "d.py").exists()


def test_bytes_before_is_allocated_below_the_pointer_and_filled():
    """A buffer read below its pointer (the DLSS stand-ins' column table at base - 32776)
    gets those bytes allocated and filled from the trial's seed, and the pointer passed to
    the kernel points past them (scripts/gpu_diff.py, the generic launch path)."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("gpu_diff_bb", ROOT / "scripts" / "gpu_diff.py")
    gd = importlib.util.module_from_spec(spec)
    sys.modules["gpu_diff_bb"] = gd
    spec.loader.exec_module(gd)
    d = _desc(params=[{"name": "p", "kind": "buffer", "bytes": 64, "bytes_before": 32,
                       "fill": "f32_unit"}])
    launch = parse_launch(d, "x.launch.json")
    host = gd.host_inputs(launch, 3)["p"]
    assert host.size == 32 + 64 + gd.GUARD
    assert host[:32].any()                      # filled, not left as zeros
    args = gd.pack_args(launch, {"p": 1000 + launch.params[0].bytes_before})
    assert int.from_bytes(args[0], "little") == 1032
