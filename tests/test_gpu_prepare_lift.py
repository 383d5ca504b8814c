"""The negative controls scripts/gpu_prepare_lift.py builds for the GPU proof of lifted
bodies, on real lifted bodies: each changes exactly the one call (or pair of calls) it
names, at the occurrence asked for, and leaves every other byte of the body as it was. A
control that changed nothing, or changed more than it says, would make the GPU's
"controls differ" column mean something else."""

from __future__ import annotations

import difflib
import importlib.util
import re
import sys

import pytest
from conftest import ROOT

from rrsplice.lift import lift_region

pytestmark = pytest.mark.slow        # lifts three regions

spec = importlib.util.spec_from_file_location("gpu_prepare_lift_t", ROOT / "scripts" / "gpu_prepare_lift.py")
g = importlib.util.module_from_spec(spec)
sys.path.insert(0, str(ROOT / "scripts"))
sys.modules["gpu_prepare_lift_t"] = g
spec.loader.exec_module(g)


@pytest.fixture(scope="module")
def bodies():
    return {(name, staging): lift_region(ROOT / "recipes" / f"{name}.py", staging)
            for name, staging in (("frag_struct", "registers"), ("frag_struct", "image"),
                                  ("swin_tiny_sm89", "registers"))}


def _changed_lines(a: str, b: str) -> list:
    return [ln for ln in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
            if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]


@pytest.mark.parametrize("at", ["first", "last"])
def test_b_swap_exchanges_the_chosen_mmas_b_registers_only(bodies, at):
    text = bodies["frag_struct", "registers"].text
    calls = list(re.finditer(r"rr_mma_m16n8k32_f16_e4m3\(([^;]*)\);", text))
    assert len(calls) >= 2
    out, why = g.swap_b_operands(text, at)
    ops = (calls[-1] if at == "last" else calls[0]).group(1).split(", ")
    want = ops[:4] + [ops[5], ops[4]] + ops[6:]
    changed = _changed_lines(text, out)
    assert len(changed) == 2, changed                   # one line out, one line in
    assert ", ".join(want) in changed[1] and f"{ops[4]}, {ops[5]}" in why


@pytest.mark.parametrize("at", ["first", "last"])
def test_staging_swap_exchanges_two_neighbouring_stagings(bodies, at):
    text = bodies["frag_struct", "image"].text
    calls = re.findall(r"rr_stage_a\(rr_img, [^;]*?, (\w+)\);", text)
    out, _ = g.swap_stagings(text, at)
    got = re.findall(r"rr_stage_a\(rr_img, [^;]*?, (\w+)\);", out)
    i = len(calls) - 2 if at == "last" else 0
    assert got[i:i + 2] == calls[i:i + 2][::-1] and calls[i] != calls[i + 1]
    assert got[:i] + got[i + 2:] == calls[:i] + calls[i + 2:]
    assert len(_changed_lines(text, out)) == 4


@pytest.mark.parametrize("at", ["first", "last"])
def test_rounding_flip_changes_one_conversion_and_adds_its_helper(bodies, at):
    body = bodies["swin_tiny_sm89", "registers"]
    name, out, header, why = g.registers_control(body.text, body.header, "auto", at)
    assert name == "rounding"
    rn, rz = "rr_op_cvt_rn_f16x2_f32(", "rr_op_cvt_rz_f16x2_f32("
    where = [m.start() for m in re.finditer(re.escape(rn), body.text)]
    k = where[-1] if at == "last" else where[0]
    assert out == body.text[:k] + rz + body.text[k + len(rn):]
    assert rz[:-1] in header and rz[:-1] not in body.header


def test_the_control_kind_follows_the_body(bodies):
    struct = bodies["frag_struct", "registers"]
    assert g.registers_control(struct.text, struct.header)[0] == "b-swapped"   # no conversion
    tiny = bodies["swin_tiny_sm89", "registers"]
    assert g.registers_control(tiny.text, tiny.header, "b-swapped", "last")[0] == "b-swapped"
