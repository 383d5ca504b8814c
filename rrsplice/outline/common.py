"""Pieces every stage of the outliner shares: its error, PTX type widths, declaration
text, fresh register names and operand walks."""

from __future__ import annotations

from collections.abc import Callable

from ..ptx.errors import RRSpliceError
from ..ptx.isa import TYPES
from ..ptx.model import Address, Block, Function, ParenList, Statement, Symbol, Vector


class OutlineError(RRSpliceError):
    """The region cannot be outlined into a body matching the call text."""


# type name -> bits (`.pred` 1)
_WIDTH = {name: t.bits for name, t in TYPES.items()}

_SPECIAL64 = {"%clock64", "%globaltimer", "%gridid"}


def _type_width(st: Statement) -> int | None:
    for m in reversed(st.modifiers):
        if m in _WIDTH:
            return _WIDTH[m]
    return None


def _reg_types(fn: Function) -> Callable[[str], str | None]:
    """register name -> its declared `.bN`-style type (any scope of `fn`)."""
    ranges = []
    single: dict[str, str | None] = {}
    for d in fn.decls():
        if d.space != ".reg":
            continue
        if d.count is None:
            single.setdefault(d.name, d.type)
        else:
            ranges.append(d)

    def lookup(name: str) -> str | None:
        if name in single:
            return single[name]
        for d in ranges:
            if d.declares(name):
                return d.type
        return None
    return lookup


def _decl_text(d) -> str:
    name = d.name + (f"<{d.count}>" if d.count is not None else "")
    dims = "".join(f"[{x}]" if x is not None else "[]" for x in d.dims)
    return "\t" + " ".join(d.attrs) + " " + name + dims + ";"


def _iter_blocks(blk: Block):
    for item in blk.items:
        if isinstance(item, Block):
            yield item
            yield from _iter_blocks(item)


class _Names:
    """Fresh private register names that collide with nothing in the kernel or call text."""

    def __init__(self, taken_prefixes: set):
        base = "%rrso"
        while any(p.startswith(base) for p in taken_prefixes):
            base += "x"
        self.base = base
        self.counts: dict = {}

    def new(self, width: int) -> str:
        key = {1: "p", 16: "h", 32: "r", 64: "d"}[width]
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return f"{self.base}{key}{n}"

    def decls(self) -> list:
        types = {"p": ".pred", "h": ".b16", "r": ".b32", "d": ".b64"}
        return [f"\t.reg {types[k]} {self.base}{k}<{n}>;" for k, n in sorted(self.counts.items())]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _symbols(st: Statement) -> set:
    out = set()

    def visit(op):
        if isinstance(op, Symbol):
            out.add(op.name)
        elif isinstance(op, Address):
            if isinstance(op.base, Symbol):
                out.add(op.base.name)
            for x in op.extra:
                visit(x)
        elif isinstance(op, (Vector, ParenList)):
            for x in op.items:
                visit(x)
    for op in st.operands:
        visit(op)
    return out
