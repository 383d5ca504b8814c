"""Which f32 registers of a lifted function can never hold a subnormal.

A `.ftz` row flushes each f32 operand before it computes (`rr_ftz(a)`: three instructions
on gfx12, more on the host), but most operands of a `.ftz` instruction are themselves the
results of `.ftz` instructions, already flushed. A register is known never subnormal when
every statement of the function that writes it leaves a value that is not subnormal (a
`.ftz` row's flushed result, an f16 widened to f32, an integer converted to f32, a normal
or zero immediate, or a copy of such a register); its first value (the lifted function
starts every register at 0) is not subnormal either. The lowering then calls the row's
variant without that operand's flush (rrsplice.lift.semantics.without_input_flush).
Flow-insensitive on purpose: it needs no CFG, so loops and branches cannot make it unsound.
"""

from __future__ import annotations

from ..analysis.semantics import def_use
from ..ptx.model import Imm, Reg
from .semantics import ROWS

#: forms whose result is never a subnormal f32 although their row does not flush it:
#: every f16 (the smallest subnormal f16 is 2^-24, an f32 normal) and every integer is
#: an f32 normal or zero
NEVER_SUBNORMAL_FORMS = frozenset({"cvt.f32.f16", "cvt.rn.f32.s32", "cvt.rn.f32.u32"})
_COPY_FORMS = frozenset({"mov.f32"})


def flushes_result(form: str) -> bool:
    """True if the row of `form` returns its result through `rr_ftz`."""
    row = ROWS.get(form)
    return row is not None and row.dst == "f32" and row.portable.startswith("return rr_ftz(") \
        and row.portable.endswith(");")


def _imm_not_subnormal(op: Imm) -> bool:
    """An f32 immediate that is zero or normal (a hex float's bits, or a plain zero)."""
    text = op.text.lower()
    if text.startswith("0f") and len(text) == 10:
        bits = int(text[2:], 16)
        return (bits & 0x7F800000) != 0 or (bits & 0x7FFFFF) == 0
    return op.value == 0


def register_key(op: Reg) -> str:
    """The name def_use gives a register operand."""
    return op.ident or op.name


def _copied_from(st, form: str) -> tuple | None:
    """What a write by `st` leaves: () a value never subnormal, (key,) a copy of register
    `key`, None anything (a load, a parameter, a non-.ftz result)."""
    if flushes_result(form) or form in NEVER_SUBNORMAL_FORMS:
        return ()
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
    for st in fn.statements:
        if st.is_label:
            continue
        du = def_use(st)
        form = st.view.form
        for key in du.defs:
            if sources.get(key, ()) is not None:
                copy = _copied_from(st, form) if du.covered else None
                sources[key] = None if copy is None else sources.get(key, ()) + copy
    safe = {k for k, v in sources.items() if v is not None}
    changed = True
    while changed:                  # a copy of a register that is not safe is not safe
        unsafe = {k for k in safe if any(s not in safe for s in sources[k])}
        safe -= unsafe
        changed = bool(unsafe)
    return frozenset(safe)
