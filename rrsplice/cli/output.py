"""How the command line prints: tables, messages, diagnostics and progress.

Two renderings of the same data. On a terminal, rich tables and colour. Anywhere else (a
pipe, a file, a test), plain full-width text: one line per table row, columns separated by
two spaces, nothing cut with `…` and nothing wrapped, so `grep`, `cut` and `diff` see every
cell whole. Data is never interpreted as markup or emoji in either rendering: a string
given to `say` or a table cell is printed literally; only `styled(...)` pieces carry style.

Diagnostics follow the compiler convention (`path:line:col: error: message [code]`) on
stderr, so editors and CI annotators can jump to them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from typing import Union

import click

from ..ptx.diagnostic import SEVERITY_WORD, Diagnostic

Cell = Union[str, "Styled"]


class Styled:
    """A piece of text with a rich style (used only on a terminal)."""

    __slots__ = ("text", "style")

    def __init__(self, text: str, style: str):
        self.text = str(text)
        self.style = style

    def __str__(self) -> str:
        return self.text


def styled(text, style: str) -> Styled:
    return Styled(text, style)


def bold(text) -> Styled:
    return Styled(text, "bold")


def stdout_is_terminal() -> bool:
    return _isatty(sys.stdout)


def stderr_is_terminal() -> bool:
    return _isatty(sys.stderr)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _rich_text(parts: Iterable[Cell]):
    from rich.text import Text
    out = Text()
    for p in parts:
        if isinstance(p, Styled):
            out.append(p.text, style=p.style)
        else:
            out.append(str(p))
    return out


def plain(parts: Iterable[Cell]) -> str:
    return "".join(str(p) for p in parts)


_consoles: dict = {}


def _console(err: bool):
    """A rich console writing to the current stdout/stderr (markup, emoji and highlighting
    off: every string it receives is already literal text)."""
    from rich.console import Console
    stream = sys.stderr if err else sys.stdout
    key = (err, id(stream))
    if key not in _consoles:
        if len(_consoles) > 8:          # streams replaced many times (tests)
            _consoles.clear()
        _consoles[key] = Console(file=stream, highlight=False, emoji=False, markup=False)
    return _consoles[key]


def say(*parts: Cell, err: bool = False) -> None:
    """Print one message made of literal strings and `styled` pieces."""
    stream_tty = stderr_is_terminal() if err else stdout_is_terminal()
    if stream_tty:
        _console(err).print(_rich_text(parts))
    else:
        click.echo(plain(parts), err=err)


def say_text(text: str, err: bool = False) -> None:
    """Print a block of text (a tool's log) exactly as it is."""
    click.echo(text, err=err)


class Grid:
    """A table: a rich table on a terminal, plain aligned columns otherwise.

    Cells are literal strings or `styled` pieces; a cell's newlines become spaces in the
    plain rendering so every row stays one line.
    """

    def __init__(self, *columns: str, title: str | None = None, header: bool = True,
                 right: Iterable[str] = ()):
        self.columns = list(columns)
        self.title = title
        self.header = header
        self.right = set(right)
        self.rows: list[list[Cell]] = []

    def add_row(self, *cells: Cell) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(list(cells))

    def plain_lines(self) -> list[str]:
        def flat(c) -> str:
            return " ".join(str(c).split("\n"))

        table = ([[flat(c) for c in self.columns]] if self.header else []) \
            + [[flat(c) for c in r] for r in self.rows]
        if not table:
            return [self.title] if self.title else []
        widths = [max(len(r[i]) for r in table) for i in range(len(self.columns))]
        lines = [self.title] if self.title else []
        for r in table:
            cells = []
            for i, (c, w) in enumerate(zip(r, widths, strict=False)):
                last = i == len(widths) - 1
                if self.columns[i] in self.right:
                    cells.append(c.rjust(w))
                else:
                    cells.append(c if last else c.ljust(w))
            lines.append("  ".join(cells).rstrip())
        return lines

    def print(self, err: bool = False) -> None:
        if (stderr_is_terminal() if err else stdout_is_terminal()):
            from rich import box
            from rich.table import Table
            t = Table(title=self.title, title_justify="left", show_header=self.header,
                      box=box.SIMPLE_HEAD if self.header else None, pad_edge=False)
            for c in self.columns:
                t.add_column(c, justify="right" if c in self.right else "left",
                             overflow="fold")
            for r in self.rows:
                t.add_row(*(_rich_text([c]) for c in r))
            _console(err).print(t)
        else:
            for line in self.plain_lines():
                click.echo(line, err=err)


# ---------------------------------------------------------------------------- diagnostics

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow", "note": "bold cyan"}


def diagnostic(path, line: int | None, column: int | None, severity: str,
               message: str, code: str | None = None) -> str:
    """`path:line:col: severity: message [code]` (line and column left out when unknown)."""
    return Diagnostic(severity, code, message, None if path is None else str(path), line,
                      column).format()


def print_diagnostic(path, line, column, severity, message, code=None) -> None:
    print_diag(Diagnostic(severity, code, message, None if path is None else str(path), line,
                          column))


def print_diag(d: Diagnostic) -> None:
    """`d` on stderr as `path:line:col: severity: message [code]`, the severity in colour on
    a terminal."""
    text = d.format()
    if stderr_is_terminal():
        sev = SEVERITY_WORD.get(d.severity, d.severity)
        head, _, rest = text.partition(f" {sev}: ")
        say(head + " ", styled(sev + ":", _SEVERITY_STYLE.get(sev, "bold")), " " + rest,
            err=True)
    else:
        click.echo(text, err=True)


def note(message: str, as_json: bool = False) -> None:
    """A side remark (e.g. which function was chosen) on stderr, never in JSON output."""
    if not as_json:
        print_diagnostic(None, None, None, "note", message)


def warn(message: str, path=None, code: str | None = None) -> None:
    print_diagnostic(path, None, None, "warning", message, code)


# ---------------------------------------------------------------------------- progress

@contextlib.contextmanager
def progress_step(name: str):
    """A spinner with the step's name and elapsed time on a terminal (stderr); nothing
    otherwise. Yields a function that renames the step."""
    if not stderr_is_terminal():
        yield lambda _name: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=_console(True), transient=True) as bar:
        task = bar.add_task(name, total=None)
        yield lambda new: bar.update(task, description=new)


def progress_iter(items: list, what: str, min_items: int = 4):
    """Iterate `items` with a progress bar on a terminal (stderr) when there are enough."""
    if len(items) < min_items or not stderr_is_terminal():
        yield from items
        return
    from rich.progress import Progress
    with Progress(console=_console(True), transient=True) as bar:
        task = bar.add_task(what, total=len(items))
        for item in items:
            yield item
            bar.advance(task)
