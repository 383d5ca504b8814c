"""Error types. Every user-facing failure is an RRSpliceError so the CLI can print it
without a traceback; parse failures carry an exact source position."""

from __future__ import annotations

import re


class RRSpliceError(Exception):
    """Base of every error rrsplice reports to a user (CLI exit code 2)."""

    exit_code = 2
    code: str | None = None     # a stable name for the kind of error, shown as [code]

    def render(self) -> str:
        return str(self)

    def diagnostic(self) -> str:
        """The error as a compiler-style line, `path[:line:col]: error: message [code]`.

        The path is the file the error is about: `.file`/`.path` when the error carries one,
        else a leading `something.ptx: ` / `.py` / `.toml` of the message.
        """
        text = self.render()
        if _DIAGNOSTIC.match(text):
            return text
        path = getattr(self, "file", None) or getattr(self, "path", None)
        line, column = getattr(self, "line", None), getattr(self, "column", None)
        if path and text.startswith(f"{path}: "):
            text = text[len(str(path)) + 2:]
        elif not path:
            m = _LEADING_PATH.match(text)
            if m:
                path, text = m.group(1), m.group(2)
        where = str(path) if path else "rrsplice"
        if path and line:
            where += f":{line}:{column or 1}"
        return f"{where}: error: {text}" + (f" [{self.code}]" if self.code else "")


_DIAGNOSTIC = re.compile(r"^\S[^\n]*?(?::\d+:\d+)?: (?:error|warning|note): ")
_LEADING_PATH = re.compile(r"^(\S+?\.(?:ptx|py|toml)): (.*)$", re.S)


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
