"""The body's exits: branches of the region to labels outside it become branches to the
body's own exit labels, placed after the region's copy; each sets the exit index the call
text dispatches on (rrsplice.exits) and falls into the return delivery."""

from __future__ import annotations

import re

from ..exits import read_dispatch, region_exits, return_labels
from ..scopes import source_name
from .common import OutlineError


def _exits(fn, rng, site, names, edits: list) -> tuple:
    """(label -> exit index for every outside label the region branches to, the lines to
    put after the region's copy, the Dispatch read from the call text). Appends the label
    rewrites to `edits`."""
    try:
        dispatch = read_dispatch(site.post)
    except ValueError as exc:
        raise OutlineError(f"the call text's exit dispatch: {exc}") from None
    if dispatch.register is not None:       # the body is text: the name the call text uses
        dispatch.register = source_name(dispatch.register)
    back = return_labels(fn, rng)
    exits = region_exits(fn, rng)
    exit_of: dict = {}
    for ex in exits:
        if ex.target is None:
            raise OutlineError(f"{ex.sid} (line {ex.statement.line}) branches to {ex.label}, "
                               f"which is not a label of {fn.name}")
        if ex.label in back:
            exit_of[ex.label] = 0
        elif ex.label in dispatch.targets:
            exit_of[ex.label] = dispatch.targets[ex.label]
        else:
            raise OutlineError(
                f"{ex.sid} (line {ex.statement.line}) branches to {ex.label} (line "
                f"{ex.target.line}), outside the region: only a branch to the statement right "
                f"after the region returns; the call text must dispatch on an exit index for "
                f"any other target (`setp.eq.u32 %q, %x, K; @%q bra {ex.label};` after reading "
                f"%x back)")
    if not exits:
        return exit_of, [], dispatch
    taken = {st.label for st in fn.statements if st.is_label}
    base = "$L__rrsplice_exit"
    while any(t.startswith(base) for t in taken):
        base += "_"
    label = {k: f"{base}{k}" for k in sorted(set(exit_of.values()) | {0})}
    for ex in exits:
        st = ex.statement
        m = re.search(r"(?<![\w$])" + re.escape(ex.label) + r"(?![\w$])", st.text)
        edits.append((st.start + m.start(), st.start + m.end(), label[exit_of[ex.label]]))
    lines = []
    if dispatch.register is None:
        lines.append(f"{label[0]}:")
        return exit_of, lines, dispatch
    done = f"{base}_done"
    order = sorted(label)
    for k in order:
        lines.append(f"{label[k]}:")
        lines.append(f"\tmov.u32 {dispatch.register}, {k};")
        if k != order[-1]:
            lines.append(f"\tbra.uni {done};")
    lines.append(f"{done}:")
    return exit_of, lines, dispatch
