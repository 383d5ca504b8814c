"""The values the body takes before its copy of the region runs: private copies of passed
registers the region may overwrite, and passed `.shared` addresses widened to 64 bits.

The region rewrites, the read-back stores and the kernel-parameter reads all ask for them
here, so each is taken once, under a fresh name, in the order first asked for (the body's
text depends on that order)."""

from __future__ import annotations

from ..ptx.model import Function
from ..ptx.scopes import source_name
from .callsite import CallSite, _kernel_side
from .common import _WIDTH, OutlineError, _Names, _reg_types


class BodyValues:
    """Fresh names, register widths and the prologue lines (`lines`) that take the values."""

    def __init__(self, fn: Function, site: CallSite, names: _Names, sym_regs: dict):
        self.fn = fn
        self.site = site
        self.names = names
        self.sym_regs = sym_regs          # .shared symbol -> passed register holding it
        self.kernel_types = _reg_types(fn)
        self.call_types = _reg_types(site.function)
        self.lines: list = []
        self._snapshots: dict = {}
        self._widened: dict = {}

    def width_of(self, reg: str) -> int:
        reg = source_name(reg)
        t = self.kernel_types(reg) or self.call_types(reg)
        if t is None:
            raise OutlineError(f"register {reg} is not declared in {self.fn.name} nor in the "
                               f"call text")
        return _WIDTH.get(t.lstrip("."), 32)

    def snapshot(self, reg: str) -> str:
        """A private copy, taken before the region runs, of passed register `reg`."""
        if reg not in self._snapshots:
            w = self.width_of(reg)
            snap = self.names.new(w)
            self._snapshots[reg] = snap
            self.lines.append(f"\tmov.b{w if w > 1 else 32} {snap}, {reg};" if w != 1 else
                              f"\tmov.pred {snap}, {reg};")
        return self._snapshots[reg]

    def stable(self, reg: str) -> str:
        """`reg` itself when only the call text declares it (the region cannot change it),
        else a snapshot taken before the region."""
        return reg if not _kernel_side(self.site, reg) or not self.kernel_types(reg) and \
            self.call_types(reg) else self.snapshot(reg)

    def symbol_base(self, sym: str, width: int) -> str:
        """The register carrying `.shared` array `sym`'s address, `width` bits wide."""
        reg = self.sym_regs[sym]
        w = self.width_of(reg)
        if w == width:
            return self.stable(reg)
        key = (sym, width)
        if key not in self._widened:
            r = self.names.new(width)
            src = self.stable(reg)
            self.lines.append(f"\tcvt.u{width}.u{w} {r}, {src};")
            self._widened[key] = r
        return self._widened[key]
