"""The API the users' build (``make_ptx``) calls to apply recipes.

Example, a build step that patches every swin layer it has a recipe for::

    from pathlib import Path
    from rrsplice.workflow.hook import HookError, apply_recipe, kernel_recipe

    RECIPES = Path("d4r/kernels/rr")
    for kernel in ("cuda_dldn_engine_swin_dec1_kernel", "cuda_dldn_engine_swin_dec2_kernel"):
        recipe = kernel_recipe(kernel, RECIPES)      # .../swin_dec2.py or swin_dec2_recipe.py
        if recipe is None:
            continue                                  # no recipe: keep NVIDIA's PTX
        try:
            patched = apply_recipe(recipe, corpus=Path.home() / ".cache/d4r-rr-corpus",
                                   out=Path("build/ptx") / f"{kernel}.ptx")
        except HookError as exc:                      # every failure is a HookError
            raise SystemExit(f"{kernel}: {exc}")
        print("patched", patched)

``apply_recipe`` runs every ``rrsplice check`` check first and writes nothing when one
fails; the patched module is written atomically (a temporary file renamed into place), so
a failed or interrupted build never leaves a half-written file. ``D4R_RRSWIN_DEBUG`` is
honoured the way the recipe reads it (the recipe's ``recipe()`` sees the variable), and
``stage=`` selects one of the recipe's ``stages()`` explicitly.

Families: ``apply_family_recipe(recipe, corpus_dir, out_dir)`` applies a recipe whose
``recipe()`` gives ``entries=REGEX`` to every kernel of the corpus the pattern names, in
parallel (a cut is ported to each variant by aligning its code; a variant that does not
align is refused and reported, the others are written).

Errors: :class:`HookError` (a subclass of ``rrsplice.ptx.errors.RRSpliceError``) with
``.kind`` one of ``"recipe"`` (the recipe does not import / ``recipe()`` fails / its result is
malformed), ``"module"`` (the PTX module is not in the corpus), ``"check"`` (the checks
found errors; ``.report`` holds them), ``"parse"``, ``"apply"``, ``"ptxas"`` (with
``ptxas=[...]``: the output did not assemble).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

from ..ptx.errors import ParseError, RRSpliceError

__all__ = ["HookError", "apply_family_recipe", "apply_recipe", "kernel_recipe",
           "recipe_kernel"]


class HookError(RRSpliceError):
    """Any failure of :func:`apply_recipe`; ``kind`` says which step failed."""

    def __init__(self, kind: str, message: str, *, recipe=None, report=None, cause=None,
                 path=None):
        self.kind = kind
        self.recipe = recipe
        self.report = report
        self.cause = cause
        self._as_cause = isinstance(cause, RRSpliceError) and message == str(cause)
        if isinstance(cause, RRSpliceError) and self._as_cause:
            d = cause.diag                # the step's own error: its place and code
            super().__init__(d.message, path=d.path, line=d.line, column=d.column,
                             code=cause.code, notes=d.notes)
        else:
            super().__init__(message, path=path)

    def _text(self) -> str:
        return str(self.cause) if self._as_cause else super()._text()

    def to_json(self) -> dict:
        return {"kind": self.kind, "recipe": str(self.recipe) if self.recipe else None,
                "message": str(self)}


def apply_recipe(recipe_path, corpus=None, out=None, *, stage: str | None = None,
                 ptxas: list | None = None) -> Path:
    """Check and apply the recipe at `recipe_path`; return the patched module's path.

    `corpus` overrides the corpus lookup (``$RRSPLICE_CORPUS``, ``[tool.rrsplice] corpus``,
    ``~/.cache/d4r-rr-corpus``, the bundled fixtures); `out` is the output file (or an
    existing directory; default ``out/<module>.<recipe>.ptx`` next to the module). With
    `ptxas` (e.g. ``["sm_89", "sm_120"]``) the output is also assembled with ``ptxas -c``.
    """
    from ..check import CheckFailed
    from .recipe import ModuleNotFound, RecipeError
    from .splice import apply
    try:
        res = apply(Path(recipe_path), corpus=corpus, out=out, stage=stage, ptxas=ptxas)
    except ModuleNotFound as exc:
        raise HookError("module", str(exc), recipe=recipe_path, cause=exc) from None
    except RecipeError as exc:
        raise HookError("recipe", str(exc), recipe=recipe_path, cause=exc) from None
    except CheckFailed as exc:
        raise HookError("check", str(exc), recipe=recipe_path, report=exc.report,
                        cause=exc) from None
    except ParseError as exc:
        raise HookError("parse", exc.render(), recipe=recipe_path, cause=exc) from None
    except RRSpliceError as exc:
        raise HookError("apply", str(exc), recipe=recipe_path, cause=exc) from None
    bad = [a for a in res.assembled if not a.ok]
    if bad:
        raise HookError("ptxas", "does not assemble for " + ", ".join(a.arch for a in bad)
                        + ":\n" + bad[0].log.strip()[-2000:], path=res.output,
                        recipe=recipe_path, report=res.report)
    assert res.output is not None  # apply() wrote the module
    return res.output


def apply_family_recipe(recipe_path, corpus_dir, out=None, *, jobs=None) -> list[Path]:
    """Apply a family recipe (``entries=`` pattern) to every kernel of `corpus_dir` it
    names, in parallel (a cut is ported to each variant); the outputs, in corpus order.

    Raises :class:`HookError` (``kind="family"``, ``.report`` = the rows) when any kernel
    is refused or fails; the others are written all the same.
    """
    from .family import apply_family
    try:
        rows = apply_family(Path(recipe_path), Path(corpus_dir), out=out, jobs=jobs)
    except RRSpliceError as exc:
        raise HookError("recipe", exc.render(), recipe=recipe_path, cause=exc) from None
    bad = [r for r in rows if r.status != "ok"]
    if bad:
        raise HookError("family", f"{len(bad)} of {len(rows)} kernel(s) not applied:\n"
                        + "\n".join(f"  {r.module}:{r.entry}: {r.status}: {r.message}"
                                     for r in bad), recipe=recipe_path, report=rows)
    return [Path(cast(str, r.output)) for r in rows]  # every row is ok: each has its output


_KERNEL = re.compile(r"^cuda_dldn_engine_swin_([A-Za-z0-9]+)_kernel$")


def kernel_recipe(kernel_name: str, recipes_dir) -> Path | None:
    """The recipe for `kernel_name` in `recipes_dir`, or None when it has none.

    ``cuda_dldn_engine_swin_<layer>_kernel`` maps to ``<recipes_dir>/swin_<layer>.py``, else
    ``<recipes_dir>/swin_<layer>_recipe.py`` (the seed project's name). Any other kernel
    name maps to ``<recipes_dir>/<kernel_name>.py`` if that exists.
    """
    d = Path(recipes_dir)
    m = _KERNEL.match(kernel_name)
    names = ([f"swin_{m.group(1)}.py", f"swin_{m.group(1)}_recipe.py"] if m
             else [f"{kernel_name}.py"])
    for n in names:
        p = d / n
        if p.is_file():
            return p
    return None


def recipe_kernel(recipe_path) -> str | None:
    """The inverse: the kernel a recipe file name is for (``swin_dec2_recipe.py`` ->
    ``cuda_dldn_engine_swin_dec2_kernel``), or None."""
    m = re.match(r"^swin_([A-Za-z0-9]+?)(?:_recipe)?$", Path(recipe_path).stem)
    return f"cuda_dldn_engine_swin_{m.group(1)}_kernel" if m else None
