"""Resident blocks per SM from a kernel's resources, per architecture.

Used to state what a recipe's own `.shared` scratch array costs: the shared memory per block
comes from `ptxas -v`, the limits below are NVIDIA's published per-SM limits (compute
capability tables). Registers are not considered here: the scratch array does not change
them, and `-O0` register counts would not be meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# arch -> (shared bytes per SM usable by blocks, bytes the system reserves per block,
#          max threads per SM, max resident blocks per SM)
LIMITS = {
    "sm_89": (100 * 1024, 1024, 1536, 24),
    "sm_90": (228 * 1024, 1024, 2048, 32),
    "sm_120": (100 * 1024, 1024, 1536, 32),
}


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


def blocks_per_sm(arch: str, shared: int, threads: int) -> Optional[Occupancy]:
    """Resident blocks per SM of a kernel using `shared` bytes and `threads` threads per
    block on `arch`; None for an arch without a table entry."""
    if arch not in LIMITS:
        return None
    smem, reserved, max_threads, max_blocks = LIMITS[arch]
    warps = (threads + 31) // 32
    by = {"blocks": max_blocks,
          "threads": max_threads // (warps * 32) if warps else max_blocks,
          "shared memory": smem // (shared + reserved)}
    limit = min(by, key=lambda k: (by[k], k))
    return Occupancy(arch, shared, threads, by[limit], limit)
