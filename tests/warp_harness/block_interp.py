"""One block of PTX threads in lockstep, on the reference interpreter (tests/ptx_interp.py):
each statement runs for every thread before the next; warp-collective statements (`mma`)
run once per warp from all 32 lanes' registers; `call` is handed to the caller (the warp
harness runs the native body there).

The mma semantics are written here from the PTX ISA, independently of rrsplice and of the
generated headers: fragment placement from "Matrix Fragments for mma.m16n8k32" (PTX ISA
9.7.14.5.10, 8-bit A/B, f16 C/D), arithmetic the exact model (every product and their sum
with C exact, one round-to-nearest-even to f16, NaN as 0x7fff: scripts/mma_probe/models.py,
the H200's measured behaviour in docs/proof.md). Straight-line code only: a branch raises
Unsupported.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from ptx_interp import Machine, Unsupported, _execute

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "mma_probe"))
import models

F16_NAN = 0x7FFF
_L = np.arange(32)
_G, _T = _L >> 2, _L & 3
# [lane, reg, element] -> (row, k) of A; (k, n) of B; (row, n) of C/D, m16n8k32 8-bit
A_ROW = np.array([[[g + 8 * (j & 1)] * 4 for j in range(4)] for g in _G])
A_COL = np.array([[[4 * t + e + 16 * (j >> 1) for e in range(4)] for j in range(4)]
                  for t in _T])
B_ROW = np.array([[[4 * t + e + 16 * j for e in range(4)] for j in range(2)] for t in _T])
B_COL = np.array([[[g] * 4 for _ in range(2)] for g in _G])
C_ROW = np.array([[[g + 8 * j] * 2 for j in range(2)] for g in _G])
C_COL = np.array([[[2 * t + e for e in range(2)] for _ in range(2)] for t in _T])


def _regs(group, vec) -> np.ndarray:
    """[lane, reg] uint64 values of the registers of vector operand `vec`."""
    return np.array([[m.value(r, 32) for r in vec.items] for m in group], dtype=np.uint64)


def mma_m16n8k32_e4m3_f16(st, group) -> None:
    d, a, b, c = st.operands
    av, bv, cv = _regs(group, a), _regs(group, b), _regs(group, c)
    A = np.zeros((16, 32), np.uint8)
    B = np.zeros((32, 8), np.uint8)
    C = np.zeros((16, 8), np.uint16)
    shift8 = np.arange(4, dtype=np.uint64) * 8
    A[A_ROW, A_COL] = (av[:, :, None] >> shift8) & 0xFF
    B[B_ROW, B_COL] = (bv[:, :, None] >> shift8) & 0xFF
    C[C_ROW, C_COL] = (cv[:, :, None] >> (np.arange(2, dtype=np.uint64) * 16)) & 0xFFFF
    out = models.model(models.products(A[None], B[None]),
                       C[None].view(np.float16).astype(np.float64))[0]
    with np.errstate(invalid="ignore", over="ignore"):
        bits = out.astype(np.float16).view(np.uint16).astype(np.uint64)
    bits[np.isnan(out)] = F16_NAN
    dv = bits[C_ROW, C_COL]                                  # [lane, reg, half]
    vals = dv[:, :, 0] | (dv[:, :, 1] << 16)
    for lane, m in enumerate(group):
        for j, r in enumerate(d.items):
            m.write(r, int(vals[lane, j]), 32)


# (opcode modifiers after sync.aligned) -> warp-collective handler
MMA = {("m16n8k32", "row", "col", "f16", "e4m3", "e4m3", "f16"): mma_m16n8k32_e4m3_f16}
NOOP = {"bar", "barrier"}          # in lockstep every thread is already at the barrier


def run_block(stmts, machines, on_call=None) -> None:
    """Run `stmts` (straight-line) for every machine of the block, in thread order."""
    if len(machines) % 32:
        raise ValueError("whole warps only")
    for st in stmts:
        if st.is_label:
            continue
        base = st.base
        if base in ("bra", "ret", "exit", "brx"):
            raise Unsupported(f"line {st.line}: {st.text.strip()} (straight-line code only)")
        if base in NOOP:
            continue
        if base == "call":
            if on_call is None:
                raise Unsupported(f"line {st.line}: a call and no body to run")
            on_call(st, machines)
            continue
        if base == "mma":
            key = tuple(x for x in st.modifiers if x not in ("sync", "aligned"))
            if key not in MMA:
                raise Unsupported(f"line {st.line}: {st.text.strip()}")
            if st.guard is not None:
                raise Unsupported(f"line {st.line}: a guarded mma")
            for w in range(0, len(machines), 32):
                MMA[key](st, machines[w:w + 32])
            continue
        for m in machines:
            if st.guard is not None and m.pred(st.guard.reg) == st.guard.negated:
                continue
            _execute(st, base, st.modifiers, st.operands, m)


def block_machines(block, regs_per_thread, shared: dict, symbols: dict) -> list:
    """A Machine per thread of `block` (x, y, z): its special registers, its own registers
    (a copy of `regs_per_thread[i]`), and the block's one shared-memory dict."""
    bx, by, bz = block
    out = []
    for i in range(bx * by * bz):
        m = Machine()
        m.regs = dict(regs_per_thread[i])
        m.mem["shared"] = shared
        m.symbols = dict(symbols)
        x, y, z = i % bx, (i // bx) % by, i // (bx * by)
        m.special = {"%tid.x": x, "%tid.y": y, "%tid.z": z, "%ntid.x": bx, "%ntid.y": by,
                     "%ntid.z": bz, "%laneid": i & 31, "%warpid": i >> 5}
        out.append(m)
    return out
