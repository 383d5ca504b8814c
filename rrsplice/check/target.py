"""Where a recipe acts: the parsed module, the function its lines fall in, and the
debug stage it names."""

from __future__ import annotations

from pathlib import Path

from ..ptx.model import Module
from ..ptx.select import function_at
from ..workflow.forms import build_form_target
from ..workflow.recipe import Recipe, RecipeError, load_recipe
from .report import Target


def qualify_stage(rec: Recipe, name: str) -> str:
    """`p1_out` -> `dec2.p1_out` for a dec2 recipe; qualified names are kept."""
    return name if "." in name else f"{rec.layer}.{name}"


def find_stage(rec: Recipe, name: str) -> tuple[str, tuple]:
    """The recipe's stage `name` (qualified or not) -> (qualified name, (line, regs))."""
    layer = rec.layer
    want = qualify_stage(rec, name)
    if want.split(".", 1)[0] != layer:
        raise RecipeError(rec.path, f"stage {name!r} belongs to layer "
                          f"{want.split('.', 1)[0]!r}, not to this recipe's layer {layer!r}",
                          "stages")
    table = rec.stages()
    for k, v in table.items():
        if qualify_stage(rec, k) == want:
            return want, v
    known = ", ".join(qualify_stage(rec, k) for k in table) or "none"
    raise RecipeError(rec.path, f"no debug stage {want!r} (stages: {known})", "stages")


def recipe_for_stage(rec: Recipe, stage: str) -> tuple[Recipe, str | None]:
    """The recipe and stage name to build debug stage `stage` with: the recipe's own
    `stages()` entry when it has one; else the recipe re-run with `$D4R_RRSWIN_DEBUG` set
    to the stage, for recipes that read the variable and return the `debug` form."""
    table = rec.stages()
    want = qualify_stage(rec, stage)
    if any(qualify_stage(rec, k) == want for k in table) or table:
        return rec, stage
    again = load_recipe(rec.path, debug=stage)
    if again.form == "debug":
        return again, None
    return rec, stage


def build_target(rec: Recipe, path: Path, module: Module, note: str | None = None,
                 stage: str | None = None) -> Target:
    """Where the recipe (or the debug stage `stage`) acts on `module`."""
    t = Target(recipe=rec, path=path, module=module, note=note, extern=rec.extern)
    if stage is not None:
        qname, (line, regs) = find_stage(rec, stage)
        t.kind, t.stage, t.first_line, t.point_regs = "point", qname, line, list(regs)
        t.fn = function_at(module, line)
        t.extern = None
        return t
    build_form_target(t, rec, module)
    return t
