"""Registers the call does not pass, found from the ones it does: recomputing derivable
values from their kernel definitions, and rewriting kernel-parameter reads into copies of
passed registers. Both rest on reaching definitions."""

from __future__ import annotations

from ..analysis.dataflow import analyze
from ..analysis.semantics import def_use, is_pseudo
from ..ptx.isa import PURE
from ..ptx.model import Function, Statement
from ..ptx.select import StatementRange
from .callsite import CallSite, _dest_regs
from .common import OutlineError, _one_line, _symbols


class _Reaching:
    """Reaching definitions at a statement, from the function's dataflow analysis."""

    def __init__(self, fn: Function, analysis=None):
        self.fn = fn
        self.fa = analysis if analysis is not None else analyze(fn)

    def at(self, index: int, reg: str) -> tuple:
        return tuple(sorted(self.fa.reaching_defs(index, reg)))



def _is_reloadable(st: Statement) -> bool:
    """A load whose memory the kernel never writes: `ld.global.nc`, `ld.const`, `ldu`."""
    mods = set(st.modifiers)
    if st.base == "ldu":
        return True
    return st.base == "ld" and ("nc" in mods or "const" in mods)


def _value_key(st: Statement, reg: str):
    """What a definition computes, independent of where its result goes: (opcode, sources,
    position of `reg` among the destinations)."""
    dst = _dest_regs(st.operands[0])
    pos = dst.index(reg) if reg in dst else -1
    return (str(st.guard) if st.guard else "", st.opcode,
            tuple(str(o) for o in st.operands[1:]), pos)


def _rewrite_param_read(st: Statement, fn: Function, rng: StatementRange, site: CallSite,
                        reach: _Reaching, snapshot, width_of) -> str:
    """`ld.param.u64 %rd5, [K_param_0+40]` inside the region -> `mov.b64 %rd5, <the passed
    register that holds the same value>`, or an OutlineError."""
    passed = site.passed_registers()
    keys: dict[tuple, str] = {}
    for reg in passed:
        defs = reach.at(rng.first, reg)
        if len(defs) == 1:
            d = fn.statement(defs[0])
            if d.base == "ld" and "param" in d.modifiers and d.guard is None:
                keys.setdefault(_value_key(d, reg)[1:], reg)
    out = []
    for reg in _dest_regs(st.operands[0]):
        src = keys.get(_value_key(st, reg)[1:])
        if src is None:
            raise OutlineError(
                f"{st.sid} (line {st.line}) reads a kernel parameter inside the region "
                f"({_one_line(st.text)!r}); a .func cannot read the entry's parameters and "
                f"the call passes no register holding {reg}'s value: pass it, or cut after "
                f"this read")
        w = width_of(reg)
        out.append(f"mov.b{w} {reg}, {snapshot(src)};")
    guard = f"{st.guard} " if st.guard else ""
    return " ".join(guard + x for x in out)


def _recompute(fn: Function, at: int, reg: str, passed: dict, reach: _Reaching,
               needs: dict, depth: int = 0) -> list:
    """Kernel statement indices that recompute `reg`'s value at statement `at` from passed
    values, or an OutlineError saying why not."""
    first = needs.get(reg)
    where = (f" (first read at s{first}, line {fn.statement(first).line})"
             if isinstance(first, int) else "")
    if depth > 64:
        raise OutlineError(f"{reg}{where}: provenance chain too deep to recompute")
    defs = reach.at(at, reg)
    why = None
    if not defs:
        why = "no definition reaches the region"
    elif len(defs) > 1:
        why = (f"{len(defs)} definitions reach the region "
               f"({', '.join(f's{d}' for d in defs[:6])})")
    else:
        d = fn.statement(defs[0])
        if d.guard is not None:
            why = f"its definition {d.sid} (line {d.line}) is guarded"
        elif not (d.base in PURE or _is_reloadable(d)):
            why = (f"its definition {d.sid} (line {d.line}, {d.opcode}) is not a pure "
                   f"computation or a read-only load")
        elif _symbols(d) - {lab for lab in _symbols(d) if fn.label_statement(lab)}:
            why = (f"its definition {d.sid} (line {d.line}) names "
                   f"{', '.join(sorted(_symbols(d)))}, which the body cannot see")
        else:
            out = [d.index]
            for u in def_use(d).uses:
                if is_pseudo(u):
                    why = f"its definition {d.sid} reads {u}"
                    break
                if reach.at(d.index, u) != reach.at(at, u):
                    why = (f"its definition {d.sid} (line {d.line}) reads {u}, which is "
                           f"redefined before the region")
                    break
                if u in passed:
                    continue
                try:
                    out.extend(_recompute(fn, d.index, u, passed, reach, {}, depth + 1))
                except _NotDerivable as exc:
                    why = f"its definition {d.sid} (line {d.line}) reads {u}: {exc.why}"
                    break
            if why is None:
                for other in def_use(d).defs:
                    if other != reg and other in needs and reach.at(at, other) != (d.index,):
                        why = (f"recomputing {d.sid} would also overwrite {other}, which the "
                               f"region reads with a later value")
                        break
            if why is None:
                return out
    if depth:
        raise _NotDerivable(why)
    raise OutlineError(f"{reg} is live into the region{where} but the call does not pass it, "
                       f"and it cannot be recomputed from passed values: {why}")


class _NotDerivable(Exception):
    def __init__(self, why: str):
        super().__init__(why)
        self.why = why
