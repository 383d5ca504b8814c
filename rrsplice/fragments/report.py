"""The fragment maps a user reads: per phase, or for the registers crossing a recipe's cut.

`module_maps(fn, fa, phase=None)` is what `rrsplice fragments FILE.ptx` prints;
`cut_report(fn, fa, rng, passed, returned)` places the registers a cut passes in (as the
A/B/C fragments of the first phase inside the cut that reads them) and returns (as D of the
last phase inside the cut that writes them). `rrsplice recipe new` puts `cut_lines(...)` in
the scaffolded recipe's header, so every A_REGS/C_REGS/RET_REGS entry says what it holds.
"""

from __future__ import annotations

from ..ptx.diagnostic import register_codes
from ..ptx.errors import RRSpliceError
from .fragmap import FragMapError, phase_map

register_codes(__name__, "error", {
    "no-mma": "the function has no mma, so no fragments to place",
    "phase-range": "`--phase` names a phase the function does not have",
    "layout": "a phase's fragments cannot be placed in its matrices",
})


class FragmentsError(RRSpliceError):
    """The requested phase does not exist, or its fragments cannot be placed."""


def _phases(fn, fa):
    from ..analysis.mma import phases
    return phases(fn, fa)


def module_maps(fn, fa, phase: int | None = None) -> list:
    """The PhaseMap of every phase of `fn` (or of phase `phase`, 1-based)."""
    where = {"path": getattr(fn.module, "path", None) or fn.name, "line": fn.line, "column": 1}
    ps = _phases(fn, fa)
    if not ps:
        raise FragmentsError(f"{fn.name} has no mma, so no fragments to place", **where,
                             code="no-mma")
    if phase is not None:
        if not 1 <= phase <= len(ps):
            raise FragmentsError(f"{fn.name} has phases 1-{len(ps)}, not {phase}", **where,
                                 code="phase-range")
        ps = [ps[phase - 1]]
    try:
        return [phase_map(fn, fa, p) for p in ps]
    except FragMapError as exc:
        raise FragmentsError(f"{fn.name}: {exc}", **where, code="layout") from None


def _defined_before(fa, frag, first: int) -> bool:
    defs = fa.reaching_defs(frag.mma, frag.reg)
    return bool(defs) and all(d < first for d in defs)


def cut_roles(fn, fa, rng, passed: list, returned: list) -> tuple:
    """({reg: (phase, [FragReg, ...])} for passed registers (a bias seed can be both C
    registers of its chain), the same for returned ones, and the maps of the cut's phases)."""
    maps = [phase_map(fn, fa, p) for p in _phases(fn, fa)
            if rng.first <= p.first and p.last <= rng.last]
    ins: dict = {}
    for r in passed:
        for pm in maps:
            hit = [f for f in pm.a + pm.b + pm.c if f.reg == r and _defined_before(fa, f, rng.first)]
            if hit:
                ins[r] = (pm.phase.index, hit)
                break
    outs: dict = {}
    for r in returned:
        for pm in reversed(maps):
            hit = [f for f in pm.d if f.reg == r]
            if hit:
                outs[r] = (pm.phase.index, hit)
                break
    return ins, outs, maps


def _describe(phase: int, frags: list) -> list:
    """One line per placement (a register used as both C registers has two), and the
    weight-image bytes on a line of their own, so a header line stays short."""
    out, weights = [], []
    for f in frags:
        main, _sep, weight = f.rule().partition("; weight byte = ")
        out.append(f"phase {phase} tile {tuple(f.tile)} r{f.index}: {main}")
        if weight and weight not in weights:
            weights.append(weight)
    return out + [f"    weight byte = {w}" for w in weights]


def cut_report(fn, fa, rng, passed: list, returned: list, elements: bool = False) -> dict:
    ins, outs, maps = cut_roles(fn, fa, rng, passed, returned)

    def row(r, got):
        if got is None:
            return {"reg": r, "fragment": None}
        ph, frags = got
        d = frags[0].to_json(elements)
        d["phase"] = ph
        d["also"] = [f.to_json(elements) for f in frags[1:]]
        return {"reg": r, "fragment": d}

    return {"function": fn.name, "range": str(rng),
            "phases": [pm.phase.index for pm in maps],
            "passed": [row(r, ins.get(r)) for r in passed],
            "returned": [row(r, outs.get(r)) for r in returned]}


def cut_lines(fn, fa, rng, groups: list) -> list:
    """Header lines for a scaffolded recipe: groups = [(label, regs, "in"|"out")]; one line
    per register that is a fragment, and one line naming the ones that are not."""
    passed = [r for _l, regs, way in groups if way == "in" for r in regs]
    returned = [r for _l, regs, way in groups if way == "out" for r in regs]
    ins, outs, _maps = cut_roles(fn, fa, rng, passed, returned)
    lines = []
    for label, regs, way in groups:
        got = ins if way == "in" else outs
        placed = [r for r in regs if r in got]
        rest = [r for r in regs if r not in got]
        if not regs:
            continue
        lines.append(f"{label} ({len(placed)} of {len(regs)} are mma fragments; g = lane>>2, "
                     "t = lane%4, e = byte or half within the register):")
        for r in placed:
            ph, frags = got[r]
            first, *more = _describe(ph, frags)
            lines.append(f"  {r}: {first}")
            lines += [f"  {' ' * len(r)}  {x}" for x in more]
        if rest:
            lines.append(f"  not a fragment of a phase inside the cut: {' '.join(rest)}")
    return lines
