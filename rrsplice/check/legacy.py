"""Checks of the legacy forms: `cut_after` tails and `replace_body` stubs."""

from __future__ import annotations

from ..ptx.parser import blank_comments
from .calls import _check_splice_text
from .report import Report
from .source import _line_text, _region_text


def _check_truncate(rep: Report) -> None:
    t = rep.target
    rec, m = t.recipe, t.module
    line = t.first_line
    assert line is not None  # the cut_after form always sets it
    if line > m.line_count:
        rep.add("error", "cut-range", f"cut_after line {line} is past the end of "
                f"{t.path.name} ({m.line_count} lines)", line=line)
        return
    if rec.cut_check is not None and rec.cut_check.strip() not in _line_text(m, line):
        rep.add("error", "cut-text", f"cut_check expects {rec.cut_check.strip()!r} on line "
                f"{line}, which reads {_line_text(m, line).strip()!r}", line=line)
    elif rec.cut_check is None:
        rep.add("warning", "cut-text", "no cut_check: the line cut after is not verified")
    fn = t.fn
    if fn is not None:
        st = fn.statement_at_line(line)
        if st is not None and st.end_line != line:
            rep.add("error", "cut-range", f"line {line} is inside {st.sid} (lines "
                    f"{st.line}-{st.end_line})", st=st)
        # how many braces the tail must close: the function's, plus any open block
        prefix = blank_comments(_region_text(m, fn.line, line))
        opened = prefix.count("{") - prefix.count("}")
        tail = blank_comments(t.text or "")
        closes = tail.count("}") - tail.count("{")
        if closes != opened:
            rep.add("warning", "cut-block", f"the tail closes {closes} brace(s); {opened} are "
                    f"open after line {line}")
        _check_splice_text(rep, t.text, t.extern, fn, "tail", closes=max(0, closes))


def _check_body(rep: Report) -> None:
    t = rep.target
    if t.fn is None:
        return
    _check_splice_text(rep, t.text, t.extern, t.fn, "stub", need_call=False)
