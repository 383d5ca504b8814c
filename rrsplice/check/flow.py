"""Dataflow checks of a region: live-ins passed or derivable, live-outs written back,
mma D pairs, clobbers."""

from __future__ import annotations

import re

from ..analysis.regions import region_of
from ..ptx.model import Function
from ..ptx.select import StatementRange
from .analysis import _analyze, _memo
from .race import _check_shared_base
from .report import Report
from .scope import _check_scoped_crossing
from .scratch import _check_scratch
from .text import SpliceText


def _mma_pairs(fn: Function, rng: StatementRange) -> dict:
    """reg -> (mma statement, its D list) for D registers of mma inside the range."""
    out = {}
    for i in range(rng.first, rng.last + 1):
        st = fn.statements[i - 1]
        if st.base == "mma" and st.operands:
            d = [r.key for r in st.operands[0].registers()]
            if len(d) > 1:
                for r in d:
                    out[r] = (st, d)
    return out


def _check_dataflow(rep: Report, fn: Function, rng: StatementRange, sp: SpliceText) -> None:
    from ..analysis.provenance import classify_live_in
    from ..analysis.semantics import sort_registers
    fa = _analyze(rep, fn)
    stmts = fn.statements
    passed = list(rep.facts.passed or [])
    returned = list(rep.facts.returned or [])
    region = region_of(fa, rng)
    live_in = list(region.live_in)
    live_out = list(region.live_out)
    rep.facts.live_in = live_in
    rep.facts.live_out = live_out
    _check_scoped_crossing(rep, fa, rng)
    classes = classify_live_in(fa, rng, passed=passed)
    groups: dict = {}
    other = []
    for li in classes:
        groups.setdefault(li.klass, []).append(li)
        if li.klass == "other":
            other.append(li)
    rep.facts.live_in_classes = {k: [li.reg for li in v] for k, v in groups.items()}
    # a legacy delete+insert need not be a call: its unread live-ins are only suspicious
    sev = "error" if rep.recipe.form == "cut_call" else "warning"
    for li in other:
        defs = list(li.reaching_defs or [])
        where = stmts[defs[0] - 1] if defs and 0 < defs[0] <= len(stmts) else None
        rep.add(sev, "live-in", f"{li.reg} is live into the region but neither passed to "
                "the call nor derivable from a passed value"
                + (f" (defined at {', '.join(f's{d}' for d in defs[:4])})" if defs else "")
                + (f": {li.detail}" if li.detail else ""), st=where, registers=[li.reg])
    der = groups.get("derivable", [])
    if der:
        by_detail: dict = {}
        for li in der:
            key = re.sub(r"[+-]?\d+", "N", str(li.detail or ""))
            by_detail.setdefault(key, []).append(li)
        for _key, lis in by_detail.items():
            rep.add("info", "live-in", f"{len(lis)} live-in register(s) derivable from passed "
                    f"values, e.g. {lis[0].reg}: {lis[0].detail}",
                    registers=[li.reg for li in lis])
    spec = groups.get("special", [])
    if spec:
        rep.add("info", "live-in", f"{len(spec)} live-in register(s) hold special values the "
                "body can read itself: " + "; ".join(f"{li.reg}: {li.detail}"
                                                      for li in spec[:4]),
                registers=[li.reg for li in spec])
    live_in_set = set(live_in)
    unused = [r for r in passed if r not in live_in_set]
    if unused:
        rep.add("warning", "passed-unused", f"{len(unused)} passed register(s) are not live "
                "into the region (the body gets values it does not need)", registers=unused)
    # live-out: every one must be written back by the splice text
    ret_set = set(returned)
    pairs = _mma_pairs(fn, rng)
    for r in live_out:
        if r in ret_set:
            continue
        uses = list(fa.first_uses_after(rng, r)) if hasattr(fa, "first_uses_after") else []
        use_st = stmts[uses[0] - 1] if uses else None
        at = f" (read at {use_st.sid}, line {use_st.line})" if use_st else ""
        if r in pairs:
            mst, d = pairs[r]
            got = [x for x in d if x in ret_set]
            if got:
                rep.add("error", "mma-pair", f"only {', '.join(got)} of mma {mst.sid}'s "
                        f"{{{', '.join(d)}}} D list is written back; {r} is live out of the "
                        f"region too{at} and would be undefined after the call", st=use_st,
                        registers=[r])
                continue
        rep.add("error", "live-out", f"{r} is live out of the region{at} but the splice "
                "text does not write it back", st=use_st, registers=[r])
    live_out_set = set(live_out)
    extra = [r for r in returned if r not in live_out_set]
    if extra:
        after = set(fa.live_out_at(rng.last))
        clob = [r for r in extra if r in after]
        if clob:
            rep.add("error", "clobber", f"the splice text writes {len(clob)} register(s) whose "
                    "values from before the region are still needed after it",
                    registers=sort_registers(clob))
        rest = [r for r in extra if r not in after]
        if rest:
            rep.add("warning", "live-out", f"the splice text writes {len(rest)} register(s) "
                    "not live after the region", registers=sort_registers(rest))
    _check_scratch(rep, fn, rng, sp)
    _check_shared_base(rep, fn, rng, sp)
    _mma_facts(rep, fn, rng, fa)


def _mma_facts(rep: Report, fn: Function, rng: StatementRange, fa) -> None:
    n = sum(1 for i in range(rng.first, rng.last + 1) if fn.statements[i - 1].base == "mma")
    rep.facts.mma = n
    if not n:
        return

    def compute():
        from ..analysis.mma import phases
        # the summary needs counts and geometry only: the name-tracking mode is exact for
        # straight-line code and twice as fast as confirming chains with reaching defs
        return [p.geometry for p in phases(fn)
                if rng.first <= p.first and p.last <= rng.last]
    try:
        geo = _memo(rep.target.module, fn, f"phases {rng}", compute)
    except Exception as exc:  # noqa: BLE001 - a fact, never a reason to fail a check
        rep.facts.phases_error = str(exc)
        return
    rep.facts.phases = len(geo)
    if geo:
        rep.facts.phase_geometry = geo
