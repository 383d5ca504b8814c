"""What every step of building a body reads: the kernel, the region and its text span, the
parsed call site, the values the body takes before the region, and reaching definitions
(computed once, when a step first needs them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ptx.model import Function, Module
from ..ptx.select import StatementRange
from .callsite import CallSite
from .recompute import _Reaching
from .values import BodyValues


@dataclass
class OutlineContext:
    module: Module
    fn: Function
    rng: StatementRange
    site: CallSite
    values: BodyValues
    span: tuple                        # (start, end) char offsets of the region's text
    lines: tuple                       # (first, last) physical lines of that text
    analysis: object = None            # the function's dataflow analysis, if already made
    _reach: _Reaching | None = field(default=None, repr=False)

    def reach(self) -> _Reaching:
        """Reaching definitions in the kernel, from `analysis` or computed now."""
        if self._reach is None:
            self._reach = _Reaching(self.fn, self.analysis)
        return self._reach
