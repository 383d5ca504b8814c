"""The faithful emitter: apply span edits to a module's original bytes.

Untouched text is never re-printed, so `emit(parse(x)) == x` byte for byte, whatever the
comments, tabs, CRLF or missing final newline. Edits are (start, end, replacement) on
*byte* offsets of the original file; they must not overlap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import RRSpliceError

if TYPE_CHECKING:
    from .model import Module


@dataclass(frozen=True, order=True)
class Edit:
    """Replace original bytes [start, end) with `text` (an insertion when start == end)."""
    start: int
    end: int
    text: bytes
    why: str = ""


def emit(module: Module, edits: list[Edit] | tuple = ()) -> bytes:
    """The module's bytes with `edits` applied (the original bytes when there are none)."""
    if not edits:
        return module.data
    return apply_spans(module.data, [(e.start, e.end, e.text, e.why) for e in edits])


def apply_spans(source, spans, start: int = 0, end=None):
    """`source[start:end]` (bytes or str) with span replacements applied: `spans` are
    (start, end, replacement[, why]) on offsets of `source`, inside [start, end), not
    overlapping. The one span applier of rrsplice: module edits (:func:`emit`), statement
    rewrites and the outliner's copy of a region all go through it."""
    end = len(source) if end is None else end
    out = []
    pos = start
    for sp in sorted(spans, key=lambda x: (x[0], x[1])):
        a, b, rep = sp[0], sp[1], sp[2]
        why = sp[3] if len(sp) > 3 and sp[3] else "edit"
        if a < pos:
            raise RRSpliceError(f"overlapping edits at offset {a}: {why}")
        if b < a or b > end:
            raise RRSpliceError(f"edit out of range: [{a}, {b})")
        out.append(source[pos:a])
        out.append(rep)
        pos = b
    out.append(source[pos:end])
    return source[:0].join(out)


def line_byte_offsets(data: bytes) -> list[int]:
    """Byte offset of the start of each physical line; index 0 is line 1, and one extra
    entry at the end marks end of file (so lines L1..L2 are data[off[L1-1]:off[L2]])."""
    offs = [0]
    find = data.find
    pos = find(b"\n")
    while pos >= 0:
        offs.append(pos + 1)
        pos = find(b"\n", pos + 1)
    if offs[-1] != len(data):
        offs.append(len(data))
    return offs


def newline_of(data: bytes) -> bytes:
    """The file's line ending: CRLF if its first line ends so, else LF."""
    first = data.find(b"\n")
    return b"\r\n" if first > 0 and data[first - 1:first] == b"\r" else b"\n"
