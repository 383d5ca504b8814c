"""A real fixture's whole region, lifted, run on the host: swin_tiny_sm89's s342-s2656
(7 GEMM phases, 162 mma, layer norms, softmax over shfl reductions, e4m3 requantisation)
through its recipe's scratch ABI, one warp of 32 lanes as host threads, against the same
region run on tests/lift_warp_interp.py from the same inputs."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest
from conftest import ROOT
from lift_host import build, run
from lift_region_run import prologue_slice
from lift_warp_interp import _lane, run_warp
from ptx_interp import Machine

from rrsplice import parse
from rrsplice.lift import lift_region
from rrsplice.workflow.recipe import load_recipe

RECIPE = ROOT / "recipes" / "swin_tiny_sm89.py"
SHARED_BASE = 0x100
WORDS = 1 << 20        # 4 MiB of global memory: every pointer the call passes points at it


class _Words(dict):
    """Global memory of the interpreter: the host's words, read on demand."""

    def __init__(self, words, base):
        super().__init__()
        self.words, self.base = words, base

    def __contains__(self, key):
        return dict.__contains__(self, key) or 0 <= key - self.base < 4 * len(self.words)

    def __missing__(self, key):
        return self.words[(key - self.base) // 4]


def _machine(lane, rec, words, base) -> Machine:
    """Lane `lane` of warp 0 (tid.z 0) of block 0, the kernel parameter block's pointers
    all at the global buffer."""
    m = Machine()
    m.special = {"%tid.x": lane, "%tid.y": 0, "%tid.z": 0, "%ntid.x": 32, "%ntid.y": 1,
                 "%ntid.z": 4, "%laneid": lane, "%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0,
                 "%nctaid.x": 4, "%nctaid.y": 16, "%nctaid.z": 1}
    m.symbols[rec.const("SCRATCH")] = ("shared", SHARED_BASE)
    m.symbols["rrswin_tiny_kernel_param_0"] = ("param", 0)
    for off in range(0, 96, 4):
        m.mem["param"][("rrswin_tiny_kernel_param_0", off)] = base
    m.mem["global"] = _Words(words, base)
    return m


def _safe_byte(rng) -> int:
    """A byte that is neither an e4m3 NaN nor the high byte of an f16 Inf/NaN."""
    while True:
        b = rng.randrange(256)
        if (b & 0x7F) < 0x7C:
            return b


def _word(rng) -> int:
    return int.from_bytes(bytes(_safe_byte(rng) for _ in range(4)), "little")


def _small_f16_word(rng) -> int:
    """Two f16 of magnitude below 4 (bias seeds, layer-norm constants)."""
    def h():
        return (rng.randrange(2) << 15) | (rng.randrange(0, 15) << 10) | rng.randrange(1024)
    return h() | (h() << 16)


def run_both(tmp_path, transform=None, shared=SHARED_BASE + 32 * 32, staging="registers"):
    """The region on the warp interpreter and the lifted body on the host, from the same
    inputs: (recipe, interpreter lanes, the host's .shared bytes). `transform` may edit the
    body text first (debugging probes)."""
    body = lift_region(RECIPE, staging)
    text = transform(body.text) if transform else body.text
    if body.mma_header:
        (tmp_path / "rr_mma.h").write_text(body.mma_header)
    rec = load_recipe(RECIPE)
    bmod = parse(body.outlined_ptx, filename="body.ptx")
    bfn = next(f for f in bmod.functions if f.has_body)
    loads = {st.operands[1].base.name: st.operands[0].name for st in bfn.statements
             if st.opcode and st.opcode.startswith("ld.param")}
    params = [(p.name, loads[p.name], p.type) for p in bfn.params]
    exe = build(tmp_path, text, body.header, body.callee,
                ["rr_u64" if t == ".b64" else "rr_u32" for _, _, t in params], 0, 32, WORDS,
                shared=shared)
    mod = parse(ROOT / "corpus_fixtures" / "swin_tiny_sm89.ptx")
    fn = mod.function("rrswin_tiny_kernel")
    rng = random.Random(11)
    safe = np.array([b for b in range(256) if (b & 0x7F) < 0x7C], dtype=np.uint8)
    words = np.random.default_rng(11).choice(safe, 4 * WORDS).view("<u4").tolist()
    base = 0x100000
    c_regs = set(rec.const("C_REGS"))
    first, last = body.region
    prologue = prologue_slice(fn, first, [r for _, r, _ in params])
    lane_live = []
    for lane in range(32):
        m = _machine(lane, rec, words, base)
        for st in fn.statements[:first - 1]:      # texture fetches: random texels in [0, 1)
            if st.base == "tex":
                for r in st.operands[0].items:
                    m.regs[r.name] = struct.unpack("<I", struct.pack("<f", rng.random()))[0]
        for st in prologue:
            _lane(st, m)
        live = {}
        for _, reg, _ty in params:
            if reg.startswith("%rrs"):
                continue
            if reg in m.regs:
                live[reg] = m.regs[reg]          # the kernel's own prologue computed it
            elif reg in c_regs:
                live[reg] = _small_f16_word(rng)
            else:
                live[reg] = _word(rng)
        lane_live.append(live)
    lanes = []
    block_shared = {a: 0 for a in range(SHARED_BASE, SHARED_BASE + 8192, 4)}
    for lane in range(32):
        m = _machine(lane, rec, words, base)
        m.regs.update(lane_live[lane])
        m.mem["shared"] = block_shared          # one .shared window for the whole warp
        lanes.append(m)
    run_warp(fn, lanes, first, last)
    args = []
    for lane in range(32):
        row = []
        for _, reg, ty in params:
            if reg.startswith("%rrs"):
                row.append((SHARED_BASE, False))
            elif ty == ".b64" and 0 <= lane_live[lane][reg] - base < 4 * WORDS:
                row.append((lane_live[lane][reg] - base, True))     # a pointer
            else:
                row.append((lane_live[lane][reg], False))
        args.append(row)
    _, after, smem = run(exe, words, args, shared=True)
    assert after == words               # the region only reads global memory
    return rec, lanes, smem


@pytest.mark.slow
def test_tiny_whole_region_on_the_host_matches_the_warp_interpreter(tmp_path):
    rec, lanes, smem = run_both(tmp_path)
    rets = rec.const("RET_REGS")
    stride = rec.const("RET_STRIDE")
    mismatches = []
    for lane, m in enumerate(lanes):
        for k, reg in enumerate(rets):
            off = SHARED_BASE + lane * stride + 4 * k
            got = int.from_bytes(smem[off:off + 4], "little")
            if got != m.regs[reg]:
                mismatches.append((lane, reg, hex(got), hex(m.regs[reg])))
    assert not mismatches, (sorted({r for _, r, _, _ in mismatches}), len(mismatches), mismatches[:4])


PROBE = 0x10000         # where the probe stores every register of every lane


def _probe_all(names: list):
    """A body transform: before the call text's barrier, every lifted register of every
    lane stored to .shared at PROBE + (k * 32 + lane) * 4 (k: its index in `names`)."""
    import re

    def transform(text: str) -> str:
        names[:] = sorted(set(re.findall(r"\bv_((?:r|f|rs)\d+)\b", text)))
        i = text.rfind("\n", 0, text.index("rr_bar_sync("))
        probes = [f"    RR_ST(SHARED, {'float' if r[0] == 'f' else 'rr_u16' if r[:2] == 'rs' else 'rr_u32'}, "
                  f"{PROBE:#x}u + ({k}u * 32u + rr_sreg_laneid()) * 4u, v_{r});"
                  for k, r in enumerate(names)]
        return text[:i] + "\n" + "\n".join(probes) + text[i:]
    return transform


@pytest.mark.slow
@pytest.mark.parametrize("staging", ["registers", "image"])
def test_tiny_every_register_of_every_lane_matches_the_warp_interpreter(tmp_path, staging):
    """Not only what the call text reads back: every register the region writes, on every
    lane (a rounding that the e4m3 requantisation absorbs still shows here). `image`: each
    phase's A fragments staged into the per-warp e4m3 image and every mma reading A there."""
    names: list = []
    _, lanes, smem = run_both(tmp_path, _probe_all(names), shared=PROBE + 4 * 32 * 5000,
                              staging=staging)
    checked, bad = 0, []
    for k, r in enumerate(names):
        w = 2 if r.startswith("rs") else 4
        for lane, m in enumerate(lanes):
            want = m.regs.get("%" + r)
            if want is None:
                continue
            off = PROBE + (k * 32 + lane) * 4
            got = int.from_bytes(smem[off:off + w], "little")
            checked += 1
            if got != want:
                bad.append(("%" + r, lane, hex(got), hex(want)))
    assert checked > 32 * 2000
    assert not bad, (len(bad), bad[:6])


@pytest.mark.slow
@pytest.mark.parametrize("staging,control", [("registers", "flip_rounding"),
                                             ("image", "swap_stagings")])
def test_the_gpu_proofs_negative_controls_are_visible_on_the_host(tmp_path, staging, control):
    """The two edits scripts/gpu_prepare_lift.py makes for its negative controls (one
    cvt.rn.f16x2.f32 lifted as .rz; two staged A entries swapped) change what the region
    computes, so the same comparison that passes above fails on them."""
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_prepare_lift as g
    names: list = []
    probe = _probe_all(names)
    header_edit = {}

    def edit(text: str) -> str:
        if control == "flip_rounding":
            from rrsplice.lift.header import helper_text
            from rrsplice.lift.semantics import ROWS
            text, _h, why = g.flip_rounding(text, "")
            assert "cvt.rn.f16x2.f32 lifted as cvt.rz.f16x2.f32" in why
            header_edit["rz"] = helper_text(ROWS["cvt.rz.f16x2.f32"])
            return probe(text.replace('#include "rr_lift.h"', '#include "rr_lift.h"\n'
                                      + header_edit["rz"], 1))
        return probe(g.swap_stagings(text)[0])
    _, lanes, smem = run_both(tmp_path, edit, shared=PROBE + 4 * 32 * 5000, staging=staging)
    differ = 0
    for k, r in enumerate(names):
        w = 2 if r.startswith("rs") else 4
        for lane, m in enumerate(lanes):
            want = m.regs.get("%" + r)
            off = PROBE + (k * 32 + lane) * 4
            differ += want is not None and int.from_bytes(smem[off:off + w], "little") != want
    assert differ > 0
