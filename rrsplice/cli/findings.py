"""Printing a check report: findings as compiler-style diagnostics on stderr, the facts of
the cut as a two-column table on stdout (shared by check, apply, outline and verify)."""

from __future__ import annotations

from ..check.facts import Facts
from .output import Grid, print_diag


def regs_text(regs) -> str:
    """A register list, whole (never cut: pipes and files get every name)."""
    return " ".join(regs or [])


def live_in_text(classes: dict) -> str:
    """`158 (derivable 96, passed 62)`: the live-in classes of a cut, worded the same way by
    check, apply, liveness, outline and verify."""
    total = sum(len(v) for v in classes.values())
    return f"{total} (" + ", ".join(f"{k} {len(v)}" for k, v in sorted(classes.items())) + ")"


def loaded_text(loaded: list, classes: dict) -> str:
    """The body's parameter loads, split into the live-in registers `check` counts as
    passed and the extra values the call hands over (e.g. a .shared array's address)."""
    live_passed = set(classes.get("passed", []))
    extra = [r for r in loaded if r not in live_passed]
    text = f"{len(loaded)}: {regs_text(loaded)}"
    if classes:
        text += (f" ({len(loaded) - len(extra)} live-in passed"
                 + (f" + {len(extra)} not live-in: {regs_text(extra)}" if extra else "") + ")")
    return text


def print_findings(report, verbose: bool = False, errors_only: bool = False) -> None:
    """Every error and warning (and with `verbose`, every info finding as a note)."""
    for f in report.located():
        if f.severity == "info" and not verbose:
            continue
        if errors_only and f.severity != "error":
            continue
        print_diag(f)


def facts_grid(facts: Facts) -> Grid:
    """The facts a check established about the cut (module, function, lines, live sets)."""
    g = Grid("fact", "value", header=False)

    def row(k, v):
        if v not in (None, [], ""):
            g.add_row(k, str(v))

    row("module", facts.module)
    row("function", facts.function)
    row("target", facts.target)
    if facts.lines:
        a, b = facts.lines
        row("cut", f"lines {a}-{b} ({b - a + 1} lines), statements {facts.statements} "
            f"({facts.statement_count})")
    if facts.mma is not None:
        from ..infra.words import count
        row("mma", f"{facts.mma} in {count(facts.phases, 'phase')}" if facts.phases is not None
            else f"{facts.mma}; phases not found"
            + (f" ({facts.phases_error})" if facts.phases_error else ""))
    if facts.passed is not None:
        row("passed", f"{len(facts.passed)}: {regs_text(facts.passed)}")
    if facts.returned is not None:
        row("returned", f"{len(facts.returned)}: {regs_text(facts.returned)}")
    if facts.live_in is not None:
        row("live-in", live_in_text(facts.live_in_classes or {}))
    if facts.live_out is not None:
        row("live-out", f"{len(facts.live_out)}: {regs_text(facts.live_out)}")
    sc = facts.scratch
    if sc:
        row("scratch", f"{sc.symbol} ({sc.bytes} bytes, stride {sc.stride})")
    st = facts.stage
    if st:
        row("stage", f"{st.name} after line {st.line} ({st.after}): {regs_text(st.registers)}")
    rw = facts.rewrites
    if rw is not None:
        row("rewrites", (", ".join(f"{k} {n}" for k, n in rw.counts.items()) or "none")
            + f" ({len(rw.touched)} statement(s) touched"
            + (f", {len(rw.skipped)} left" if rw.skipped else "") + ")")
    return g
