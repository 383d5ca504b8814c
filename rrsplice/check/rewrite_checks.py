"""The recipe's statement rewrites (``sust``, ``rz_round``, its own rules): plan them on the
target module, report what they touch and everything that stops them."""

from __future__ import annotations

from ..rewrite import plan_rewrites, rules_for_recipe
from ..workflow.recipe import matches_family
from .calls import _check_splice_text
from .report import Report


def _skip_for(t):
    """Statements the form's own edit removes are not rewritten (the edits would overlap)."""
    if t.kind == "region" and t.first_line is not None:
        a, b = t.first_line, t.last_line

        def skip(st):
            return "inside the cut" if a <= st.line <= b or a <= st.end_line <= b else None
        return skip
    if t.kind == "truncate" and t.first_line is not None:
        return lambda st: "after the truncation" if st.end_line > t.first_line else None
    if t.kind == "body" and t.fn is not None:
        fn = t.fn
        return lambda st: "in the replaced body" if st.function is fn else None
    return None


def rewrite_functions(t) -> list:
    """The functions the rewrites run over: the recipe's family (``entries``) or named
    ``entry`` when it gives one, else every function with a body."""
    rec = t.recipe
    fns = [f for f in t.module.functions if f.has_body]
    if rec.entries is not None:
        return [f for f in fns if matches_family(rec, f.name)]
    if rec.entry_key:
        return [f for f in fns if f.name == rec.entry_key]
    return fns


def check_rewrites(rep: Report) -> None:
    t = rep.target
    rules = rules_for_recipe(t.recipe)
    if not rules or t.kind == "point" and t.stage and t.recipe.form != "debug":
        return
    plan = plan_rewrites(t.module, rules, rewrite_functions(t), _skip_for(t))
    t.rewrites = plan
    rep.facts.rewrites = plan
    for i in plan.issues:
        rep.append(i)
    _check_recipe_texts(rep, plan)
    counts = plan.counts
    if counts:
        rep.add("info", "rewrite", "rewrites: " + ", ".join(f"{k} {n}" for k, n in
                                                            counts.items())
                + f" ({len(plan.touched)} statements touched in "
                + ", ".join(sorted({r.function.name for r in plan.replacements})) + ")")
    for rule in rules:
        if not any(k == rule.name or k.startswith(rule.name + ".") for k in counts) \
                and not any(i.code.startswith("rewrite-") for i in plan.issues):
            rep.add("warning", "rewrite-none", f"the recipe asks for {rule.name} rewrites, "
                    "but no statement of " + (", ".join(f.name for f in plan.functions)
                                              or "any function") + " matched")
    for kind, st, why in plan.skipped:
        if why != "kind not selected":
            rep.add("info", "rewrite", f"{kind}: {st.sid} left as it is ({why})", st=st)


def _check_recipe_texts(rep: Report, plan) -> None:
    """A recipe rule's replacement and extern are splice text like the cut's call: the same
    checks (parses, stays inside its function, declares what it uses, calls what its extern
    declares; the extern holds declarations only). Each distinct text is checked once."""
    seen = set()
    for r, extern in plan.recipe_texts:
        key = (r.text.strip(), extern, r.function.name)
        if key in seen:
            continue
        seen.add(key)
        _check_splice_text(rep, r.text.strip() + "\n", extern, r.function,
                           f"rule {r.kind!r} at {r.function.name}:{r.statement.sid}",
                           need_call=False, record=False)
