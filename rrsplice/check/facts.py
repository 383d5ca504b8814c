"""What the checks establish about a cut, as typed fields the checks fill in and the
commands read (`check`'s summary, `apply`'s and `outline`'s JSON, `verify`, families).

A fact a check did not establish stays None and is absent from :meth:`Facts.to_json`,
which is the `facts` object of `check --json` (and of a refused `apply`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..rewrite.rules import RewritePlan


@dataclass
class ScratchFacts:
    """The shared array the returns come back through (ABI `scratch`)."""
    symbol: str                           #: the array's name
    bytes: int | None = None           #: its size (None: the declaration gives none)
    stride: int | None = None          #: bytes between two slots (None: not found)
    stride_from: str | None = None     #: what the stride was read from
    line: int | None = None            #: the array's declaration line
    slots: int | None = None           #: slots the address can select (threads or lanes)
    indexed_by: str | None = None      #: "thread" or "lane": what selects the slot
    last_before: dict | None = None    #: {statement, line} of the last access before the cut
    first_after: dict | None = None    #: {statement, line} of the first access after it
    race: str | None = None            #: the race check's verdict (absent when it gave none)

    def to_json(self) -> dict:
        out = {"symbol": self.symbol, "bytes": self.bytes, "stride": self.stride,
               "stride_from": self.stride_from, "line": self.line, "slots": self.slots,
               "indexed_by": self.indexed_by, "last_before": self.last_before,
               "first_after": self.first_after}
        if self.race is not None:
            out["race"] = self.race
        return out


@dataclass
class StageFacts:
    """The debug stage checked instead of the cut (`check --debug STAGE`)."""
    name: str                             #: the stage's name
    line: int                             #: the line it is inserted after
    after: str                            #: the statement (sN) ending on that line
    registers: list                       #: the registers it dumps

    def to_json(self) -> dict:
        return {"name": self.name, "line": self.line, "after": self.after,
                "registers": self.registers}


@dataclass
class Facts:
    """Everything the checks of one recipe established, field by field."""
    module: str | None = None          #: the module checked (path)
    function: str | None = None        #: the function the recipe edits
    target: str | None = None          #: the target profile the lints ran for
    lines: list | None = None          #: [first, last] lines of the cut
    statements: str | None = None      #: the cut as a statement range, "sA-sB"
    statement_count: int | None = None  #: statements in the cut
    passed: list | None = None         #: registers the call text passes
    returned: list | None = None       #: registers it reads back
    callees: list | None = None        #: functions the splice text calls
    live_in: list | None = None        #: registers live into the cut
    live_out: list | None = None       #: registers live out of it
    live_in_classes: dict | None = None  #: provenance class -> live-in registers
    mma: int | None = None             #: mma statements in the cut
    phases: int | None = None          #: GEMM phases wholly inside it
    phases_error: str | None = None    #: why the phases could not be found
    phase_geometry: list | None = None  #: each phase's geometry (when there are any)
    scratch: ScratchFacts | None = None  #: the return scratch array
    stage: StageFacts | None = None    #: the debug stage checked
    rewrites: RewritePlan | None = None  #: the recipe's statement rewrites

    def scratch_for(self, symbol: str) -> ScratchFacts:
        """The scratch facts, started for `symbol` if no check has started them yet."""
        if self.scratch is None:
            self.scratch = ScratchFacts(symbol)
        return self.scratch

    def to_json(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                out[f.name] = v.to_json() if hasattr(v, "to_json") else v
        return out
