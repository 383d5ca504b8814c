"""What several checks read from the module and its declarations: line text, register
declarations, type sizes, short quotes of statements."""

from __future__ import annotations

from ..ptx.model import Function, Module


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


_DECLS: dict = {}


def _function_decl(fn: Function, module: Module | None, reg: str):
    """The `.reg` declaration of `reg` visible at function scope (body-level, then nested
    blocks), memoised per function."""
    ent = _DECLS.get(id(fn))
    if ent is None or ent[0] is not fn:
        body = [d for d in (fn.body.decls if fn.body else ()) if d.space == ".reg"]
        memo: dict = {}
        ent = (fn, body, memo)
        _DECLS.clear()
        _DECLS[id(fn)] = ent
    _, body, memo = ent
    if reg in memo:
        return memo[reg]
    found = next((d for d in body if d.declares(reg)), None)
    if found is None:
        found = next((d for d in fn.decls() if d.space == ".reg" and d.declares(reg)), None)
    memo[reg] = found
    return found


_TYPE_SIZE = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8,
              "f16x2": 4, "pred": 0}


def _short(text: str, n: int = 120) -> str:
    t = " ".join(text.split())
    return t if len(t) <= n else t[:n - 3] + "..."
