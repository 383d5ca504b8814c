"""What rules ask of operands: a register's declared size, constant values."""

from __future__ import annotations

from ..ptx.isa import type_bytes
from ..ptx.model import Function, Imm, Reg
from ..ptx.scopes import register_decl


def reg_size(fn: Function, reg: Reg) -> int | None:
    """Bytes of the register's declared type (None: undeclared or special)."""
    if reg.special:
        return 4 if not reg.name.startswith(("%clock64", "%globaltimer")) else 8
    d = register_decl(fn, reg.name)
    if d is None or not d.type:
        return None
    return type_bytes(d.type)


def fits(fn: Function, op, size: int) -> bool:
    """`op` is a register of `size` bytes, or an integer immediate."""
    if isinstance(op, Reg):
        return reg_size(fn, op) == size
    return isinstance(op, Imm)


HALF = 0x3F000000        # 0.5f


def float_bits(op) -> int | None:
    """The f32 bit pattern of an immediate operand (`0f3F000000`, `0.5`), else None."""
    if not isinstance(op, Imm):
        return None
    if op.kind_name == "hexfloat" and op.text[:2].lower() == "0f":
        return int(op.text[2:], 16)
    if op.kind_name == "float":
        import struct
        return struct.unpack("<I", struct.pack("<f", float(op.value)))[0]
    return None
