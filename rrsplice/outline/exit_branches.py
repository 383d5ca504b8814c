"""The body's exits: branches of the region to labels outside it become branches to the
body's own exit labels, placed after the region's copy; each sets the exit index the call
text dispatches on (rrsplice.analysis.exits) and falls into the return delivery. The retargeting
is a statement rule (:class:`ExitBranches`) of the same plan as the region's other
rewrites."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..analysis.exits import read_dispatch, region_exits, return_labels
from ..ptx.emit import apply_spans
from ..ptx.model import Function, Statement
from ..ptx.scopes import source_name
from ..rewrite.rules import Replacement, RewritePlan, StatementRule
from .common import OutlineError


@dataclass
class ExitPlan:
    """Where the region leaves and what the body does there."""
    exit_of: dict = field(default_factory=dict)     # outside label -> exit index
    retarget: dict = field(default_factory=dict)    # statement index -> [(outside, body label)]
    lines: list = field(default_factory=list)       # the code after the region's copy
    dispatch: object = None                         # rrsplice.analysis.exits.Dispatch


class ExitBranches(StatementRule):
    """A branch of the region to a label outside it: the label becomes the body's exit
    label for that target (only the label's characters change). The exits are worked out
    when the rule runs, after the region's other rules, so their refusals keep their order;
    a refusal is held until the recipe's own rule errors have been reported."""

    name = "outline.exit_branch"

    def __init__(self, fn: Function, rng, site):
        self.fn, self.rng, self.site = fn, rng, site
        self.plan: ExitPlan | None = None
        self.error: OutlineError | None = None

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        if fn is not self.fn:
            return
        try:
            self.plan = plan_exits(self.fn, self.rng, self.site)
        except OutlineError as exc:
            self.error = exc
            return
        super().run(fn, plan, skip)

    def matches(self, st: Statement) -> bool:
        return self.plan is not None and st.index in self.plan.retarget

    def rewrite(self, fn: Function, st: Statement, plan: RewritePlan) -> None:
        parts = []
        assert self.plan is not None  # matches() let only planned statements through
        for outside, label in self.plan.retarget[st.index]:
            m = re.search(r"(?<![\w$])" + re.escape(outside) + r"(?![\w$])", st.text)
            assert m is not None  # the plan retargets labels the statement names
            parts.append((st.start + m.start(), st.start + m.end(), label))
        text = apply_spans(st.text, [(a - st.start, b - st.start, t) for a, b, t in parts])
        plan.replacements.append(Replacement(self.name, st, text, fn, parts=tuple(parts)))

    def result(self) -> ExitPlan:
        """The exit plan, or the refusal the exits earned."""
        if self.error is not None:
            raise self.error
        if self.plan is None:       # the planner never reached the function
            self.plan = plan_exits(self.fn, self.rng, self.site)
        return self.plan


def plan_exits(fn, rng, site) -> ExitPlan:
    """Every outside label the region branches to, its exit index, the body label each such
    branch goes to instead and the exit code after the region's copy; refuses a branch to
    a label the call text does not dispatch on."""
    try:
        dispatch = read_dispatch(site.post)
    except ValueError as exc:
        raise OutlineError(f"the call text's exit dispatch: {exc}") from None
    if dispatch.register is not None:       # the body is text: the name the call text uses
        dispatch.register = source_name(dispatch.register)
    back = return_labels(fn, rng)
    exits = region_exits(fn, rng)
    exit_of: dict = {}
    for ex in exits:
        if ex.target is None:
            raise OutlineError(f"{ex.sid} (line {ex.statement.line}) branches to {ex.label}, "
                               f"which is not a label of {fn.name}")
        if ex.label in back:
            exit_of[ex.label] = 0
        elif ex.label in dispatch.targets:
            exit_of[ex.label] = dispatch.targets[ex.label]
        else:
            raise OutlineError(
                f"{ex.sid} (line {ex.statement.line}) branches to {ex.label} (line "
                f"{ex.target.line}), outside the region: only a branch to the statement right "
                f"after the region returns; the call text must dispatch on an exit index for "
                f"any other target (`setp.eq.u32 %q, %x, K; @%q bra {ex.label};` after reading "
                f"%x back)")
    if not exits:
        return ExitPlan(exit_of, {}, [], dispatch)
    taken = {st.label for st in fn.statements if st.is_label}
    base = "$L__rrsplice_exit"
    while any(t.startswith(base) for t in taken):
        base += "_"
    label = {k: f"{base}{k}" for k in sorted(set(exit_of.values()) | {0})}
    retarget: dict = {}
    for ex in exits:
        retarget.setdefault(ex.statement.index, []).append((ex.label, label[exit_of[ex.label]]))
    lines = []
    if dispatch.register is None:
        lines.append(f"{label[0]}:")
        return ExitPlan(exit_of, retarget, lines, dispatch)
    done = f"{base}_done"
    order = sorted(label)
    for k in order:
        lines.append(f"{label[k]}:")
        lines.append(f"\tmov.u32 {dispatch.register}, {k};")
        if k != order[-1]:
            lines.append(f"\tbra.uni {done};")
    lines.append(f"{done}:")
    return ExitPlan(exit_of, retarget, lines, dispatch)
