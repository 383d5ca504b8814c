"""One diagnostic type for everything rrsplice reports: a check's finding, a lint's hit, a
rewrite rule's issue and every error carry the same fields, and one function prints them in
the compiler convention, `path:line:col: severity: message [code]`.

The codes they carry are registered here with a one-line description each (the modules that
emit them register theirs when imported), so the table of codes in docs/diagnostics.md is
generated from it (`python scripts/diagnostic_codes.py --write`), and a test holds every
emitted code to the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("error", "warning", "info")
# how a severity is worded on the command line (`info` findings print as notes)
SEVERITY_WORD = {"error": "error", "warning": "warning", "info": "note", "note": "note"}


@dataclass
class Diagnostic:
    """What went wrong (or what was found) and where: the file, line and column, the
    statement (`sN`) and the registers involved, and further lines (`notes`) printed after
    the first, verbatim."""
    severity: str = "error"
    code: str | None = None
    message: str = ""
    path: str | None = None
    line: int | None = None
    column: int | None = None
    statement: str | None = None
    registers: list = field(default_factory=list)
    notes: tuple = ()

    def format(self) -> str:
        """`path:line:col: severity: sN: message (n: registers) [code]` (`rrsplice` when
        there is no path; line and column only with a path; every register, never cut), then
        the notes, one per line."""
        head = location(self.path, self.line, self.column)
        sev = SEVERITY_WORD.get(self.severity, self.severity)
        text = f"{head}: {sev}: " + (f"{self.statement}: " if self.statement else "") \
            + self.message
        if self.registers:
            text += f" ({len(self.registers)}: {' '.join(self.registers)})"
        if self.code:
            text += f" [{self.code}]"
        return "\n".join((text, *self.notes))

    def render(self) -> str:
        """The finding as one line of a report: `severity: code: sN, line L: message [regs]`
        (the first 12 registers)."""
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


def location(path, line: int | None = None, column: int | None = None) -> str:
    """`path:line:col`, `path` when the line is unknown, `rrsplice` when the path is."""
    if path is None or path == "":
        return "rrsplice"
    return f"{path}:{line}:{column or 1}" if line else str(path)


def at(st) -> dict:
    """The statement, line and column fields of a diagnostic about statement `st` (any object
    with `sid`, `line` and `column`), for `Diagnostic(..., **at(st))`."""
    if st is None:
        return {}
    return {"statement": st.sid, "line": st.line, "column": st.column}


# ----------------------------------------------------------------------- the code registry

@dataclass(frozen=True)
class Code:
    code: str
    description: str          # one line: what the code means
    kind: str                 # check | lint | error | rewrite
    module: str               # the module that emits it


CODES: dict[str, Code] = {}


def register_codes(module: str, kind: str, table: dict[str, str]) -> dict[str, str]:
    """Register `table` (code -> one-line description) as codes that `module` emits; returns
    the table. A code registered twice must mean the same thing."""
    for code, description in table.items():
        if not description or "\n" in description:
            raise ValueError(f"code {code}: the description must be one line")
        old = CODES.get(code)
        if old is not None and old.description != description:
            raise ValueError(f"code {code} registered twice, as {old.description!r} "
                             f"({old.module}) and {description!r} ({module})")
        if old is None:
            CODES[code] = Code(code, description, kind, module)
    return table

