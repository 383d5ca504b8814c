"""Resident blocks per SM from a kernel's resources, per architecture.

Used to state what a recipe's own `.shared` scratch array costs: the shared memory per block
comes from `ptxas -v`, the limits below are NVIDIA's published per-SM limits (compute
capability tables). Registers are not considered here: the scratch array does not change
them, and `-O0` register counts would not be meaningful.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ptx.model import Function

# arch -> (shared bytes per SM usable by blocks, bytes the system reserves per block,
#          max threads per SM, max resident blocks per SM)
LIMITS = {
    "sm_80": (164 * 1024, 1024, 2048, 32),
    "sm_86": (100 * 1024, 1024, 1536, 16),
    "sm_89": (100 * 1024, 1024, 1536, 24),
    "sm_90": (228 * 1024, 1024, 2048, 32),
    "sm_120": (100 * 1024, 1024, 1536, 32),
}
# arch -> the most shared memory (static + dynamic) one block may use after the opt-in
# (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability": 163 KB on
# 8.0, 99 KB on 8.6/8.9/12.0, 227 KB on 9.0)
MAX_PER_BLOCK = {"sm_80": 163 * 1024, "sm_86": 99 * 1024, "sm_89": 99 * 1024,
                 "sm_90": 227 * 1024, "sm_120": 99 * 1024}
# without the opt-in a block may use 48 KiB (static + dynamic): the default of
# cudaFuncAttributeMaxDynamicSharedMemorySize is 48 KiB minus the static size, and static
# `.shared` arrays alone may never exceed it
DEFAULT_PER_BLOCK = 48 * 1024


@dataclass
class Occupancy:
    arch: str
    shared: int               # bytes per block (ptxas -v "bytes smem")
    threads: int              # threads per block
    blocks: int               # resident blocks per SM
    limited_by: str           # "shared memory" | "threads" | "blocks"

    def to_json(self) -> dict:
        return {"arch": self.arch, "shared": self.shared, "threads": self.threads,
                "blocks_per_sm": self.blocks, "limited_by": self.limited_by}


def blocks_per_sm(arch: str, shared: int, threads: int) -> Occupancy | None:
    """Resident blocks per SM of a kernel using `shared` bytes and `threads` threads per
    block on `arch`; None for an arch without a table entry."""
    arch = base_arch(arch)
    if arch not in LIMITS:
        return None
    smem, reserved, max_threads, max_blocks = LIMITS[arch]
    warps = (threads + 31) // 32
    by = {"blocks": max_blocks,
          "threads": max_threads // (warps * 32) if warps else max_blocks,
          "shared memory": smem // (shared + reserved)}
    limit = min(by, key=lambda k: (by[k], k))
    return Occupancy(arch, shared, threads, by[limit], limit)


def base_arch(arch: str) -> str:
    """`sm_90a` -> `sm_90`: the limits do not depend on the feature suffix."""
    return arch.rstrip("af") if arch[-1:] in ("a", "f") else arch


def shared_limits(arch: str, static: int, dynamic: int) -> dict:
    """What a block with `static` bytes of `.shared` arrays and `dynamic` bytes of dynamic
    shared memory needs from the launch on `arch`: `total`, `opt_in` (True when the total
    is over the 48 KiB default, so the host must call cudaFuncSetAttribute(kernel,
    cudaFuncAttributeMaxDynamicSharedMemorySize, dynamic) before launching), and `fits`
    (False when it exceeds the arch's per-block maximum; None when unknown)."""
    total = static + dynamic
    top = MAX_PER_BLOCK.get(base_arch(arch))
    return {"total": total, "opt_in": total > DEFAULT_PER_BLOCK, "max_per_block": top,
            "fits": None if top is None else total <= top}


def block_threads(fn: Function) -> int | None:
    """Threads per block from `.maxntid`/`.reqntid` (None when the entry does not say)."""
    for d, v in fn.perf:
        if d in (".maxntid", ".reqntid"):
            nums = [int(x) for x in re.findall(r"\d+", str(v))]
            if nums:
                n = 1
                for x in nums:
                    n *= x
                return n
    return None
