"""The rule protocol and the planner that runs rules over a module.

Replacements are character spans of statements (never more than one statement each, plus
statements a rule folds away), so everything outside the rewritten statements is the input,
byte for byte; replacement text is one physical line, so line numbers do not move either
(only the inserted declarations add lines, before the first function that needs them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..ptx.emit import Edit, line_byte_offsets, newline_of
from ..ptx.model import Function, Module, Statement


@dataclass
class Replacement:
    """Replace statement `statement`'s text (char span start..end) with `text`, or, when
    `parts` is given, only those (start, end, text) char spans inside it (a symbol renamed
    where it occurs), so the rest of the statement stays the input's bytes."""
    kind: str                    # the rule's kind name, e.g. "sust.v2b16", "rz_round"
    statement: Statement
    text: str
    function: Function
    folded: tuple = ()           # further statements this rewrite removes (their text -> "")
    parts: tuple = ()            # (start, end, text) inside the statement, instead of `text`

    def own_spans(self) -> list:
        """(start, end, text) char spans of the module text edited inside `statement`."""
        st = self.statement
        return list(self.parts) if self.parts else [(st.start, st.end, self.text)]

    def spans(self) -> list:
        """Every (start, end, text) char span this replacement edits, folded statements
        (emptied) included."""
        return self.own_spans() + [(f.start, f.end, "") for f in self.folded]


@dataclass
class RewritePlan:
    replacements: list = field(default_factory=list)
    declarations: dict = field(default_factory=dict)     # name -> declaration text
    issues: list = field(default_factory=list)           # Diagnostic, one per refusal
    skipped: list = field(default_factory=list)          # (kind, statement, why)
    functions: list = field(default_factory=list)        # the functions the rules ran over
    # (replacement, extern text) of every replacement a recipe's own rule wrote: its text
    # goes through the splice-text checks (rrsplice.check.rewrite_checks)
    recipe_texts: list = field(default_factory=list)

    @property
    def counts(self) -> dict:
        out: dict = {}
        for r in self.replacements:
            out[r.kind] = out.get(r.kind, 0) + 1
        return dict(sorted(out.items()))

    @property
    def touched(self) -> list:
        """`function:sN` of every statement a rewrite replaced or removed."""
        out = []
        for r in self.replacements:
            out.append(f"{r.function.name}:{r.statement.sid}")
            out += [f"{r.function.name}:{s.sid}" for s in r.folded]
        return out

    @property
    def ok(self) -> bool:
        return not any(i.severity == "error" for i in self.issues)

    def to_json(self) -> dict:
        return {"counts": self.counts, "statements": len(self.touched),
                "touched": self.touched, "declarations": sorted(self.declarations),
                "skipped": [{"kind": k, "statement": f"{s.function.name}:{s.sid}"
                             if s.function else s.sid, "why": w}
                            for k, s, w in self.skipped]}

    def edits(self, module: Module) -> list[Edit]:
        """Byte edits: each replacement over its statement's span, folded statements emptied,
        declarations inserted (in name order) before the first function that uses them."""
        out = []
        nl = newline_of(module.data)
        bo = module.byte_offset
        for r in self.replacements:
            st = r.statement
            for a, b, text in r.own_spans():
                out.append(Edit(bo(a), bo(b), text.encode("utf-8"),
                                f"{r.kind} {r.function.name}:{st.sid}"))
            for f in r.folded:
                out.append(Edit(bo(f.start), bo(f.end), b"",
                                f"{r.kind} folds {r.function.name}:{f.sid}"))
        if self.declarations and self.replacements:
            first = min((r.function for r in self.replacements), key=lambda f: f.line)
            pos = line_byte_offsets(module.data)[first.line - 1]
            text = b"".join(self.declarations[k].encode("utf-8") + nl
                            for k in sorted(self.declarations))
            out.append(Edit(pos, pos, text + nl, "rewrite declarations"))
        return out


class Rule:
    """A statement rewrite. Subclasses set `name` and implement :meth:`run`."""

    name = "rule"

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:  # pragma: no cover
        """Append the function's replacements, declarations and issues to `plan`; `skip(st)`
        says why a statement must stay as it is (inside a cut), or None."""
        raise NotImplementedError


class StatementRule(Rule):
    """A rule that decides one statement at a time: :meth:`matches` looks at the statement
    (opcode, modifiers, operand shapes), :meth:`rewrite` appends its replacement, issues or
    declarations to the plan. Rules that share state (fresh names, values taken before the
    code runs) are combined with :class:`FirstMatch` so they see statements in order."""

    def matches(self, st: Statement) -> bool:  # pragma: no cover
        raise NotImplementedError

    def rewrite(self, fn: Function, st: Statement, plan: RewritePlan) -> None:  # pragma: no cover
        raise NotImplementedError

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        FirstMatch(self).run(fn, plan, skip)


class FirstMatch(Rule):
    """Statement rules run as one: each statement, in program order, goes to the first rule
    that matches it (a later rule never sees a statement an earlier one claimed)."""

    def __init__(self, *rules: StatementRule):
        self.rules = rules
        self.name = "+".join(r.name for r in rules)

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        for st in fn.statements:
            if st.is_label:
                continue
            rule = next((r for r in self.rules if r.matches(st)), None)
            if rule is None:
                continue
            why = skip(st)
            if why:
                plan.skipped.append((rule.name, st, why))
                continue
            rule.rewrite(fn, st, plan)


def module_declares(module: Module, name: str) -> bool:
    return any(f.name == name for f in module.functions)


def plan_rewrites(module: Module, rules: Iterable[Rule], functions: Iterable[Function],
                  skip=None) -> RewritePlan:
    """Run every rule over every function; `skip(st)` -> reason or None."""
    plan = RewritePlan()
    skip = skip or (lambda st: None)
    rules = list(rules)
    for fn in functions:
        if not fn.has_body:
            continue
        plan.functions.append(fn)
        for rule in rules:
            rule.run(fn, plan, skip)
    # a helper the module already declares is not declared twice
    for name in list(plan.declarations):
        if module_declares(module, name):
            del plan.declarations[name]
    return plan
