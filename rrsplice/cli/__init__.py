"""The `rrsplice` command line: a thin click shell over the Python API.

Commands live in `cmd_*.py` modules of this package, each registering on `main`; the group
imports a module when one of its commands is used (see `app.COMMAND_MODULES`).
"""

from .app import main

__all__ = ["main"]
