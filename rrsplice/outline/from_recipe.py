"""Outlining straight from a `cut_call` recipe: load it, find its module and function,
and build the body."""

from __future__ import annotations

from ..ptx.model import Function, Module
from ..ptx.parser import parse
from ..ptx.select import function_at, lines_to_range, select_function
from .body import build_outline
from .common import OutlineError


def outline_recipe(recipe_path, corpus=None, analysis=None):
    """Load a `cut_call` recipe, find its module and build its body.
    Returns (Outline, module path, resolve note)."""
    from ..workflow.recipe import load_recipe, resolve_module
    rec = load_recipe(recipe_path)
    if rec.cut_call is None or rec.call is None or rec.extern is None:
        raise OutlineError("outline needs a cut_call recipe (cut_call, call, "
                           f"extern); this one is a {rec.form!r} recipe", path=rec.path)
    path, note = resolve_module(rec, corpus)
    module = parse(path)
    fn = recipe_function(module, rec)
    first, end = rec.cut_call
    rng = lines_to_range(fn, first, end - 1)
    from ..rewrite import rules_for_recipe
    out = build_outline(module, fn, rng, rec.call, rec.extern, lines=(first, end),
                        analysis=analysis, rules=rules_for_recipe(rec))
    if note:
        out.notes.insert(0, note)
    return out, path, rec


def recipe_function(module: Module, rec) -> Function:
    """The function a `cut_call` recipe cuts: the one its first line falls in, else the
    one its entry names (or the module's only candidate)."""
    fn = function_at(module, rec.cut_call[0])
    if fn is None:
        fn, _ = select_function(module, rec.entry)
    return fn
