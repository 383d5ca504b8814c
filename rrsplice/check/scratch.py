"""Checks of the .shared scratch array the returns travel through: its size, stride,
and values live across the region."""

from __future__ import annotations

from ..analysis.occupancy import block_threads
from ..analysis.provenance import symbol_accesses
from ..ptx.model import Address, Function, Module, Reg, Symbol
from ..ptx.select import StatementRange
from .analysis import _memo
from .facts import ScratchFacts
from .race import _check_scratch_race
from .report import Report
from .source import _short
from .text import SpliceText


def scratch_symbol(rep: Report, fn: Function, sp: SpliceText) -> str | None:
    """The .shared array the splice returns through: SCRATCH, or a .shared symbol the text
    names."""
    sym = rep.recipe.const("SCRATCH")
    if isinstance(sym, str) and sym:
        return sym
    shared = {d.name for d in fn.decls() if d.space == ".shared"}
    shared |= {d.name for d in rep.target.module.decls if d.space == ".shared"}
    for st in sp.statements:
        for op in st.operands:
            name = op.name if isinstance(op, Symbol) else (
                op.base.name if isinstance(op, Address) and isinstance(op.base, Symbol)
                else None)
            if name in shared:
                return name
    return None


def _scratch_decl(fn: Function, module: Module, sym: str):
    for d in fn.decls():
        if d.name == sym:
            return d
    for d in module.decls:
        if d.name == sym:
            return d
    return None


def scratch_stride(rep: Report, sp: SpliceText) -> tuple[int | None, str]:
    """Bytes between two lanes' return slots, and where that figure comes from: the
    recipe's RET_STRIDE, the multiplier of the lane index in the call text, or 4 bytes per
    RET_REGS register; (None, "") when nothing says."""
    rec = rep.recipe
    v = rec.const("RET_STRIDE")
    if isinstance(v, int) and not isinstance(v, bool):
        return v, "RET_STRIDE"
    index_regs = {"%laneid"}
    for st in sp.statements:
        if st.base == "mov" and len(st.operands) == 2 and isinstance(st.operands[1], Reg) \
                and st.operands[1].special and isinstance(st.operands[0], Reg):
            index_regs.add(st.operands[0].name)
        elif st.base in ("mad", "mul") and any(isinstance(op, Reg) and op.name in index_regs
                                               for op in st.operands[1:3]):
            for op in st.operands[1:3]:
                if op.kind == "imm" and isinstance(op.value, int):
                    return op.value, f"`{st.text.strip()}`"
            if isinstance(st.operands[0], Reg):
                index_regs.add(st.operands[0].name)
    regs = rec.const("RET_REGS")
    if isinstance(regs, (list, tuple)) and regs:
        return 4 * len(regs), "4 x len(RET_REGS)"
    return None, ""


def _shared_reads(sp: SpliceText) -> list:
    return [st for st in sp.statements if st.base == "ld" and "shared" in st.modifiers]


def _check_scratch(rep: Report, fn: Function, rng: StatementRange, sp: SpliceText) -> None:
    loads = _shared_reads(sp)
    sym = scratch_symbol(rep, fn, sp)
    if sym is None or (not loads and rep.recipe.const("SCRATCH") is None):
        return
    decl = _scratch_decl(fn, rep.target.module, sym)
    if decl is None and sp.module is not None:
        # the recipe's own array, declared at module scope by its extern text
        decl = next((d for d in sp.module.decls if d.name == sym), None)
    if decl is None:
        rep.add("error", "scratch-size", f"scratch array {sym} is not declared in "
                f"{fn.name} or at module scope")
        return
    size = decl.byte_size
    stride, why = scratch_stride(rep, sp)
    offs = []
    for st in loads:
        for op in st.operands:
            if isinstance(op, Address):
                n = 1
                for mod in st.modifiers:
                    if mod in ("v2", "v4"):
                        n = int(mod[1:])
                w = next((t.bytes for t in st.view.types), 4)
                offs.append((op.offset, op.offset + w * n))
    specials = {r.name for st in sp.statements for r in st.registers() if r.special}
    per_thread = any(x.startswith("%tid.") for x in specials)
    threads = block_threads(fn)
    slots = (threads or 1024) if per_thread else 32
    rep.facts.scratch = ScratchFacts(symbol=sym, bytes=size, stride=stride, stride_from=why,
                                     line=decl.line, slots=slots,
                                     indexed_by="thread" if per_thread else "lane")
    if stride is not None and size is not None:
        need = stride * slots
        unit = "threads" if per_thread else "lanes"
        if need > size:
            rep.add("error", "scratch-size", f"returns need {stride} bytes per "
                    f"{unit[:-1]} x {slots} {unit} = {need} bytes, but {sym} holds {size} "
                    f"(stride from {why})", line=decl.line)
    if not per_thread and "%laneid" in specials and (threads is None or threads > 32):
        rep.add("warning", "scratch-warps", f"the scratch address depends on %laneid only, "
                f"but {fn.name} may run " + (f"{threads}" if threads else "more than 32")
                + " threads per block: its warps share every lane's slot, so the body must "
                "keep them apart (or index the scratch by the thread's linear index)",
                line=decl.line)
    if stride is not None and offs:
        hi = max(e for _, e in offs)
        if hi > stride:
            rep.add("error", "scratch-size", f"the call text reads {sym} up to byte {hi} of a "
                    f"lane's slot, but lanes are {stride} bytes apart: lanes overlap")
    _check_scratch_live(rep, fn, rng, sym, decl)
    _check_scratch_race(rep, fn, rng, sp, sym, decl, loads, per_thread, threads)


def _check_scratch_live(rep: Report, fn: Function, rng: StatementRange, sym: str,
                        decl) -> None:
    acc = [tuple(x) for x in _memo(rep.target.module, fn, f"symbol {sym}",
                                   lambda: symbol_accesses(fn, sym))]
    before = [(i, k) for i, k in acc if i < rng.first]
    after = [(i, k) for i, k in acc if i > rng.last]
    stmts = fn.statements
    lb = stmts[before[-1][0] - 1] if before else None
    fa_ = stmts[after[0][0] - 1] if after else None
    desc = ("last access before the region: " + (f"{lb.sid} line {lb.line} `{_short(lb.text, 70)}`"
                                                  if lb else "none")
            + "; first after it: " + (f"{fa_.sid} line {fa_.line} `{_short(fa_.text, 70)}`"
                                       if fa_ else "none"))
    facts = rep.facts.scratch_for(sym)
    facts.last_before = {"statement": lb.sid, "line": lb.line} if lb else None
    facts.first_after = {"statement": fa_.sid, "line": fa_.line} if fa_ else None
    written_before = [i for i, k in before if k != "read"]
    read_after = [i for i, k in after if k != "write"]
    if written_before and read_after:
        first_after_kind = after[0][1]
        wb = stmts[written_before[-1] - 1]
        ra = stmts[read_after[0] - 1]
        if first_after_kind != "write":
            rep.add("error", "scratch-live", f"{sym} holds a value live across the region: "
                    f"written at {wb.sid} (line {wb.line}) before it and read at {ra.sid} (line "
                    f"{ra.line}) after it, with no write in between; the returns would "
                    f"overwrite it. {desc}", st=ra)
            return
        rep.add("warning", "scratch-live", f"{sym} is written before the region ({wb.sid}, "
                f"line {wb.line}) and read after it ({ra.sid}, line {ra.line}); the first "
                f"access after the region is a write, assumed to overwrite it. {desc}",
                st=fa_)
        return
    rep.add("info", "scratch", f"{sym} ({decl.byte_size} bytes) carries the returns; {desc}",
            line=decl.line)
