"""Error types. Every user-facing failure is an RRSpliceError so the CLI can print it
without a traceback; parse failures carry an exact source position."""

from __future__ import annotations

from .diagnostic import Diagnostic


class RRSpliceError(Exception):
    """Base of every error rrsplice reports to a user (CLI exit code 2). It carries a
    :class:`Diagnostic`: the message, and the file, line and column it is about as fields,
    so the command line prints `path:line:col: error: message [code]` without reading them
    back out of the text."""

    exit_code = 2
    code: str | None = None     # a stable name for the kind of error, shown as [code]

    def __init__(self, message: str = "", *, path=None, line: int | None = None,
                 column: int | None = None, code: str | None = None, notes=()):
        if code is not None:
            self.code = code
        self.diag = Diagnostic("error", self.code, message,
                               None if path is None else str(path), line, column,
                               notes=tuple(notes))
        super().__init__(self._text())

    def _text(self) -> str:
        """The error as text (`str()`): the whole diagnostic when it has a line, else
        `path: message` (or only the message), then the notes."""
        d = self.diag
        if d.path and d.line:
            return d.format()
        head = f"{d.path}: {d.message}" if d.path else d.message
        return "\n".join((head, *d.notes))

    def render(self) -> str:
        return str(self)

    def diagnostic(self) -> str:
        """The error as a compiler-style line, `path[:line:col]: error: message [code]`
        (`rrsplice` in place of a path when the error is about no file), then its notes."""
        return self.diag.format()


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
        super().__init__(message, path=file, line=line, column=column, notes=self._excerpt())

    def _excerpt(self) -> list[str]:
        """The offending line with a caret under the column, and what was expected."""
        text = self.line_text.rstrip("\r\n")
        shown = text if len(text) <= 200 else _window(text, self.column)
        caret_col = self.column if len(text) <= 200 else min(self.column, 100)
        out = []
        if text or self.line_text == "":
            gutter = f"{self.line:>6} | "
            out.append(gutter + shown.replace("\t", " "))
            out.append(" " * (len(gutter) - 2) + "| " + " " * (caret_col - 1) + "^")
        if self.expected:
            out.append("expected: " + ", ".join(self.expected[:12])
                       + (" ..." if len(self.expected) > 12 else ""))
        return out

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column,
                "message": self.message, "line_text": self.line_text.rstrip("\r\n")[:400],
                "expected": self.expected}


def _window(text: str, column: int) -> str:
    """A 200-character slice of a very long line around the column (caret at 100)."""
    start = max(0, column - 100)
    return text[start:start + 200]
