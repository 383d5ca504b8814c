"""`check_recipe`: resolve a recipe's target and run the checks its form needs; the
region and control-flow checks of a cut."""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from pathlib import Path

from ..infra.cache import load_module
from ..ptx.model import Function, Module
from ..ptx.parser import blank_comments
from ..ptx.select import SelectionError, StatementRange, lines_to_range
from ..workflow.recipe import Recipe, load_recipe, resolve_module
from .analysis import _analyze
from .calls import _check_applied, _check_splice_text
from .debug import check_point
from .flow import _check_dataflow
from .legacy import _check_body, _check_truncate
from .report import Report
from .rewrite_checks import check_rewrites
from .scope import _check_scopes
from .source import _line_text, _region_text
from .target import build_target, recipe_for_stage
from .uniform import _check_uniform


def check_recipe(recipe, corpus=None, *, stage: str | None = None,
                 module_path: Path | None = None, module: Module | None = None,
                 any_module: bool = False, target: str | None = None) -> Report:
    """Run every check of `recipe` (a Recipe or a path) against its module, then the lints
    of the target profile (`target`, else the recipe's own: see `check.profiles`)."""
    from .profiles import check_profile, default_profile, run_profile
    rec = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
    profile = check_profile(target) if target is not None else default_profile(rec)
    if stage is not None:
        rec, stage = recipe_for_stage(rec, stage)
    note = None
    if module_path is None:
        module_path, note = resolve_module(rec, corpus, any_module=any_module)
    if module is None:
        module = load_module(module_path)
    t = build_target(rec, Path(module_path), module, note, stage)
    rep = Report(recipe=rec, target=t)
    rep.facts.module = str(module_path)
    if note:
        rep.add("info", "module", note)
    if t.fn is not None:
        rep.facts.function = t.fn.name
    _check_entry(rep)
    for check in KIND_CHECKS[t.kind]:
        check(rep)
    check_rewrites(rep)
    rep.facts.target = profile
    run_profile(rep, profile)
    return rep


def _kind_checks() -> dict:
    """Target kind -> the checks that run on it, in order (each takes the Report, whose
    `target` is the typed context: kind, function, lines, text, range)."""
    return {"region": (_check_applied, _check_region),
            "point": (check_point,),
            "truncate": (_check_applied, _check_truncate),
            "body": (_check_applied, _check_body),
            "none": ()}


def _check_entry(rep: Report) -> None:
    t = rep.target
    rec = t.recipe
    if t.kind != "none" and t.fn is None:
        if t.kind == "body":
            rep.add("error", "cut-range", f"no function {rec.replace_body!r} with a body in "
                    f"{t.path.name}" if rec.replace_body is not True
                    else f"{t.path.name} has no single entry to replace")
        else:
            rep.add("error", "cut-range", f"line {t.first_line} lies in no function body of "
                    f"{t.path.name} (it has {t.module.line_count} lines)", line=t.first_line)
        return
    ent = rec.entry
    if ent and t.fn is not None and t.fn.name != ent and t.kind != "none":
        rep.add("warning", "entry", f"the recipe is for {ent}, but its lines fall in "
                f"{t.fn.name}", line=t.first_line)


def _check_region(rep: Report) -> None:
    t = rep.target
    rec, fn, m = t.recipe, t.fn, t.module
    if fn is None:
        return
    first, last = t.first_line, t.last_line
    # region forms always set both lines and pick a function with a body (ptx.select.function_at)
    assert first is not None and last is not None and fn.body is not None
    nlines = m.line_count
    if last > nlines:
        rep.add("error", "cut-range", f"the cut ends at line {last}, past the end of "
                f"{t.path.name} ({nlines} lines)", line=last)
        return
    body = fn.body
    if not (body.line < first and last < body.end_line):
        rep.add("error", "cut-range", f"lines {first}-{last} are not inside {fn.name}'s body "
                f"(lines {body.line}-{body.end_line})", line=first)
        return
    try:
        rng = lines_to_range(fn, first, last)
    except SelectionError as exc:
        rep.add("error", "cut-range", str(exc), line=first)
        return
    t.rng = rng
    fs, ls = fn.statements[rng.first - 1], fn.statements[rng.last - 1]
    rep.facts.lines, rep.facts.statements = [first, last], str(rng)
    rep.facts.statement_count = len(rng)
    rep.add("info", "cut-range", f"lines {first}-{last} are statements {rng} of {fn.name} "
            f"({len(rng)} statements, {fs.sid} at line {fs.line} to {ls.sid} ending at line "
            f"{ls.end_line})", st=fs)
    ccut = rec.const("CUT_CALL")
    if rec.form == "cut_call" and isinstance(ccut, (tuple, list)) and tuple(ccut) != rec.cut_call:
        rep.add("warning", "cut-range", f"recipe() cuts {rec.cut_call} but CUT_CALL is "
                f"{tuple(ccut)}")
    # braces: the cut must not open or close a block it does not also close/open
    clean = blank_comments(_region_text(m, first, last))
    depth, low = 0, 0
    for mt in re.finditer(r"[{}]", clean):
        if mt.group(0) == "{":
            depth += 1
        else:
            depth -= 1
            low = min(low, depth)
    if depth != 0 or low < 0:
        rep.add("error", "cut-block", f"lines {first}-{last} cut a {{ }} block in the middle "
                f"(brace balance {depth:+d}, lowest {low})", line=first)
    for d in fn.body.decls:
        if first <= d.line <= last:
            rep.add("warning", "cut-decl", f"the cut removes the declaration of {d.name}",
                    line=d.line)
    if rec.form == "delete" and rec.delete_check:
        for ln, want in ((first, rec.delete_check[0]), (last, rec.delete_check[1])):
            if want is not None and want.strip() not in _line_text(m, ln):
                rep.add("error", "cut-text", f"delete_check expects {want.strip()!r} on line "
                        f"{ln}, which reads {_line_text(m, ln).strip()!r}", line=ln)
    _check_scopes(rep, fn, first, last)
    sp = _check_splice_text(rep, t.text, t.extern, fn, "call text" if rec.form == "cut_call"
                            else "insert text", rng=rng)
    _check_control(rep, fn, rng, _dispatched(rep, sp), _splice_labels(sp))
    _check_uniform(rep, fn, rng, t.text or "")
    if sp is not None and sp.fn is not None:
        _check_dataflow(rep, fn, rng, sp)


def _dispatched(rep: Report, sp) -> set:
    """Labels the splice text branches to on the callee's exit index, after its call."""
    from ..analysis.exits import read_dispatch
    if sp is None or sp.fn is None or not sp.calls:
        return set()
    after = sp.statements[sp.statements.index(sp.calls[-1]) + 1:]
    try:
        return set(read_dispatch(after).targets)
    except ValueError as exc:
        rep.add("error", "exit-dispatch", f"the splice text's exit dispatch: {exc}")
        return set()


def _splice_labels(sp) -> set:
    """Labels the splice text defines itself (an entry label it keeps in front of its call)."""
    if sp is None or sp.fn is None:
        return set()
    return {st.label for st in sp.statements if st.is_label}


def _check_control(rep: Report, fn: Function, rng: StatementRange,
                   dispatched: AbstractSet[str] = frozenset(),
                   kept: AbstractSet[str] = frozenset()) -> None:
    """Single entry; exits only to the statement after the region (or labels directly in
    front of it) or to labels the splice text dispatches to after its call. A branch from
    outside to the region's first statement (its head label) is an entry only when the
    splice text keeps that label: the cut removes it from the kernel."""
    from ..analysis.regions import region_of
    region = region_of(_analyze(rep, fn), rng, dispatched)
    stmts = fn.statements
    for e in region.edges:
        st, to = stmts[e.source - 1], stmts[e.target - 1]
        if e.kind == "head" and to.label not in kept:
            rep.add("error", "label-entry", f"{st.sid} `{st.text.strip()}` branches to "
                    f"{to.label} (line {to.line}), the region's first statement, which "
                    f"the cut removes: the splice text must begin with `{to.label}:`",
                    st=st)
        elif e.kind == "side":
            rep.add("error", "label-entry", f"{to.sid} ({to.label or to.opcode}, "
                    f"line {to.line}) inside the region is targeted from outside it "
                    f"by {st.sid}: `{st.text.strip()}`", st=st)
        elif e.kind == "stray":
            rep.add("error", "branch-exit", f"{st.sid} `{st.text.strip()}` leaves the "
                    f"region to {to.sid} ({to.label or to.opcode}, line {to.line}), which "
                    f"is neither the statement after the region nor a label the splice "
                    f"text dispatches to on the callee's exit index", st=st)
    for i in region.indirect:
        st = stmts[i - 1]
        rep.add("warning", "control", f"{st.sid} `{st.text.strip()}` branches through a "
                f"table inside the region: a native body must reproduce it; `outline` and "
                f"`verify` cannot take a branch table along", st=st)
    counts: dict = {}
    for i in range(rng.first, rng.last + 1):
        st = stmts[i - 1]
        if st.base in ("bar", "barrier", "ret", "exit", "trap"):
            counts.setdefault(st.base, []).append(st)
    for base, sts in counts.items():
        rep.add("warning", "control", f"{len(sts)} `{base}` inside the region (first "
                f"{sts[0].sid}: `{sts[0].text.strip()}`); the native body must reproduce it",
                st=sts[0])


KIND_CHECKS = _kind_checks()
