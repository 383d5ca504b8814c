"""Which `shfl.sync` of a function is a butterfly by a constant, across the whole warp.

`shfl.sync.bfly.b32 d, a, K, 0x1f, -1` and `shfl.sync.idx.b32 d, a, %s, 0x1f, -1` where
`%s` is the lane's own index XOR a constant (`mov.u32 %l, %laneid; xor.b32 %s, %l, K`: how
nvcc writes a pairwise exchange) both give every lane the value of lane `lane ^ (K & 31)`,
always in range (PTX ISA 9.7.9.6: with clamp 31 and no segment mask, maxLane is 31). On
gfx12 that is one DPP move (row_xmask, K < 16) or one v_permlanex16 (K >= 16), where the
general shuffle is an LDS permute, its address and a wait (rrsplice.lift.header:
rr_lane_xor_K). Only the data path changes: the bits each lane receives are the same.

A register holds `laneid ^ K` for the whole function when every write of it is that `xor`,
unguarded, of a register every write of which is an unguarded `mov` of `%laneid`: then
whichever path reaches the shuffle, the value is that. Anything else (a second write of
another form, a guard, an opcode the def/use table does not know) leaves it out.
"""

from __future__ import annotations

from ..analysis.semantics import def_use
from ..ptx.model import Imm, Reg

#: the full-warp clamp value: c = 0x1f (clamp 31, no segment mask)
FULL_WARP_C = 0x1F
FULL_MASK = 0xFFFFFFFF


def _writes(fn) -> dict:
    """register key -> the statements that write it"""
    out: dict = {}
    for st in fn.statements:
        if not st.is_label:
            for key in def_use(st).defs:
                out.setdefault(key, []).append(st)
    return out


def _is_laneid_mov(st) -> bool:
    ops = st.operands
    return (st.guard is None and st.view.base == "mov" and len(ops) == 2
            and isinstance(ops[1], Reg) and ops[1].special and ops[1].name == "%laneid")


def _xor_constant(st, is_lane) -> int | None:
    """K when `st` is an unguarded 32-bit `xor d, lane, K` (either order), else None."""
    ops = st.operands
    if st.guard is not None or st.view.base != "xor" or len(ops) != 3 \
            or st.view.type is None or st.view.type.bits != 32:
        return None
    for x, k in ((ops[1], ops[2]), (ops[2], ops[1])):
        if isinstance(k, Imm) and isinstance(k.value, int) and isinstance(x, Reg) \
                and not x.special and is_lane(x.key):
            return k.value & 0xFFFFFFFF
    return None


def lane_xor_registers(fn) -> dict:
    """register key -> K for the registers of `fn` that always hold `laneid ^ K`
    (`laneid` itself is K = 0)."""
    writes = _writes(fn)

    def is_lane(key: str) -> bool:
        sts = writes.get(key, [])
        return bool(sts) and all(_is_laneid_mov(st) for st in sts)

    out: dict = {}
    for key, sts in writes.items():
        if is_lane(key):
            out[key] = 0
            continue
        ks = {_xor_constant(st, is_lane) for st in sts}
        k = ks.pop() if len(ks) == 1 else None
        if k is not None:
            out[key] = k
    return out


def _int(op) -> int | None:
    return op.value & 0xFFFFFFFF if isinstance(op, Imm) and isinstance(op.value, int) else None


def butterfly_distance(mode: str, b, c, mask, lane_xor: dict) -> int | None:
    """The K (0..31) every lane's source is `lane ^ K` by, for a `shfl.sync` of `mode`
    with operands b, c, membermask, when that holds for the whole warp; else None."""
    c_bits, b_bits = _int(c), _int(b)
    if c_bits is None or c_bits & 0x1F1F != FULL_WARP_C or _int(mask) != FULL_MASK:
        return None
    if mode == "bfly" and b_bits is not None:
        return b_bits & 31
    if mode == "idx" and isinstance(b, Reg) and not b.special and b.key in lane_xor:
        return lane_xor[b.key] & 31
    return None
