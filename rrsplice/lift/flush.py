"""Which f32 registers of a lifted function can never hold a subnormal.

A `.ftz` row flushes each f32 operand before it computes (`rr_ftz(a)`: three instructions
on gfx12, more on the host), but most operands of a `.ftz` instruction are themselves the
results of `.ftz` instructions, already flushed. A register is known never subnormal when
every statement of the function that writes it leaves a value that is not subnormal (a
`.ftz` row's flushed result, an f16 widened to f32, an integer converted to f32, a normal
or zero immediate, a copy, negation or absolute value of such a register, or a result no
smaller in magnitude than such a register: `fma a, k, a` with k a non-negative constant,
as cuda_fp16's h2exp writes it, `add a, a`, `mul a, k` with |k| >= 1); its first value
(the lifted function starts every register at 0) is not subnormal either. The lowering then calls the row's
variant without that operand's flush (rrsplice.lift.semantics.without_input_flush).
Flow-insensitive on purpose: it needs no CFG, so loops and branches cannot make it unsound.
"""

from __future__ import annotations

import struct

from ..analysis.semantics import def_use
from ..ptx.model import Imm, Reg
from .semantics import ROWS

#: forms whose result is never a subnormal f32 although their row does not flush it:
#: every f16 (the smallest subnormal f16 is 2^-24, an f32 normal) and every integer is
#: an f32 normal or zero
NEVER_SUBNORMAL_FORMS = frozenset({"cvt.f32.f16", "cvt.rn.f32.s32", "cvt.rn.f32.u32"})
_COPY_FORMS = frozenset({"mov.f32", "mov.b32", "mov.u32", "mov.s32", "neg.f32", "abs.f32"})
#: forms whose result is at least as large in magnitude as one operand (rounding cannot
#: take it below a representable |a|): fma a, k, a / fma k, a, a with k >= 0; add a, a;
#: mul a, k / mul k, a with |k| >= 1
_GROWING_FORMS = frozenset({"fma.rn.f32", "add.f32", "add.rn.f32", "mul.f32", "mul.rn.f32"})


def flushes_result(form: str) -> bool:
    """True if the row of `form` returns its result through `rr_ftz`."""
    row = ROWS.get(form)
    return row is not None and row.dst == "f32" and row.portable.startswith("return rr_ftz(") \
        and row.portable.endswith(");")


def imm_f32_bits(op: Imm) -> int | None:
    """The f32 bits an immediate stands for (a hex float, an integer's low 32 bits, a
    decimal float rounded to f32), None for a double's hex `0d`."""
    text = op.text.lower()
    if text.startswith("0f") and len(text) == 10:
        return int(text[2:], 16)
    if op.kind_name == "int":
        return int(op.value) & 0xFFFFFFFF
    if op.kind_name == "float":
        return struct.unpack("<I", struct.pack("<f", float(op.value)))[0]
    return None


def is_subnormal_bits(bits: int) -> bool:
    """f32 bits of a subnormal: exponent field 0, fraction not."""
    return (bits & 0x7F800000) == 0 and (bits & 0x7FFFFF) != 0


def _imm_not_subnormal(op: Imm) -> bool:
    """An f32 immediate that is zero or normal."""
    bits = imm_f32_bits(op)
    return bits is not None and not is_subnormal_bits(bits)


def _f32_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def constant_registers(fn) -> dict:
    """Registers every write of which is a `mov` of an immediate: key -> the f32 bits
    written (the same constant set again by each copy of an inlined asm block)."""
    values: dict = {}
    for st in fn.statements:
        if st.is_label:
            continue
        du = def_use(st)
        src = st.operands[1] if st.view.base == "mov" and len(st.operands) == 2 else None
        bits = imm_f32_bits(src) if isinstance(src, Imm) and du.covered else None
        for key in du.defs:
            if values.get(key, ()) is None or bits is None or st.guard is not None:
                values[key] = None
            else:
                values[key] = values.get(key, ()) + (bits,)
    return {k: v for k, v in values.items() if v}


def _constant(op, constants: dict):
    """The values operand `op` can hold if it is a constant (an immediate, or a register
    only ever set to immediates), else None."""
    if isinstance(op, Imm):
        bits = imm_f32_bits(op)
        return None if bits is None else (_f32_value(bits),)
    if isinstance(op, Reg) and not op.special and register_key(op) in constants:
        return tuple(_f32_value(b) for b in constants[register_key(op)])
    return None


def _growing_source(st, form: str, constants: dict) -> Reg | None:
    """The register operand that the result of `st` is no smaller in magnitude than."""
    ops = st.operands
    same = lambda x, y: isinstance(x, Reg) and isinstance(y, Reg) and not x.special \
        and register_key(x) == register_key(y)                       # noqa: E731
    if form == "fma.rn.f32" and len(ops) == 4:
        for a, k in ((ops[1], ops[2]), (ops[2], ops[1])):
            vals = _constant(k, constants)
            if same(a, ops[3]) and vals and all(v >= 0 for v in vals):
                return a
    elif form.startswith("add.") and len(ops) == 3 and same(ops[1], ops[2]):
        return ops[1]
    elif form.startswith("mul.") and len(ops) == 3:
        for a, k in ((ops[1], ops[2]), (ops[2], ops[1])):
            vals = _constant(k, constants)
            if isinstance(a, Reg) and not a.special and vals and all(abs(v) >= 1 for v in vals):
                return a
    return None


def register_key(op: Reg) -> str:
    """The name def_use gives a register operand."""
    return op.ident or op.name


def _copied_from(st, form: str, constants: dict) -> tuple | None:
    """What a write by `st` leaves: () a value never subnormal, (key,) a copy of register
    `key` (or a value no smaller), None anything (a load, a parameter, a non-.ftz result)."""
    if flushes_result(form) or form in NEVER_SUBNORMAL_FORMS:
        return ()
    if form in _GROWING_FORMS:
        src = _growing_source(st, form, constants)
        return None if src is None else (register_key(src),)
    if form in _COPY_FORMS:
        src = st.operands[1]
        if isinstance(src, Reg) and not src.special:
            return (register_key(src),)
        if isinstance(src, Imm) and _imm_not_subnormal(src):
            return ()
    return None


def never_subnormal(fn) -> frozenset:
    """Keys of the registers of `fn` that no statement can leave subnormal."""
    sources: dict = {}          # key -> registers it is copied from (None: not known safe)
    constants = constant_registers(fn)
    for st in fn.statements:
        if st.is_label:
            continue
        du = def_use(st)
        form = st.view.form
        for key in du.defs:
            if sources.get(key, ()) is not None:
                copy = _copied_from(st, form, constants) if du.covered else None
                sources[key] = None if copy is None else sources.get(key, ()) + copy
    safe = {k for k, v in sources.items() if v is not None}
    changed = True
    while changed:                  # a copy of a register that is not safe is not safe
        unsafe = {k for k in safe if any(s not in safe for s in sources[k])}
        safe -= unsafe
        changed = bool(unsafe)
    return frozenset(safe)
