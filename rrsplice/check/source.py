"""What several checks read from the module: line text and short quotes of statements.
(A register's declaration is `ptx.scopes.register_decl`, a type's size `ptx.isa.type_bytes`.)"""

from __future__ import annotations

from ..ptx.model import Module


def _line_text(module: Module, line: int) -> str:
    starts = module.line_starts()
    if not 1 <= line <= len(starts):
        return ""
    s = starts[line - 1]
    e = starts[line] if line < len(starts) else len(module.text)
    return module.text[s:e].rstrip("\r\n")


def _region_text(module: Module, first: int, last: int) -> str:
    starts = module.line_starts()
    s = starts[first - 1]
    e = starts[last] if last < len(starts) else len(module.text)
    return module.text[s:e]


def _short(text: str, n: int = 120) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[:n - 3] + "..."
