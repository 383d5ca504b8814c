"""The `rrsplice` command line: a thin click shell over the Python API.

Commands live in `cmd_*.py` modules of this package, each registering on `main`; they
are imported in name order so `rrsplice --help` is deterministic.
"""

import importlib
import pkgutil

from .app import main

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name.startswith("cmd_"):
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["main"]
