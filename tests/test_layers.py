"""The package layout is the pipeline: the front end (`ptx/`) knows nothing of the analyses,
the analyses nothing of fragments or the workflow, and so on up. Every import is read from
the source, at module level and inside functions alike, so a layer cannot be crossed by a
function-level import either."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "rrsplice"

# layer -> the layers it may import (itself included)
ALLOWED = {
    "ptx": {"ptx", "infra.fsutil"},
    "analysis": {"ptx", "analysis", "infra.fsutil", "infra.arch"},
    "fragments": {"ptx", "analysis", "fragments", "infra.fsutil", "infra.arch"},
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, text: str):
    """(line, absolute module imported, name) of every import in `text`, the source of
    `path`."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(text)):
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


def _layer_of(target: str, name: str) -> str:
    parts = target.split(".")[1:]
    if not parts:                      # from rrsplice import X
        return name
    if parts[0] == "infra" and len(parts) == 1:
        return f"infra.{name}"
    return ".".join(parts[:2]) if parts[0] == "infra" else parts[0]


def _sources() -> list:
    return [(p, p.read_text()) for layer in ALLOWED for p in sorted((PKG / layer).rglob("*.py"))]


def _violations(sources) -> list:
    out = []
    for path, text in sources:
        layer = path.relative_to(PKG).parts[0]
        allowed = ALLOWED[layer]
        if True:
            for line, target, name in _imports(path, text):
                if not target.startswith("rrsplice"):
                    continue
                got = _layer_of(target, name)
                if got not in allowed:
                    out.append(f"{path.relative_to(ROOT)}:{line}: {layer} imports {target}"
                               f" ({name})")
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
