"""Return delivery: the body's epilogue that stores each value where the call text reads
it back (shared scratch or `.param` return)."""

from __future__ import annotations

from ..analysis.semantics import def_use, is_block_barrier
from ..ptx.model import Address, Reg, Statement, Vector
from ..ptx.scopes import source_name
from .callsite import CallSite, _kernel_side
from .common import _SPECIAL64, OutlineError, _Names, _one_line


def _readback_code(site: CallSite, names: _Names, width_of, snapshot) -> tuple:
    """The body's epilogue: the call text's address computations (after the call) and one
    store per read-back, in the call text's order."""
    # the call text is a `{ }` block of its own: its registers are keyed by scope, but the
    # body is written as text, so the epilogue works with the names the text uses
    post_defs: dict = {}
    for st in site.post:
        for d in def_use(st).defs:
            post_defs.setdefault(source_name(d), []).append(st)
    pre_defs: dict = {}
    for st in site.pre:
        for d in def_use(st).defs:
            pre_defs.setdefault(source_name(d), []).append(st)

    def last_def(table: dict, reg: str, before: int):
        found = [st for st in table.get(reg, ()) if st.index < before]
        return found[-1] if found else None
    passed = site.passed_registers()
    needed: list = []           # call-text statements to replicate, in order
    inputs: set = set()
    seen: set = set()

    def replicate(st) -> None:
        """Replicate `st` after what it reads (each statement once, in dependency order)."""
        if st.index not in seen:
            seen.add(st.index)
            for u in def_use(st).uses:
                want(source_name(u), st.index)
            needed.append(st)

    def want(reg: str, before: int):
        st = last_def(post_defs, reg, before)
        if st is not None:
            replicate(st)
            return
        if reg in passed:
            inputs.add(reg)
            return
        st = last_def(pre_defs, reg, min(before, site.call.index))
        if st is not None:
            replicate(st)
            return
        raise OutlineError(f"the call text reads back through {reg}, which it neither "
                           f"computes nor passes to {site.callee}")

    for rb in site.readbacks:
        if rb.kind == "param":
            continue
        addr = rb.statement.operands[1]
        if isinstance(addr.base, Reg) and not addr.base.special:
            want(addr.base.name, rb.statement.index)
    lines = []
    rename = {reg: snapshot(reg) for reg in sorted(inputs) if reg in _kernel_side(site, reg)}
    for st in sorted(needed, key=lambda s: s.index):
        lines.extend(_replicate(st, names, rename))
    # A block barrier the call text places after its scratch reads (so that no warp reuses
    # the array before every warp has read its slot) is mirrored before the body's stores
    # (so that no warp writes its slot while another still uses the array in the region).
    last_read = max((rb.statement.index for rb in site.readbacks if rb.kind != "param"),
                    default=None)
    if last_read is not None:
        for st in site.post:
            if st.index > last_read and is_block_barrier(st):
                lines.append("\t" + _one_line(st.text))
                break
    for rb in site.readbacks:
        st = rb.statement
        mods = [m for m in st.modifiers if m not in ("nc", "ca", "cg", "cs", "lu", "cv",
                                                        "L1::no_allocate", "L1::evict_last")]
        opcode = ".".join(["st"] + mods)
        value = st.operands[0]
        if rb.pred:            # read back as 1/0
            value = names.new(32)
            lines.append(f"\tselp.b32 {value}, 1, 0, {rb.registers[0]};")
        if rb.kind == "param":
            lines.append(f"\t{opcode} [{rb.ret_name}+{rb.offset}], {value};")
        else:
            addr = st.operands[1]
            base = rename.get(addr.base.name, addr.base.name)
            off = f"+{addr.offset}" if addr.offset > 0 else (str(addr.offset) if addr.offset else "+0")
            lines.append(f"\t{opcode} [{base}{off}], {value};")
    return lines, inputs


def _replicate(st: Statement, names: _Names, rename: dict) -> list:
    """A call-text statement for the body: special registers read with `mov` first (ptxas
    accepts them only there), registers the region may have changed read from snapshots."""
    out = []
    specials = {}

    def fix(op):
        if isinstance(op, Reg):
            if op.special and st.base != "mov":
                if op.name not in specials:
                    w = 64 if op.name in _SPECIAL64 else 32
                    tmp = names.new(w)
                    out.append(f"\tmov.u{w} {tmp}, {op.name};")
                    specials[op.name] = tmp
                return specials[op.name]
            return rename.get(op.name, op.name)
        if isinstance(op, Address):
            base = op.base
            if isinstance(base, Reg):
                base = Reg(rename.get(base.name, base.name))
            return str(Address(base, op.offset, op.extra))
        if isinstance(op, Vector):
            return "{" + ", ".join(fix(x) for x in op.items) + "}"
        return str(op)
    ops = [fix(op) for op in st.operands]
    guard = f"{st.guard} " if st.guard else ""
    out.append(f"\t{guard}{st.opcode} {', '.join(ops)};")
    return out
