"""Which value a fragment register holds, so that tiles are told apart by value, not by name.

nvcc reloads a fragment when it cannot keep it in a register (an asm that clobbers memory, a
store through a pointer that may alias, register pressure): `ld.global.u32 %r7, [%rd14]` for
m-tile 0 and `ld.global.u32 %r647, [%rd14]` for m-tile 1 hold the same B fragment. Counting
tiles by (register, definition) then sees three B tiles where there is one. `value_key(fa,
index, reg)` is equal for two registers when their values are provably the same:

  * both are loaded (`ld`, `ldu`, `ldmatrix`) from the same state space, at the same address
    for every probe thread (`rrsplice.analysis.threadaddr`: same root pointer -- parameter, shared
    symbol -- and the same offsets), as the same element and width, and no store that may
    write that memory lies between the two loads in program order (a label or call between
    them counts as one: the order is no longer known). Loads of memory the kernel cannot
    write (`ld.global.nc`, `ldu`, `ld.const`, `ld.param`) need no such check;
  * or both reach back, through `mov` copies, to one definition of one register.

Anything else is keyed by its reaching definitions, which is what identity by register was.
"""

from __future__ import annotations

from bisect import bisect_left

from ..analysis.threadaddr import destination_position, load_addresses
from ..ptx.isa import element_bytes, memory_effect, state_space
from ..ptx.model import Reg

_LOADS = frozenset({"ld", "ldu", "ldmatrix"})
# which written spaces may change memory a load from the key space reads
_CLOBBERED_BY = {"global": ("global", "generic"), "shared": ("shared", "generic"),
                 "local": ("local", "generic"),
                 "generic": ("global", "shared", "local", "generic")}


def _immutable(st) -> bool:
    mods = st.modifiers
    return st.base == "ldu" or "nc" in mods or "const" in mods or "param" in mods


def _clobbers(fa) -> dict:
    """space -> sorted statement numbers that may write it (stores, atomics, copies; every
    label and call writes every space, as far as program order can tell)."""
    def compute():
        out: dict = {s: [] for s in ("global", "shared", "local", "generic")}
        for st in fa.fn.statements:
            if st.is_label or st.base == "call":
                for v in out.values():
                    v.append(st.index)
                continue
            eff = memory_effect(st.opcode)
            if eff in ("write", "atomic", "copy"):
                sp = state_space(st.opcode)
                if sp in out:
                    out[sp].append(st.index)
        return out
    return fa.derived(("fragvalue.clobbers",), compute)


def _epoch(fa, d: int, space: str) -> tuple:
    table = _clobbers(fa)
    return tuple(bisect_left(table[s], d) for s in _CLOBBERED_BY.get(space, ("generic",)))


def _origin(fa, index: int, reg: str) -> tuple:
    """Follow plain `mov` copies back: (statement, register) of the original definition, or
    (None, defs) when several definitions reach."""
    stmts = fa.fn.statements
    for _ in range(32):
        defs = fa.reaching_defs(index, reg)
        if len(defs) != 1:
            return None, (reg, tuple(defs))
        d = defs[0]
        st = stmts[d - 1]
        ops = st.operands
        if st.base == "mov" and st.guard is None and len(ops) == 2 \
                and isinstance(ops[1], Reg) and not ops[1].special \
                and not any(m.startswith("f") for m in st.modifiers):
            index, reg = d, ops[1].key
            continue
        return d, reg
    return None, (reg, ())


def value_key(fa, index: int, reg: str) -> tuple:
    """A key equal for two (statement, register) pairs whose values are the same (module doc)."""
    def compute():
        d, r = _origin(fa, index, reg)
        if d is None:
            return ("defs",) + r
        st = fa.fn.statements[d - 1]
        if st.base in _LOADS and st.guard is None:
            pos = destination_position(st, r)
            addr = load_addresses(fa, d) if pos is not None else None
            if addr is not None:
                space = state_space(st.opcode) or "generic"
                epoch = None if _immutable(st) else _epoch(fa, d, space)
                shape = tuple(m for m in st.modifiers if m in ("x1", "x2", "x4", "trans"))
                return ("load", st.base, space, shape, element_bytes(st.modifiers), pos, addr, epoch)
        return ("def", d, r)
    memo = fa.derived(("fragvalue.keys",), dict)
    key = (index, reg)
    got = memo.get(key)
    if got is None:
        got = memo[key] = compute()
    return got
