"""The package layout is the pipeline: the front end (`ptx/`) knows nothing of the analyses,
the analyses nothing of fragments or the workflow, and so on up. Every import is read from
the source, at module level and inside functions alike, so a layer cannot be crossed by a
function-level import either.

The recipe itself (`workflow/recipe.py`, its forms and the process its code runs in) is a
layer of its own below `rewrite/` and `check/`, which read recipes; the rest of `workflow/`
sits above everything but `cli/`. A module's private names (`_x`) stay in its package."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "rrsplice"

#: the modules of `workflow/` that make up the recipe layer
RECIPE = ("workflow/recipe.py", "workflow/forms.py", "workflow/recipe_process.py",
          "workflow/recipe_runner.py")
INFRA = {"infra.arch", "infra.cache", "infra.config", "infra.fsutil", "infra.tools",
         "infra.words", "infra.workers"}
BELOW_CHECK = {"ptx", "analysis", "fragments", "recipe", "rewrite"} | INFRA

# layer -> the layers it may import (itself included)
ALLOWED = {
    "ptx": {"ptx", "infra.fsutil"},
    "analysis": {"ptx", "analysis", "infra.fsutil", "infra.arch"},
    "fragments": {"ptx", "analysis", "fragments", "infra.fsutil", "infra.arch"},
    "recipe": {"ptx", "recipe", "infra.fsutil", "infra.config"},
    "rewrite": {"ptx", "analysis", "recipe", "rewrite"},
    "check": BELOW_CHECK | {"check"},
    "outline": BELOW_CHECK | {"check", "outline"},
    "body": BELOW_CHECK | {"check", "body"},
    "lift": BELOW_CHECK | {"check", "outline", "body", "lift"},
    "workflow": BELOW_CHECK | {"check", "outline", "body", "lift", "workflow"},
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _import_nodes(text: str) -> list:
    """The import statements of `text`, at any depth (parsed once for all the tests)."""
    return [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _imports(path: Path, text: str):
    """(line, absolute module imported, name) of every import in `text`, the source of
    `path`."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in _import_nodes(text):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield node.lineno, target, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ""


def _layer(parts: list) -> str:
    """The layer of module `rrsplice.<parts>` (`infra` modules are one layer each)."""
    if parts[0] == "infra" and len(parts) > 1:
        return f"infra.{parts[1]}"
    if "/".join(parts[:2]) + ".py" in RECIPE:
        return "recipe"
    return parts[0]


def _layer_of(target: str, name: str) -> str:
    parts = target.split(".")[1:]
    sub = PKG.joinpath(*parts, name or ".")
    if name and (sub.with_suffix(".py").is_file() or sub.is_dir()):  # from .infra import cache
        parts = [*parts, name]
    return _layer(parts) if parts else name


def _source_layer(path: Path) -> str:
    return _layer(list(path.relative_to(PKG).with_suffix("").parts))


def _sources() -> list:
    return [(p, p.read_text()) for p in sorted(PKG.rglob("*.py"))
            if _source_layer(p) in ALLOWED]


def _violations(sources) -> list:
    out = []
    for path, text in sources:
        layer = _source_layer(path)
        allowed = ALLOWED[layer]
        for line, target, name in _imports(path, text):
            if not target.startswith("rrsplice"):
                continue
            got = _layer_of(target, name)
            if got not in allowed:
                out.append(f"{path.relative_to(ROOT)}:{line}: {layer} imports {target}"
                           f" ({name})")
    return out


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private_imports(path: Path, text: str) -> list:
    """`path:line: module.name` for each private name (`_x`, not `__x__`) that `text`
    imports from another rrsplice package."""
    mine = _package(_module(path))
    out = []
    for line, target, name in _imports(path, text):
        if (target.startswith("rrsplice") and name.startswith("_")
                and not name.startswith("__") and _package(target) != mine):
            out.append(f"{path.relative_to(ROOT)}:{line}: {target}.{name}")
    return out


def test_lower_layers_never_import_upwards():
    assert _violations(_sources()) == []


def test_the_contract_sees_upward_imports_at_any_depth():
    """The checker itself: upward imports inside a function, by package name or from a
    sibling, are reported; imports the layer may make are not."""
    planted = PKG / "analysis" / "planted.py"
    text = ("from ..ptx.model import Function\n"
            "from ..infra import fsutil\n"
            "def f():\n    from ..workflow.recipe import Recipe\n"
            "    from .. import check\n"
            "    from ..infra.cache import load_module\n")
    found = _violations([(planted, text)])
    assert found == [
        "rrsplice/analysis/planted.py:4: analysis imports rrsplice.workflow.recipe (Recipe)",
        "rrsplice/analysis/planted.py:5: analysis imports rrsplice (check)",
        "rrsplice/analysis/planted.py:6: analysis imports rrsplice.infra.cache (load_module)",
    ], found


def test_every_module_lives_in_a_pipeline_package():
    """No flat modules beside the packages: only the package's own entry points."""
    flat = sorted(p.name for p in PKG.glob("*.py"))
    assert flat == ["__init__.py", "__main__.py"]


def test_check_reads_recipes_but_not_the_workflow_above_it():
    """The contract holds the middle layers too: check/ may import the recipe layer of
    workflow/ but nothing else of it, rewrite/ not check/, the recipe not the rewrites."""
    root = PKG
    text = ("from ..workflow.recipe import Recipe\n"
            "from ..workflow.forms import build_form_target\n"
            "def f():\n    from ..workflow.stages import add_stage\n"
            "    from ..workflow import scaffold\n"
            "    from ..outline.body import build_outline\n")
    found = _violations([(root / "check" / "planted.py", text)])
    assert found == [
        "rrsplice/check/planted.py:4: check imports rrsplice.workflow.stages (add_stage)",
        "rrsplice/check/planted.py:5: check imports rrsplice.workflow (scaffold)",
        "rrsplice/check/planted.py:6: check imports rrsplice.outline.body (build_outline)",
    ], found
    found = _violations([(root / "rewrite" / "planted.py", "from ..check import Report\n"),
                         (root / "workflow" / "forms.py",
                          "def f():\n    from ..rewrite.sust import SUST_KINDS\n"),
                         (root / "workflow" / "stages.py", "from .recipe import Recipe\n"
                          "from ..check import Report\n")])
    assert found == [
        "rrsplice/rewrite/planted.py:1: rewrite imports rrsplice.check (Report)",
        "rrsplice/workflow/forms.py:2: recipe imports rrsplice.rewrite.sust (SUST_KINDS)",
    ], found


def test_no_private_name_is_imported_across_packages():
    found = [hit for p in sorted(PKG.rglob("*.py")) for hit in _private_imports(p, p.read_text())]
    assert found == []


def test_the_private_name_contract_sees_every_form_of_import():
    planted = PKG / "workflow" / "planted.py"
    text = ("from ..check.source import _short, line_text\n"
            "from .recipe import _text\n"
            "def f():\n    from ..check import _callee\n"
            "    from ..ptx.model import __all__\n"
            "    from rrsplice.ptx.parser import _blank\n")
    assert _private_imports(planted, text) == [
        "rrsplice/workflow/planted.py:1: rrsplice.check.source._short",
        "rrsplice/workflow/planted.py:4: rrsplice.check._callee",
        "rrsplice/workflow/planted.py:6: rrsplice.ptx.parser._blank",
    ]
