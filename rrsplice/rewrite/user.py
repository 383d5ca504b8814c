"""A recipe's own rules: ``rewrites=[dict(opcode=..., replace=..., extern=..., name=...)]``.

* ``opcode``: the exact opcode to match (``"sust.b.3d.b32.trap"``), or a list of them;
* ``replace``: a template (``str.format`` with ``{0}``, ``{1}``... the operands' text,
  ``{guard}`` the guard with its trailing space or ``""``, ``{opcode}``), or a function
  ``FN(opcode, [operand texts], guard) -> text``; the result replaces the statement;
* ``extern``: declarations the replacement needs (added once), optional;
* ``name``: the kind reported in the counts (default ``rewrite.<opcode>``).
"""

from __future__ import annotations

from ..ptx.diagnostic import Diagnostic, at
from ..ptx.model import Function
from ..workflow.recipe import RecipeError, call_user
from ..workflow.recipe_process import ProcessFailure, RemoteFunction
from .rules import Replacement, RewritePlan, Rule


class UserRule(Rule):
    def __init__(self, opcodes, replace, extern=None, name=None, source="recipe"):
        self.opcodes = set(opcodes)
        self.replace = replace
        self.extern = extern
        self.name = name or "rewrite." + sorted(self.opcodes)[0]
        self.source = source

    def run(self, fn: Function, plan: RewritePlan, skip) -> None:
        todo = []
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
            todo.append((st, ops, guard))
        for (st, _ops, _guard), (text, error) in zip(todo, self._texts(todo), strict=False):
            if error is not None:
                plan.issues.append(Diagnostic("error", "rewrite-rule", f"{st.sid}: {error}",
                                              **at(st)))
                continue
            if not isinstance(text, str) or "\n" in text.strip("\n"):
                plan.issues.append(Diagnostic("error", "rewrite-rule", f"{st.sid}: rule "
                                              f"{self.name!r} must produce one line of text",
                                              **at(st)))
                continue
            lead = st.text[:len(st.text) - len(st.text.lstrip())]
            rep = Replacement(self.name, st, lead + text.strip("\n"), fn)
            plan.replacements.append(rep)
            plan.recipe_texts.append((rep, self.extern))
            if self.extern:
                plan.declarations[self.name] = self.extern.strip()

    def _texts(self, todo: list) -> list:
        """(replacement text, None) or (None, why not) for each (statement, operands,
        guard). A function of the recipe runs in the recipe's own process, all statements
        in one round trip; any exception there, an exit included, is a finding."""
        if not callable(self.replace):
            out: list[tuple[str | None, str | None]] = []
            for st, ops, guard in todo:
                try:
                    out.append((self.replace.format(*ops, guard=guard, opcode=st.opcode), None))
                except (IndexError, KeyError, ValueError, AttributeError, TypeError) as exc:
                    out.append((None, f"the template of rule {self.name!r} of {self.source} "
                                f"does not fit `{st.opcode}`: {type(exc).__name__}: {exc}"))
            return out
        what = f"rule {self.name!r}"
        if isinstance(self.replace, RemoteFunction) and todo:
            try:
                got = self.replace.map(what, [(st.opcode, ops, guard)
                                              for st, ops, guard in todo])
            except ProcessFailure as exc:
                return [(None, f"{self.source}: {exc.message}")] * len(todo)
            return [(v, None) if ok else (None, v)
                    for ok, v in got]
        out = []
        for st, ops, guard in todo:
            try:
                out.append((call_user(self.source, "rewrites", what, self.replace,
                                      st.opcode, ops, guard), None))
            except RecipeError as exc:
                out.append((None, exc.message))
        return out


def user_rules(rec) -> list[Rule]:
    return [UserRule(r["opcode"], r["replace"], r.get("extern"), r.get("name"),
                     str(rec.path)) for r in (rec.rewrites or [])]
