"""A recipe's own rules: ``rewrites=[dict(opcode=..., replace=..., extern=..., name=...)]``.

* ``opcode``: the exact opcode to match (``"sust.b.3d.b32.trap"``), or a list of them;
* ``replace``: a template (``str.format`` with ``{0}``, ``{1}``... the operands' text,
  ``{guard}`` the guard with its trailing space or ``""``, ``{opcode}``), or a function
  ``FN(opcode, [operand texts], guard) -> text``; the result replaces the statement;
* ``extern``: declarations the replacement needs (added once), optional;
* ``name``: the kind reported in the counts (default ``rewrite.<opcode>``).
"""

from __future__ import annotations

from ..model import Function
from ..recipe import RecipeError, call_user
from .rules import Issue, Replacement, RewritePlan, Rule

USER_KEYS = {"opcode", "replace", "extern", "name"}


class UserRule(Rule):
    def __init__(self, opcodes, replace, extern=None, name=None, source="recipe"):
        self.opcodes = set(opcodes)
        self.replace = replace
        self.extern = extern
        self.name = name or "rewrite." + sorted(self.opcodes)[0]
        self.source = source

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        for st in fn.statements:
            if st.is_label or st.opcode not in self.opcodes:
                continue
            why = skip(st)
            if why:
                plan.skipped.append((self.name, st, why))
                continue
            ops = [str(o) for o in st.operands]
            guard = (f"@{'!' if st.guard.negated else ''}{st.guard.reg.name} "
                     if st.guard is not None else "")
            try:
                if callable(self.replace):
                    # the recipe's own code: contained like recipe() itself (any exception,
                    # SystemExit included, becomes a finding; prints go to stderr)
                    text = call_user(self.source, "rewrites", f"rule {self.name!r}",
                                     self.replace, st.opcode, ops, guard)
                else:
                    text = self.replace.format(*ops, guard=guard, opcode=st.opcode)
            except RecipeError as exc:
                plan.issues.append(Issue("error", "rewrite-rule", f"{st.sid}: {exc.message}",
                                         st))
                continue
            except (IndexError, KeyError, ValueError) as exc:
                plan.issues.append(Issue("error", "rewrite-rule", f"{st.sid}: the template of "
                                         f"rule {self.name!r} of {self.source} does not fit "
                                         f"`{st.opcode}`: {type(exc).__name__}: {exc}", st))
                continue
            if not isinstance(text, str) or "\n" in text.strip("\n"):
                plan.issues.append(Issue("error", "rewrite-rule", f"{st.sid}: rule "
                                         f"{self.name!r} must produce one line of text", st))
                continue
            lead = st.text[:len(st.text) - len(st.text.lstrip())]
            plan.replacements.append(Replacement(self.name, st, lead + text.strip("\n"), fn))
            if self.extern:
                plan.declarations[self.name] = self.extern.strip()


def user_rules(rec) -> list[Rule]:
    return [UserRule(r["opcode"], r["replace"], r.get("extern"), r.get("name"),
                     str(rec.path)) for r in (rec.rewrites or [])]
