"""The region's rewrites as statement rules (rrsplice.rewrite): what a `.func` cannot see
of the entry it was cut from.

* a read of a kernel parameter becomes a copy of the passed register that holds the same
  value (:func:`~rrsplice.outline.recompute._rewrite_param_read`), or is refused;
* a `.shared` array of the entry becomes the passed register holding its address, widened
  to 64 bits where the statement uses it as a 64-bit value;
* the entry's parameters' addresses, unpassed `.shared` arrays, module-scope symbols the
  body module cannot share and the entry's `.local`/`.param` variables are refused.

They run in one :class:`~rrsplice.rewrite.rules.FirstMatch`, in statement order, before
the recipe's own rules, through the same planner and span applier as `apply`.
"""

from __future__ import annotations

import re

from ..ptx.emit import apply_spans
from ..ptx.model import Address, Function, Statement, Symbol
from ..rewrite.rules import FirstMatch, Replacement, RewritePlan, StatementRule
from .common import OutlineError, _symbols, _type_width
from .context import OutlineContext
from .recompute import _rewrite_param_read


class KernelParamRead(StatementRule):
    """`ld.param` naming one of the entry's parameters."""

    name = "outline.kernel_param"

    def __init__(self, ctx: OutlineContext):
        self.ctx = ctx
        self.kernel_params = {p.name for p in ctx.fn.params}

    def matches(self, st: Statement) -> bool:
        return st.base == "ld" and "param" in st.modifiers \
            and bool(_symbols(st) & self.kernel_params)

    def rewrite(self, fn: Function, st: Statement, plan: RewritePlan) -> None:
        c = self.ctx
        text = _rewrite_param_read(st, fn, c.rng, c.site, c.reach(), c.values.snapshot,
                                   c.values.width_of)
        plan.replacements.append(Replacement(self.name, st, text, fn))


class EntrySymbols(StatementRule):
    """Any other statement naming a symbol: `.shared` arrays renamed to the passed
    registers, symbols the body can see (labels, the callee, initialised module
    constants) kept, the rest refused."""

    name = "outline.shared_symbol"

    def __init__(self, ctx: OutlineContext):
        fn, module = ctx.fn, ctx.module
        self.ctx = ctx
        self.kernel_params = {p.name for p in fn.params}
        self.shared_syms = {d.name: d for d in fn.decls() if d.space == ".shared"}
        self.shared_syms.update({d.name: d for d in module.decls if d.space == ".shared"})
        self.module_syms = {d.name: d for d in module.decls}
        self.local_syms = {d.name: d for d in fn.decls() if d.space in (".local", ".param")}

    def matches(self, st: Statement) -> bool:
        return bool(_symbols(st))

    def rewrite(self, fn: Function, st: Statement, plan: RewritePlan) -> None:
        parts = []
        for sym in sorted(_symbols(st)):
            if sym in self.kernel_params:
                raise OutlineError(f"{st.sid} (line {st.line}) takes the address of kernel "
                                   f"parameter {sym} ({st.text.strip()!r}): a .func cannot "
                                   f"see the entry's parameters; pass the value instead")
            if sym in self.shared_syms:
                parts += self._shared(st, sym)
                continue
            if fn.label_statement(sym) is not None or sym == self.ctx.site.callee:
                continue
            if sym in self.module_syms:
                d = self.module_syms[sym]
                if d.space in (".const", ".global") and d.init is not None:
                    continue      # copied into the body module
                raise OutlineError(f"{st.sid} (line {st.line}) uses module-scope {d.space} "
                                   f"{sym}, which the body module cannot share; pass its "
                                   f"address")
            if sym in self.local_syms:
                raise OutlineError(f"{st.sid} (line {st.line}) uses the entry's "
                                   f"{self.local_syms[sym].space} {sym}, which a .func cannot "
                                   f"see")
        if parts:
            text = apply_spans(st.text, [(a - st.start, b - st.start, t) for a, b, t in parts])
            plan.replacements.append(Replacement(self.name, st, text, fn, parts=tuple(parts)))

    def _shared(self, st: Statement, sym: str) -> list:
        """The spans renaming `.shared` array `sym` in `st` to the register holding it."""
        if sym not in self.ctx.values.sym_regs:
            raise OutlineError(
                f"{st.sid} (line {st.line}) uses the .shared array {sym}, which a "
                f"separate .func cannot name; the call must pass its address "
                f"(`mov.u32 %x, {sym};` then `st.param.b32 [pN+0], %x;`)")
        width = 64 if (_type_width(st) == 64 and not _in_address(st, sym)) else 32
        rep = self.ctx.values.symbol_base(sym, width)
        return [(st.start + m.start(), st.start + m.end(), rep)
                for m in re.finditer(r"(?<![\w$%])" + re.escape(sym) + r"(?![\w$])", st.text)]


def region_rules(ctx: OutlineContext) -> FirstMatch:
    """The outliner's own rules, one statement at a time in program order (the values they
    take before the region are named in that order)."""
    return FirstMatch(KernelParamRead(ctx), EntrySymbols(ctx))


def _in_address(st: Statement, sym: str) -> bool:
    """`sym` is the base of an address operand `[sym+off]` (a 32-bit shared address)."""
    for op in st.operands:
        if isinstance(op, Address) and isinstance(op.base, Symbol) and op.base.name == sym:
            return True
    return False
