"""ldmatrix as the lifter lowers it (rrsplice/lift/header.py `rr_ldmatrix`), run on the host
(the warp harness, tests/warp_harness) as one warp of 32 threads and checked against the
PTX ISA's definition written here in bytes: lanes 8i..8i+7 give the row addresses of
matrix i; register i of lane l holds row l/4, b16 elements 2(l%4) and 2(l%4)+1 of matrix
i, and with .trans element (c, r) for c = 2(l%4), 2(l%4)+1 and r = l/4 (PTX ISA,
"Warp-level matrix load instruction: ldmatrix").
The Triton-style fixture's region (ldmatrix.x4 A fragments from dynamic shared memory)
lifts and compiles; its whole region runs against the interpreter in
tests/test_lift_run_fixtures.py, on the GPU in scripts/gpu_prepare_lift.py."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT

sys.path.insert(0, str(Path(__file__).resolve().parent / "warp_harness"))
from warp_harness import GLOBAL_ADDR, SHARED_ADDR, Body, build

from rrsplice import parse
from rrsplice.lift import lift_region
from rrsplice.lift.header import header_text

pytestmark = pytest.mark.slow          # g++ per case

SRC = SHARED_ADDR   # the matrices' rows, copied from global memory into .shared
OUT = SRC + 0x4000  # where each lane stores what it received
ROWS = 64           # 16-byte rows in the .shared arena the addresses choose from

BODY = r"""
extern "C" void rr_probe(rr_u64 words, rr_u32 addr)
{
    const rr_u32 l = rr_sreg_laneid();
    for (rr_u32 i = l; i < @ROWS@u * 4u; i += 32u)
        RR_ST(SHARED, rr_u32, @SRC@u + 4u * i, RR_LD(GENERIC, rr_u32, words + 4u * i));
    rr_bar_sync(0);
    rr_u32 d[4] = {0, 0, 0, 0};
    rr_ldmatrix(@COUNT@, @TRANS@, addr, d);
    for (int i = 0; i < @COUNT@; ++i)
        RR_ST(SHARED, rr_u32, @OUT@u + 4u * (32u * (rr_u32)i + l), d[i]);
}
"""


def _reference(arena: bytes, addrs: list, count: int, trans: bool) -> list:
    """[lane][i] -> the 32-bit register, from the ISA's element placement."""
    def elem(i, r, c):        # b16 element (row r, column c) of matrix i
        a = addrs[8 * i + r] - SRC + 2 * c
        return int.from_bytes(arena[a:a + 2], "little")
    out = []
    for lane in range(32):
        regs = []
        for i in range(count):
            r, c = lane >> 2, 2 * (lane & 3)
            lo, hi = (elem(i, c, r), elem(i, c + 1, r)) if trans else (elem(i, r, c), elem(i, r, c + 1))
            regs.append(lo | hi << 16)
        out.append(regs)
    return out


CASES = [(count, trans) for count in (1, 2, 4) for trans in (False, True)]


def test_ldmatrix_gives_each_lane_the_isa_elements(tmp_path):
    """Every count and .trans, one harness binary (a body per case)."""
    bodies = []
    for count, trans in CASES:
        src = tmp_path / f"ldm{count}{int(trans)}.cu"
        src.write_text('#include "rr_lift.h"\n' + BODY.replace("@ROWS@", str(ROWS))
                       .replace("@SRC@", hex(SRC)).replace("@OUT@", hex(OUT))
                       .replace("@COUNT@", str(count))
                       .replace("@TRANS@", "true" if trans else "false"))
        bodies.append(Body(src, "rr_probe", ["u64", "u32"], "lift"))
    (tmp_path / "rr_lift.h").write_text(header_text([]))
    with build(bodies, tmp_path / "h", shared_bytes=1 << 16, opt="-O1") as h:
        for k, (count, trans) in enumerate(CASES):
            rng = random.Random(count * 2 + trans)
            words = [rng.getrandbits(32) for _ in range(ROWS * 4)]
            arena = b"".join(w.to_bytes(4, "little") for w in words)
            addrs = [SRC + 16 * r for r in rng.sample(range(ROWS), 32)]   # distinct rows
            glob = np.zeros(h.global_bytes, np.uint8)
            glob[:len(arena)] = np.frombuffer(arena, np.uint8)
            smem, _ = h.call(k, (32, 1, 1), [[GLOBAL_ADDR, addrs[lane]] for lane in range(32)],
                             bytes(h.shared_bytes), glob.tobytes())
            at = OUT - SHARED_ADDR
            got = [[int.from_bytes(smem[at + 4 * (32 * i + lane):at + 4 * (32 * i + lane) + 4],
                                   "little") for i in range(count)] for lane in range(32)]
            assert got == _reference(arena, addrs, count, trans), (count, trans)


@pytest.mark.parametrize("staging", ["registers", "image"])
def test_triton_style_region_with_ldmatrix_lifts_and_compiles(tmp_path, staging):
    nvcc, clang = shutil.which("nvcc"), shutil.which("clang-19")
    assert nvcc and clang, "nvcc and clang-19 are needed"
    body = lift_region(ROOT / "recipes" / "frag_triton.py", staging)
    fn = parse(ROOT / "corpus_fixtures" / "frag" / "frag_triton.ptx").function("frag_triton")
    first, last = body.region
    inside = [st for st in fn.statements[first - 1:last] if st.base == "ldmatrix"]
    assert inside and body.text.count("rr_ldmatrix(4, false,") == len(inside)
    (tmp_path / "body.cu").write_text(body.text)
    (tmp_path / "rr_lift.h").write_text(body.header)
    if body.mma_header:
        (tmp_path / "rr_mma.h").write_text(body.mma_header)
    for cmd in ([nvcc, "-rdc=true", "-c", "-arch=sm_90", "-O3", "body.cu", "-o", "body.o"],
                [clang, "-x", "hip", "--offload-arch=gfx1201", "-nogpuinc", "-nogpulib",
                 "-fgpu-rdc", "-O0", "-c", "body.cu", "-o", "b_hip.o"]):
        res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
        assert res.returncode == 0 and "warning" not in res.stderr, res.stderr[:2000]
