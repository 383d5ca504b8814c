"""What a check produces: findings (each a :class:`~rrsplice.ptx.diagnostic.Diagnostic`), the
resolved target, the report, and the error `apply` raises when a report has errors."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from ..ptx.diagnostic import SEVERITIES, Diagnostic
from ..ptx.errors import RRSpliceError
from ..ptx.model import Function, Module
from ..ptx.select import StatementRange
from ..workflow.recipe import Recipe
from .facts import Facts
from .text import SpliceText

__all__ = ["SEVERITIES", "CheckFailed", "Diagnostic", "Report", "Target"]


class CheckFailed(RRSpliceError):
    """`apply` refused to write: the recipe has errors."""

    def __init__(self, report: Report):
        self.report = report
        errs = report.errors
        notes = ["  " + f.render() for f in errs[:20]]
        if len(errs) > 20:
            notes.append(f"  ... and {len(errs) - 20} more")
        super().__init__(f"{len(errs)} error(s); nothing written", path=report.recipe.path,
                         notes=notes)

    def to_json(self) -> dict:
        return {"message": "check failed; nothing written", "report": self.report.to_json()}


@dataclass
class Target:
    """What a recipe does to which function, resolved against the module."""
    recipe: Recipe
    path: Path
    module: Module
    note: str | None = None
    fn: Function | None = None
    kind: str = "none"          # region | point | truncate | body | none
    first_line: int | None = None
    last_line: int | None = None   # inclusive
    rng: StatementRange | None = None
    text: str | None = None  # the splice text (call / insert / tail / stub / debug block)
    extern: str | None = None
    stage: str | None = None
    point_regs: list = field(default_factory=list)
    rewrites: object = None     # rrsplice.rewrite.RewritePlan when the recipe asks for any


@dataclass
class Report:
    recipe: Recipe
    target: Target
    findings: list = field(default_factory=list)
    facts: Facts = field(default_factory=Facts)
    splice: SpliceText | None = None
    analysis: object = None

    @property
    def errors(self) -> list:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def add(self, severity, code, message, st=None, line=None, registers=()):
        """Add a finding about statement `st` (or physical `line`)."""
        if st is not None and line is None:
            line = st.line
        self.append(Diagnostic(severity, code, message, line=line,
                               column=st.column if st is not None else None,
                               statement=st.sid if st is not None else None,
                               registers=list(registers)))

    def append(self, finding: Diagnostic) -> None:
        finding.registers = list(finding.registers)
        self.findings.append(finding)

    def located(self) -> list:
        """The findings with the file each is about: the PTX module for a finding with a
        line, else the recipe. Asked for when printed, since a caller may still rename
        either (`recipe new` checks a trial copy, a family names its members' outputs)."""
        out = []
        for f in self.findings:
            where = self.target.path if f.line and self.target is not None \
                else self.recipe.path
            out.append(replace(f, path=None if where is None else str(where)))
        return out

    def to_json(self) -> dict:
        t = self.target
        return {"ok": self.ok, "recipe": str(self.recipe.path), "form": self.recipe.form,
                "module": str(t.path) if t else None, "note": t.note if t else None,
                "function": t.fn.name if t and t.fn else None,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "findings": [f.to_json() for f in self.findings], "facts": self.facts.to_json()}
