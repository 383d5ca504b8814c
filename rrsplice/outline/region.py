"""The region: its text span in the module, and the registers it needs on entry (with
the branch checks that keep it single-entry and self-contained, read from the one
rrsplice.analysis.regions.Region that `check` reports on)."""

from __future__ import annotations

from ..analysis.dataflow import analyze
from ..analysis.regions import region_of
from ..ptx.model import Function, Module
from ..ptx.select import StatementRange
from .common import OutlineError, _iter_blocks


def region_span(module: Module, fn: Function, rng: StatementRange,
                lines: tuple | None = None) -> tuple:
    """(start, end) character offsets of the region's text: whole physical lines, either the
    recipe's `lines = (first, end)` half-open interval or the statements' own lines."""
    assert fn.body is not None  # a region lies in a function's body
    starts = module.line_starts()
    first_st, last_st = fn.statement(rng.first), fn.statement(rng.last)
    a_line, b_line = (lines[0], lines[1] - 1) if lines else (first_st.line, last_st.end_line)
    start = starts[a_line - 1]
    end = starts[b_line] if b_line < len(starts) else len(module.text)
    for st in fn.statements:
        if st.index in rng:
            continue
        if start <= st.start < end or start < st.end <= end:
            raise OutlineError(f"{st.sid} (line {st.line}) shares a line with the region "
                               f"s{rng.first}-s{rng.last} but lies outside it")
    if not lines:
        start, end = _widen(module, fn, rng, start, end, starts)
    for blk in _iter_blocks(fn.body):
        inside = start <= blk.start and blk.end <= end
        outside = blk.end <= start or blk.start >= end
        encloses = blk.start < start and end <= blk.end
        if not (inside or outside or encloses):
            raise OutlineError(f"the region s{rng.first}-s{rng.last} (lines {a_line}-{b_line}) "
                               f"cuts the {{ }} block of lines {blk.line}-{blk.end_line}")
        if encloses:
            raise OutlineError(f"the region s{rng.first}-s{rng.last} lies inside the {{ }} "
                               f"block of lines {blk.line}-{blk.end_line}; cut the whole block")
    return start, end


def _widen(module: Module, fn: Function, rng: StatementRange, start: int, end: int,
           starts: tuple) -> tuple:
    """A statement range given without lines takes in the braces of blocks it opens or
    closes when nothing else lies between (`{` before its first statement, `}` after its
    last)."""
    def line_end(off):
        nl = module.text.find("\n", off)
        return len(module.text) if nl < 0 else nl + 1

    def line_start(off):
        return module.text.rfind("\n", 0, off) + 1

    assert fn.body is not None  # a region lies in a function's body
    others = [st for st in fn.statements if st.index not in rng]
    changed = True
    while changed:
        changed = False
        for blk in _iter_blocks(fn.body):
            if start <= blk.start < end < blk.end:
                if not any(end <= st.start < blk.end for st in others):
                    end = line_end(blk.end - 1)
                    changed = True
            if blk.start < start < blk.end <= end:
                if not any(blk.start <= st.start < start for st in others):
                    start = line_start(blk.start)
                    changed = True
    return start, end


def region_needs(fn: Function, rng: StatementRange, live_at_exit: set,
                 exit_labels: frozenset = frozenset(), analysis=None) -> dict:
    """Registers the region reads before writing them on some path from its first statement
    (with `live_at_exit` read after its last, and at every branch to one of `exit_labels`:
    the labels outside the region where the body returns, see rrsplice.analysis.exits): name ->
    index of a first such read. Refuses a branch the body cannot take (to a label that is
    neither in the region nor an exit, or through a branch table) and a second entry.
    The flow is rrsplice.analysis.regions' Region, the one `check` reports on."""
    fa = analysis if analysis is not None else analyze(fn)
    region = region_of(fa, rng)
    stmts = fn.statements
    problems = []           # (statement index, refusal), the first in statement order wins
    for i, name in region.unresolved:
        st = stmts[i - 1]
        problems.append((i, f"{st.sid} (line {st.line}) branches to {name}, which is not a "
                            f"label of {fn.name}"))
    for i in region.indirect:
        st = stmts[i - 1]
        problems.append((i, f"{st.sid} (line {st.line}): indirect branch in the region"))
    for e in region.exits:
        name = region.branches(e)
        if name is None or name in exit_labels:
            continue
        st, lab = stmts[e.source - 1], stmts[e.target - 1]
        problems.append((e.source, f"{st.sid} (line {st.line}) branches to {name} (line "
                                   f"{lab.line}), outside the region, which is neither "
                                   f"the statement right after it nor a label the call "
                                   f"text dispatches to after the call (see `rrsplice "
                                   f"recipe new`: it writes the dispatch)"))
    if problems:
        raise OutlineError(min(problems)[1])
    for e in sorted(region.entries_of("side"), key=lambda e: (e.source, e.target)):
        st, lab = stmts[e.source - 1], stmts[e.target - 1]
        raise OutlineError(f"{st.sid} (line {st.line}), outside the region, branches "
                           f"to {lab.label or lab.opcode} (line {lab.line}) inside it: "
                           f"the region has a second entry")
    return region.needs_at_exit(live_at_exit, exit_labels)
