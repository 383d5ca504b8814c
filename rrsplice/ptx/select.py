"""Choosing the function a command works on, and naming statement ranges."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import RRSpliceError
from .model import Function, Module


class SelectionError(RRSpliceError):
    """The named function, statement or range does not exist (or is ambiguous)."""


def select_function(module: Module, entry: str | None = None) -> tuple[Function, str | None]:
    """The function to work on and, when it was chosen implicitly, a note saying which.

    With `entry` the function of that name (with a body). Without it: the only function
    with a body, else the only `.entry` with a body; anything else is ambiguous.
    """
    bodies = [f for f in module.functions if f.has_body]
    where = module.path or "<text>"
    if entry is not None:
        for f in bodies:
            if f.name == entry:
                return f, None
        names = ", ".join(f.name for f in bodies) or "none"
        raise SelectionError(f"no function named {entry!r} with a body "
                             f"(functions with bodies: {names})", path=where)
    if len(bodies) == 1:
        return bodies[0], None
    entries = [f for f in bodies if f.is_entry]
    if len(entries) == 1:
        return entries[0], f"using {entries[0].name}, the only .entry with a body"
    if not bodies:
        raise SelectionError("no function with a body", path=where)
    cands = ", ".join(f.name for f in (entries or bodies))
    raise SelectionError("several functions; name one with --entry "
                         f"(candidates: {cands})", path=where)


@dataclass(frozen=True)
class StatementRange:
    """A contiguous, inclusive statement range sA..sB of one function (1-based)."""
    first: int
    last: int

    def __str__(self) -> str:
        return f"s{self.first}-s{self.last}"

    def __contains__(self, index: int) -> bool:
        return self.first <= index <= self.last

    def __len__(self) -> int:
        return self.last - self.first + 1


_RANGE = re.compile(r"^\s*s?(\d+)\s*(?:-|\.\.)\s*s?(\d+)\s*$")
_SID = re.compile(r"^s?(\d+)$")


def parse_statement_id(text: str, fn: Function):
    """`s452` (or `452`) -> that statement of `fn`; a malformed id and one past the
    function's last statement are different errors."""
    m = _SID.match(text.strip())
    if m is None:
        raise SelectionError(f"malformed statement id {text!r}: write it as sN, e.g. s452")
    n = int(m.group(1))
    count = len(fn.statements)
    if not 1 <= n <= count:
        raise SelectionError(f"statement s{n} does not exist: {fn.name} has s1-s{count}")
    return fn.statements[n - 1]


def parse_statement_range(text: str, fn: Function) -> StatementRange:
    """`s452-s15510` (or `452-15510`, `s452..s15510`) checked against the function."""
    m = _RANGE.match(text)
    if m is None:
        raise SelectionError(f"malformed statement range {text!r}: write it as sA-sB, "
                             "e.g. s452-s15510")
    a, b = int(m.group(1)), int(m.group(2))
    n = len(fn.statements)
    if a > b:
        raise SelectionError(f"statement range {text!r} is reversed: s{a} comes after s{b} "
                             f"(write s{b}-s{a})")
    if a < 1 or b > n:
        raise SelectionError(f"statement range {text!r} is outside {fn.name}, which has "
                             f"s1-s{n}")
    return StatementRange(a, b)


def lines_to_range(fn: Function, first_line: int, last_line: int) -> StatementRange:
    """Physical lines L1..L2 (inclusive) -> the statements lying entirely inside them.

    Raises if a statement straddles either end (a cut must fall on statement boundaries)
    or the lines reach outside the function.
    """
    if first_line < fn.line or last_line > fn.end_line:
        raise SelectionError(f"lines {first_line}-{last_line} reach outside {fn.name}, which "
                             f"spans lines {fn.line}-{fn.end_line}")
    inside = [st for st in fn.statements if first_line <= st.line and st.end_line <= last_line]
    for st in fn.statements:
        if st.line < first_line <= st.end_line or st.line <= last_line < st.end_line:
            raise SelectionError(f"lines {first_line}-{last_line} cut {st.sid} "
                                 f"(lines {st.line}-{st.end_line}) in the middle")
    if not inside:
        raise SelectionError(f"lines {first_line}-{last_line} hold no statement of {fn.name}")
    return StatementRange(inside[0].index, inside[-1].index)


def parse_line_range(text: str) -> tuple[int, int]:
    m = re.match(r"^\s*(\d+)\s*(?:-|\.\.)\s*(\d+)\s*$", text)
    if m is None:
        raise SelectionError(f"bad line range {text!r}: write it as L1-L2, e.g. 1535-36892")
    a, b = int(m.group(1)), int(m.group(2))
    if a > b:
        raise SelectionError(f"line range {text!r} is reversed: line {a} comes after line "
                             f"{b} (write {b}-{a})")
    return a, b


def function_at(module: Module, line: int) -> Function | None:
    """The function with a body whose lines hold physical line `line`, or None."""
    for f in module.functions:
        if f.has_body and f.line <= line <= f.end_line:
            return f
    return None


def named_function(module: Module, names) -> Function | None:
    """The first of `names` (best first) that names a function with a body; when none
    does, the module's only `.entry` with a body, else None (several, or none)."""
    for n in names:
        for f in module.functions:
            if f.name == n and f.has_body:
                return f
    bodies = [f for f in module.functions if f.has_body and f.is_entry]
    return bodies[0] if len(bodies) == 1 else None
