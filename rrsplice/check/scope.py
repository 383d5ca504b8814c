"""Cuts and `{ }` scopes: a region must not begin or end inside a block that declares
registers (the body could not declare them the same way), and no register local to such a
block may cross the region's boundary (rrsplice.scopes gives each its own identity)."""

from __future__ import annotations

from ..model import Function
from ..scopes import declaration_line, is_scoped, register_scope, source_name
from ..select import StatementRange
from .report import Report


def _check_scopes(rep: Report, fn: Function, rng: StatementRange) -> None:
    seen = set()
    for st in (fn.statements[rng.first - 1], fn.statements[rng.last - 1]):
        blk = register_scope(st)
        if blk is None or id(blk) in seen:
            continue
        seen.add(id(blk))
        names = ", ".join(d.name + (f"<{d.count}>" if d.count is not None else "")
                          for d in blk.decls if d.space == ".reg")
        rep.add("error", "cut-scope", f"the region's boundary at {st.sid} (line {st.line}) lies "
                f"inside the {{ }} block of lines {blk.line}-{blk.end_line}, which declares "
                f"registers ({names}); cut the whole block or stay outside it", st=st)


def _check_scoped_crossing(rep: Report, fa, rng: StatementRange) -> None:
    """Scope-local registers live into or out of the region."""
    for what, regs in (("into", fa.range_live_in(rng)), ("out of", fa.range_live_out(rng))):
        scoped = [r for r in regs if is_scoped(r)]
        for r in scoped:
            rep.add("error", "scope-register", f"{source_name(r)} declared in the {{ }} block "
                    f"at line {declaration_line(r)} is live {what} the region: a register local to a block "
                    f"cannot cross the region's boundary", registers=[r])
