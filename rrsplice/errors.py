"""Error types. Every user-facing failure is an RRSpliceError so the CLI can print it
without a traceback; parse failures carry an exact source position."""

from __future__ import annotations


class RRSpliceError(Exception):
    """Base of every error rrsplice reports to a user (CLI exit code 2)."""

    exit_code = 2

    def render(self) -> str:
        return str(self)


class ParseError(RRSpliceError):
    """A malformed PTX file: where (file, line, column), the line with a caret, and what
    the parser expected there."""

    def __init__(self, message: str, *, file: str = "<text>", line: int = 1, column: int = 1,
                 line_text: str = "", expected: list[str] | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.line_text = line_text
        self.expected = sorted(set(expected or []))
        super().__init__(self.render())

    def render(self) -> str:
        text = self.line_text.rstrip("\r\n")
        shown = text if len(text) <= 200 else _window(text, self.column)
        caret_col = self.column if len(text) <= 200 else min(self.column, 100)
        out = [f"{self.file}:{self.line}:{self.column}: error: {self.message}"]
        if text or self.line_text == "":
            gutter = f"{self.line:>6} | "
            out.append(gutter + shown.replace("\t", " "))
            out.append(" " * (len(gutter) - 2) + "| " + " " * (caret_col - 1) + "^")
        if self.expected:
            out.append("expected: " + ", ".join(self.expected[:12])
                       + (" ..." if len(self.expected) > 12 else ""))
        return "\n".join(out)

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column,
                "message": self.message, "line_text": self.line_text.rstrip("\r\n")[:400],
                "expected": self.expected}


def _window(text: str, column: int) -> str:
    """A 200-character slice of a very long line around the column (caret at 100)."""
    start = max(0, column - 100)
    return text[start:start + 200]
