"""Register types: each PTX register's operand class (u16/u32/u64/f32/f64/pred, by its
declaration, rrsplice.ptx.isa.TYPES) and the C conversions between classes (bit casts, never
value conversions: a PTX register is its bits)."""

from __future__ import annotations

from ..ptx.isa import TYPES, ptx_type
from ..ptx.scopes import source_name


def class_of(ptx: str | None) -> str | None:
    """`.b32` -> u32, `.f32` -> f32, `.pred` -> pred, `.f16` -> u16 (its bits), ..."""
    t = ptx_type(ptx)
    if t is None:
        return None
    if t.kind == "pred":
        return "pred"
    if t.kind == "float" and t.lanes == 1 and t.bits == 32 and t.name == "f32":
        return "f32"
    if t.name == "f64":
        return "f64"
    return {8: "u16", 16: "u16", 32: "u32", 64: "u64"}.get(t.bits)


class RegTypes:
    """Operand class of every register a function declares (ranges and scoped names)."""

    def __init__(self, fn):
        self.exact: dict = {}
        self.ranges: list = []
        for d in fn.decls():
            if d.space != ".reg":
                continue
            cls = class_of(d.type)
            if d.vector:
                cls = None          # vector registers (`.v4 .b32`) are not lifted
            if d.count is None:
                self.exact.setdefault(d.name, cls)
            else:
                self.ranges.append((d, cls))

    def cls(self, reg) -> str | None:
        name = source_name(reg.key) if "@" in reg.key else reg.name
        if name in self.exact:
            return self.exact[name]
        for d, cls in self.ranges:
            if d.declares(name):
                return cls
        return None


_UINT = {8: "rr_u8", 16: "rr_u16", 32: "rr_u32", 64: "rr_u64"}


def convert(expr: str, frm: str, to: str) -> str:
    """`expr` of class `frm` as class `to`: a bit cast (f32 <-> u32, f64 <-> u64), a
    zero extension or truncation between integer widths, a predicate as 0/1."""
    if frm == to:
        return expr
    if to == "pred":
        return f"({expr} != 0)"
    if frm == "pred":
        return f"({_UINT[TYPES[to].bits]})({expr} ? 1 : 0)" if to not in ("f32", "f64") \
            else f"rr_float({expr} ? 1u : 0u)"
    if frm == "f32":
        expr, frm = f"rr_bits({expr})", "u32"
    elif frm == "f64":
        expr, frm = f"rr_bits64({expr})", "u64"
    if to == "f32":
        return f"rr_float(({_UINT[32]}){expr})" if frm != "u32" else f"rr_float({expr})"
    if to == "f64":
        return f"rr_double(({_UINT[64]}){expr})"
    if frm == to:
        return expr
    return f"({_UINT[TYPES[to].bits]})({expr})"
