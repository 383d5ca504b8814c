"""`call.uni` needs uniform control flow: a cut whose first statement is reached only by
the lanes a per-lane branch sends there (rrsplice.analysis.uniformity) is reported as
`divergent-call`, with the branch and the chain back to the per-lane value it tests: an
error when the lanes sent elsewhere rejoin later, a warning when they only leave (a per-lane
early `return`)."""

from __future__ import annotations

import re

from ..ptx.model import Function
from ..ptx.select import StatementRange
from .analysis import _analyze
from .report import Report

_CALL_UNI = re.compile(r"\bcall\.uni\b")


def _check_uniform(rep: Report, fn: Function, rng: StatementRange, text: str) -> None:
    if not text or not _CALL_UNI.search(text):
        return
    from ..analysis.uniformity import uniformity
    u = uniformity(_analyze(rep, fn))
    found = u.divergence_at(rng.first, outside=rng, exits=False)
    severity = "error"
    if found is None:
        found = u.divergence_at(rng.first, outside=rng)
        severity = "warning"
    first = fn.statements[rng.first - 1]
    if found is None:
        rep.add("info", "divergent-call", f"the call site ({first.sid}, line {first.line}) "
                "is reached in uniform control flow: no branch it depends on tests a "
                "per-lane value", st=first)
        return
    index, why = found
    br = fn.statements[index - 1]
    chain = "; ".join(f"{fn.statements[i - 1].sid} (line {fn.statements[i - 1].line}) "
                      + (f"lies under the branch {what[11:]}" if what.startswith("control at ")
                         else f"reads {what}") for i, what in u.chain(why))
    where = (f"the cut's first statement is control-dependent on {br.sid} (line {br.line}, "
             f"`{br.text.strip()}`), whose condition is per-lane: {chain}")
    if severity == "error":
        rep.add("error", "divergent-call", f"`call.uni` under divergent control flow: {where}; "
                "PTX defines call.uni (and the body's mma.sync.aligned) only when every lane "
                "of the warp arrives together: move the cut outside the branch or make its "
                "condition uniform", st=first)
    else:
        rep.add("warning", "divergent-call", f"the call runs without the lanes a per-lane "
                f"early exit removed: {where}; the lanes that leave never come back, so the "
                "others arrive together, but a body with warp-wide instructions "
                "(mma.sync.aligned, shfl.sync with a full mask) runs with part of the warp, "
                "as the region did", st=first)
