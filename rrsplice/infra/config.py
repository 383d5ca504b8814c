"""Project settings from `[tool.rrsplice]` in the nearest pyproject.toml.

Keys: `default_module` (the module commands use without a TARGET) and `corpus` (a corpus
directory recipes resolve against). Relative paths are relative to that pyproject.toml.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..ptx.errors import RRSpliceError


@dataclass(frozen=True)
class ProjectConfig:
    root: Path | None            # directory holding the pyproject.toml, None if none
    default_module: Path | None
    corpus: Path | None


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        p = d / "pyproject.toml"
        if p.is_file():
            return p
    return None


def load_config(start: Path | None = None) -> ProjectConfig:
    p = find_pyproject(start)
    if p is None:
        return ProjectConfig(None, None, None)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RRSpliceError(f"cannot read [tool.rrsplice]: {exc}", path=p) from None
    section = data.get("tool", {}).get("rrsplice", {})
    root = p.parent

    def path_of(key):
        v = section.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise RRSpliceError(f"[tool.rrsplice] {key} must be a string path", path=p)
        return (root / os.path.expanduser(v)).resolve()

    return ProjectConfig(root, path_of("default_module"), path_of("corpus"))


def default_module(start: Path | None = None) -> Path:
    """The module a command uses when given no TARGET, or a clear error."""
    cfg = load_config(start)
    if cfg.default_module is None:
        raise RRSpliceError("no TARGET given and no [tool.rrsplice] default_module in a "
                            "pyproject.toml here or above; pass a .ptx file or a recipe")
    return cfg.default_module
