"""What the checks establish about a cut, as typed fields the checks fill in and the
commands read (`check`'s summary, `apply`'s and `outline`'s JSON, `verify`, families).

A fact a check did not establish stays None and is absent from :meth:`Facts.to_json`,
which is the `facts` object of `check --json` (and of a refused `apply`)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from ..rewrite.rules import RewritePlan


@dataclass
class ScratchFacts:
    """The shared array the returns come back through (ABI `scratch`)."""
    symbol: str                           #: the array's name
    bytes: Optional[int] = None           #: its size (None: the declaration gives none)
    stride: Optional[int] = None          #: bytes between two slots (None: not found)
    stride_from: Optional[str] = None     #: what the stride was read from
    line: Optional[int] = None            #: the array's declaration line
    slots: Optional[int] = None           #: slots the address can select (threads or lanes)
    indexed_by: Optional[str] = None      #: "thread" or "lane": what selects the slot
    last_before: Optional[dict] = None    #: {statement, line} of the last access before the cut
    first_after: Optional[dict] = None    #: {statement, line} of the first access after it
    race: Optional[str] = None            #: the race check's verdict (absent when it gave none)

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
    module: Optional[str] = None          #: the module checked (path)
    function: Optional[str] = None        #: the function the recipe edits
    target: Optional[str] = None          #: the target profile the lints ran for
    lines: Optional[list] = None          #: [first, last] lines of the cut
    statements: Optional[str] = None      #: the cut as a statement range, "sA-sB"
    statement_count: Optional[int] = None  #: statements in the cut
    passed: Optional[list] = None         #: registers the call text passes
    returned: Optional[list] = None       #: registers it reads back
    callees: Optional[list] = None        #: functions the splice text calls
    live_in: Optional[list] = None        #: registers live into the cut
    live_out: Optional[list] = None       #: registers live out of it
    live_in_classes: Optional[dict] = None  #: provenance class -> live-in registers
    mma: Optional[int] = None             #: mma statements in the cut
    phases: Optional[int] = None          #: GEMM phases wholly inside it
    phases_error: Optional[str] = None    #: why the phases could not be found
    phase_geometry: Optional[list] = None  #: each phase's geometry (when there are any)
    scratch: Optional[ScratchFacts] = None  #: the return scratch array
    stage: Optional[StageFacts] = None    #: the debug stage checked
    rewrites: Optional["RewritePlan"] = None  #: the recipe's statement rewrites

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
