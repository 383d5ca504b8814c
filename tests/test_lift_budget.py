"""What keeps a whole-region body cheap to compile (issue 21/22 budgets), checked on the
compilers' own output rather than by timing: on HIP the building blocks with branches stay
out of line (one copy, one call per use) and the inlined helpers add no blocks to the
body's function (the AMDGPU inliner walks the caller's blocks at every remaining call, so
blocks times calls is its cost); the body's definition is compiled in the device pass only,
with its declaration still visible to a kernel in the same file (nvcc's host pass)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from conftest import ROOT

from rrsplice.lift import lift_region

pytestmark = pytest.mark.slow          # clang-19, opt-19, nvcc on a 2,300-statement region

TINY = ROOT / "recipes" / "swin_tiny_sm89.py"
HIP = ["-x", "hip", "--offload-arch=gfx1201", "--cuda-device-only", "-nogpulib", "-nogpuinc",
       "-fgpu-rdc", "-O2"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny")
    body = lift_region(TINY, "registers")
    (d / "body.cu").write_text(body.text)
    (d / "rr_lift.h").write_text(body.header)
    return d, body


def _tool(name):
    exe = shutil.which(name)
    assert exe, f"{name} is needed"
    return exe


def _region_mma(body) -> int:
    """mma statements of the cut, counted in the outlined callee's PTX."""
    return len(re.findall(rb"^\s*mma\.sync\.aligned\.", body.outlined_ptx, re.M))


def test_hip_mma_fallback_is_one_function_called_once_per_mma(tiny):
    d, body = tiny
    ll = subprocess.run([_tool("clang-19"), *HIP, "-emit-llvm", "-S", "body.cu", "-o", "-"],
                        cwd=d, check=True, capture_output=True, text=True).stdout
    defs = re.findall(r"^define [^@]*@(\w*rr_mma_m16n8k32_f16_e4m3\w*)\(", ll, re.M)
    assert len(defs) == 1, "the fallback is one out-of-line function"
    calls = len(re.findall(rf"call [^@]*@{defs[0]}\(", ll))
    n = _region_mma(body)
    assert n == 162 and calls == n, (n, calls)


def test_hip_inlined_helpers_add_no_blocks_to_the_body(tiny):
    d, body = tiny
    subprocess.run([_tool("clang-19"), *HIP, "-Xclang", "-disable-llvm-passes", "-emit-llvm",
                    "-c", "body.cu", "-o", "raw.bc"], cwd=d, check=True, capture_output=True)
    ll = subprocess.run([_tool("opt-19"), "-passes=always-inline", "-S", "raw.bc", "-o", "-"],
                        cwd=d, check=True, capture_output=True, text=True).stdout
    fn = ll[ll.index(f"@{body.callee}("):]
    fn = fn[:fn.index("\n}\n")]
    blocks = len(re.findall(r"^[\w.]+:", fn, re.M)) + 1
    statements = body.region[1] - body.region[0] + 1
    # the region has no branch; what blocks there are come from the few helpers that keep
    # a guard (shfl's optional predicate, a shift's range check)
    assert blocks < statements // 10, (blocks, statements)


def test_a_kernel_in_the_same_file_calls_the_body_under_nvcc(tiny, tmp_path):
    d, body = tiny
    (tmp_path / "rr_lift.h").write_text(body.header)
    (tmp_path / "body.cu").write_text(body.text)
    proto = body.text[body.text.index('extern "C" __device__'):]
    proto = proto[:proto.index(")") + 1]
    nargs = proto.count("rr_u32 ") + proto.count("rr_u64 ")
    args = ", ".join(f"p[{i}]" for i in range(nargs))
    (tmp_path / "k.cu").write_text('#include "body.cu"\n'
                                   f"__global__ void k(const unsigned *p) {{ {body.callee}("
                                   f"{args}); }}\n")
    r = subprocess.run([_tool("nvcc"), "-O3", "-arch=sm_89", "-rdc=true", "-c", "k.cu", "-o",
                        "k.o"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]


def _global_loads(ptx: str) -> dict:
    """`ld.global[.nc][.vN].T` statements of a PTX text, counted by (non-coherent, bytes
    per access): the width and path of each access, whatever registers it names (a
    `.v2.u32` and a `.u64` are the same 8-byte access)."""
    found: dict = {}
    for nc, vec, bits in re.findall(r"^\s*(?:@!?%\w+\s+)?ld\.global(\.nc)?(?:\.L1::\w+|\.L2::\w+)*"
                                    r"(?:\.v(\d))?\.[bsuf](\d+)\s", ptx, re.M):
        key = (bool(nc), int(vec or 1) * int(bits) // 8)
        found[key] = found.get(key, 0) + 1
    return found


def test_cuda_body_keeps_each_global_load_one_access_on_its_path(tiny):
    """Each `ld.global.nc.v4.u32` of the region stays one 16-byte non-coherent global load in
    the body nvcc compiles (not four generic loads): a generic `ld` of read-only data costs
    the registers body its kernel time on the H200 (docs/benchmarks.md)."""
    d, body = tiny
    region = _global_loads(body.outlined_ptx.decode())
    assert region and sum(region.values()) > 50, region
    ptx = subprocess.run([_tool("nvcc"), "-O3", "-arch=sm_90", "-rdc=true", "-ptx", "body.cu",
                          "-o", "-"], cwd=d, check=True, capture_output=True, text=True).stdout
    fn = ptx[ptx.index(f".func {body.callee}("):]
    assert _global_loads(fn) == region
    generic = re.findall(r"^\s*(?:@!?%\w+\s+)?ld(?:\.v\d)?\.[bsuf]\d+\s", fn, re.M)
    assert not generic, generic[:3]


def test_hip_body_loads_global_memory_through_the_global_address_space(tiny):
    d, body = tiny
    region = _global_loads(body.outlined_ptx.decode())
    ll = subprocess.run([_tool("clang-19"), *HIP, "-emit-llvm", "-S", "body.cu", "-o", "-"],
                        cwd=d, check=True, capture_output=True, text=True).stdout
    fn = ll[ll.index(f"@{body.callee}("):]
    fn = fn[:fn.index("\n}\n")]
    loads = re.findall(r"= load (<\d+ x i32>|i32|i64|float), ptr addrspace\((\d)\)", fn)
    widths = {"i32": 4, "float": 4, "i64": 8}
    got: dict = {}
    for ty, space in loads:
        if space == "1":
            n = widths.get(ty) or 4 * int(re.match(r"<(\d+)", ty).group(1))
            got[n] = got.get(n, 0) + 1
    want: dict = {}
    for (_, n), count in region.items():
        want[n] = want.get(n, 0) + count
    assert got == want, (got, want)
