"""What a check produces: findings, the resolved target, the report, and the error
`apply` raises when a report has errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..ptx.errors import RRSpliceError
from ..ptx.model import Function, Module
from ..ptx.select import StatementRange
from ..workflow.recipe import Recipe
from .facts import Facts
from .text import SpliceText

SEVERITIES = ("error", "warning", "info")


class CheckFailed(RRSpliceError):
    """`apply` refused to write: the recipe has errors."""

    def __init__(self, report: Report):
        self.report = report
        errs = report.errors
        lines = [f"{report.recipe.path}: {len(errs)} error(s); nothing written"]
        lines += ["  " + f.render() for f in errs[:20]]
        if len(errs) > 20:
            lines.append(f"  ... and {len(errs) - 20} more")
        super().__init__("\n".join(lines))

    def to_json(self) -> dict:
        return {"message": "check failed; nothing written", "report": self.report.to_json()}


@dataclass
class Finding:
    severity: str
    code: str
    message: str
    statement: str | None = None
    line: int | None = None
    registers: list = field(default_factory=list)
    column: int | None = None

    def render(self) -> str:
        where = ", ".join(x for x in (self.statement, f"line {self.line}" if self.line else None)
                          if x)
        regs = (" [" + " ".join(self.registers[:12])
                + (f" +{len(self.registers) - 12}" if len(self.registers) > 12 else "") + "]"
                ) if self.registers else ""
        return f"{self.severity}: {self.code}: " + (f"{where}: " if where else "") \
            + self.message + regs

    def to_json(self) -> dict:
        return {"severity": self.severity, "code": self.code, "message": self.message,
                "statement": self.statement, "line": self.line,
                "registers": list(self.registers)}


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
        if st is not None and line is None:
            line = st.line
        self.findings.append(Finding(severity, code, message,
                                     st.sid if st is not None else None, line,
                                     list(registers),
                                     st.column if st is not None else None))

    def to_json(self) -> dict:
        t = self.target
        return {"ok": self.ok, "recipe": str(self.recipe.path), "form": self.recipe.form,
                "module": str(t.path) if t else None, "note": t.note if t else None,
                "function": t.fn.name if t and t.fn else None,
                "errors": len(self.errors), "warnings": len(self.warnings),
                "findings": [f.to_json() for f in self.findings], "facts": self.facts.to_json()}
