"""Whether a lifted HIP body can flush f32 subnormals through the hardware's mode register
rather than in software, and which statements still flush in software if it does.

ZLUDA runs a `.ftz` f32 instruction with the MODE register's f32 denormal field set to
flush (vosen/ZLUDA ptx/src/pass/instruction_mode_to_global_mode, emitted by emit_set_mode
in ptx/src/pass/llvm/emit.rs as `llvm.amdgcn.s.setreg` of MODE bits 4-7), and every other
f32 instruction with it set to preserve. A body whose f32 instructions are all `.ftz`, or
cannot tell the two modes apart, can therefore set the field once on entry and restore it
on exit: its `.ftz` rows then compute with the same instruction in the same mode as the
translated kernel, and the three-instruction software flush (`rr_ftz`) disappears.

An f32 statement that is not `.ftz` cannot tell the modes apart when its form is a bit
operation or a conversion whose result is the same either way (MODE_FREE), or when every
f32 operand and its f32 result are registers that never hold a subnormal
(rrsplice.lift.flush); any other one keeps the whole body on the software flush, as does a
call (the callee would inherit the mode). A `.ftz` statement with an immediate operand
that the compiler may fold away without computing (x*1, x+-0, ...), or a subnormal one,
keeps its software flush inside a mode body: a folded operation would not flush.
"""

from __future__ import annotations

from ..ptx.model import Imm, Reg
from .flush import imm_f32_bits, is_subnormal_bits, register_key
from .semantics import ROWS, row_form

#: f32 forms that are not `.ftz` and give the same bits whatever the f32 denormal mode:
#: bit operations, conversions whose f32 subnormal inputs round to zero either way
#: (every f32 subnormal is below half the smallest f16 or e4m3 subnormal, and rounds to
#: the integer 0 to nearest or toward zero) or whose results are never f32 subnormals
MODE_FREE = frozenset({
    "neg.f32", "abs.f32", "selp.f32", "selp.b32", "cvt.f32.f16", "cvt.rn.f16.f32",
    "cvt.rz.f16.f32", "cvt.rn.f16x2.f32", "cvt.rz.f16x2.f32", "cvt.rn.satfinite.e4m3x2.f32",
    "cvt.rn.f32.s32", "cvt.rn.f32.u32", "cvt.rni.s32.f32", "cvt.rzi.s32.f32",
})
_ZEROS, _ONES, _INFS = {0x00000000, 0x80000000}, {0x3F800000, 0xBF800000}, {0x7F800000, 0xFF800000}
#: per opcode, the immediates a compiler may fold the operation away with (x + -0 -> x,
#: x * 1 -> x, x * -1 -> -x, x / 1 -> x, max(x, -inf) -> x; a NaN for min/max too)
_FOLDABLE = {"add": _ZEROS, "sub": _ZEROS, "mul": _ONES, "div": _ONES,
             "max": _INFS, "min": _INFS}


def _is_ftz(form: str) -> bool:
    return ".ftz." in form and form.endswith(".f32")


def _touches_f32(row) -> bool:
    return row.dst == "f32" or "f32" in row.srcs


def _operands_safe(st, row, safe: frozenset) -> bool:
    """Every f32 operand of `st` (result included) is a register that is never subnormal
    or an immediate that is not."""
    for op, cls in zip(st.operands, (row.dst,) + row.srcs, strict=False):
        if cls != "f32":
            continue
        if isinstance(op, Reg):
            if op.special or register_key(op) not in safe:
                return False
        elif isinstance(op, Imm):
            bits = imm_f32_bits(op)
            if bits is None or is_subnormal_bits(bits):
                return False
        else:
            return False
    return True


def mode_blockers(fn, safe: frozenset) -> list:
    """The statements of `fn` that could tell a flushing mode from a preserving one (empty:
    the body may set the mode), given the registers `safe` that never hold a subnormal."""
    out = []
    for st in fn.statements:
        if st.is_label:
            continue
        if st.view.base == "call":
            out.append(st)
            continue
        form = row_form(st.view)
        row = ROWS.get(form)
        if row is None or not _touches_f32(row) or _is_ftz(form) or form in MODE_FREE:
            continue
        if not _operands_safe(st, row, safe):
            out.append(st)
    return out


def uses_ftz(fn) -> bool:
    """True if `fn` has a `.ftz` f32 statement (else the mode would change nothing)."""
    return any(not st.is_label and _is_ftz(st.view.form) for st in fn.statements)


def keeps_software_flush(st, constants: dict) -> bool:
    """A `.ftz` statement that flushes in software even in a mode body: an immediate (or a
    register only ever set to one) that is subnormal or lets the compiler fold the
    operation away."""
    for op in st.operands[1:]:
        if isinstance(op, Imm):
            bits = imm_f32_bits(op)
            values = None if bits is None else (bits,)
        elif isinstance(op, Reg) and not op.special and register_key(op) in constants:
            values = constants[register_key(op)]
        else:
            continue
        if values is None:
            return True
        folds = _FOLDABLE.get(st.view.base, ())
        for bits in values:
            subnormal = is_subnormal_bits(bits)
            nan = (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF
            if bits in folds or subnormal or (nan and st.view.base in ("max", "min")):
                return True
    return False
