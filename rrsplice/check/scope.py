"""Cuts and `{ }` scopes: a region must not begin or end inside a block that declares
registers (the body could not declare them the same way), and no register local to such a
block may cross the region's boundary (rrsplice.ptx.scopes gives each its own identity)."""

from __future__ import annotations

from ..ptx.model import Function
from ..ptx.scopes import declared_registers, declaring_block, is_scoped, scope_blocks, source_name
from ..ptx.select import StatementRange
from .report import Report


def _check_scopes(rep: Report, fn: Function, first: int, last: int) -> None:
    """Blocks that declare registers and that the cut (physical lines first..last) enters
    or leaves without taking in whole."""
    for blk in scope_blocks(fn):
        overlaps = blk.line <= last and first <= blk.end_line
        whole = first <= blk.line and blk.end_line <= last
        if not overlaps or whole:
            continue
        names = ", ".join(d.name + (f"<{d.count}>" if d.count is not None else "")
                          for d in declared_registers(blk))
        inside = [st for st in fn.statements if st.block is not None
                  and blk.start <= st.start < blk.end and first <= st.line <= last]
        at = inside[0] if inside else None
        where = f"lines {first}-{last}"
        rep.add("error", "cut-scope", f"the cut ({where}) begins or ends inside the {{ }} block "
                f"of lines {blk.line}-{blk.end_line}, which declares registers ({names}); cut "
                f"the whole block or stay outside it", st=at, line=None if at else first)


def _check_scoped_crossing(rep: Report, fa, rng: StatementRange) -> None:
    """Scope-local registers live into or out of the region."""
    for what, regs in (("into", fa.range_live_in(rng)), ("out of", fa.range_live_out(rng))):
        for r in regs:
            if not is_scoped(r):
                continue
            blk = declaring_block(fa.fn, r)
            where = f"lines {blk.line}-{blk.end_line}" if blk is not None else "?"
            rep.add("error", "scope-register", f"{source_name(r)} declared in the {{ }} block of "
                    f"{where} is live {what} the region: a register local to a block cannot "
                    f"cross the region's boundary", registers=[r])
