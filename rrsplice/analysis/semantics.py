"""Instruction semantics: which operands of which opcode are definitions and which are uses.

The per-opcode facts live in one registry, rrsplice.ptx.isa (read off the PTX ISA's syntax
blocks, one row per opcode family, not guessed from "the first operand is the
destination"). A family's *role pattern* names the role of each operand position:

    D   every register in the operand is written (a `{...}` list: all of them; `%p|%q`:
        both; `_`: nothing; `%v.x`: one element, so the rest is kept: a partial write)
    U   every register in the operand is read
    M   read and written (accumulators updated in place)
    *   after a letter: that role repeats for all remaining operands

Register operands inside an address (`[%rd9+16]`, `[tex, {%f1, %f2}]`) are always reads,
whatever the position's role. Special registers (`%tid.x`, `%laneid`, ...) are machine state,
never variables, so they never appear in a DefUse. Registers are named by their key
(rrsplice.ptx.scopes): a register declared in a nested `{ }` block is a different register from
an outer one of the same name.

Beyond plain registers two kinds of *pseudo-registers* carry values that flow through
memory-like state so that calls and carry chains are not cut apart silently:

* `param:NAME` -- a `.param` variable declared inside the function body (a call block's
  argument and return slots). `st.param` writes it, `call` reads its argument slots and
  writes its return slots, `ld.param` reads it. Kernel and function parameters (declared in
  the signature) are constants of the invocation and are not modelled.
* `cc:CF` -- the carry flag written by `.cc` arithmetic and read by `addc`/`subc`/`madc`.

Pseudo-register names contain a `:`, which no PTX identifier can; `is_pseudo` tells them
apart and user-facing register lists leave them out.

A guarded definition (`@%p mov.u32 %r1, 5`) may not execute, so it also *uses* its
destinations' old values and kills nothing. Opcodes missing from the table are analysed
conservatively -- every register is a use, the first operand's registers are also
definitions, nothing is killed -- and reported by `uncovered`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ptx.isa import BLOCK_BARRIERS, CARRY_READERS, ROLES, TYPES, family_key
from ..ptx.model import Address, Element, Function, Negated, Offset, ParenList, PredPair, Reg, Statement, Symbol, Vector

# ---------------------------------------------------------------- the table

# role patterns (rrsplice.ptx.isa's registry writes them per opcode family)
_DU = "D U*"        # destination, then sources
_U = "U*"           # reads only (stores, barriers, branches, ...)
_MU = "M U*"        # destination updated in place
_ADDR_FIRST = "A?"  # all reads if the first operand is an address (a memory destination),
                    # else "D U*" (mbarrier's state-returning forms)

#: opcode family -> role pattern, from the opcode registry (rrsplice.ptx.isa). Keys are the base
#: opcode or `base.modifier` for families whose forms differ (`bar.red` has a destination,
#: `bar.sync` has none). Lookup tries the longest `base.mod1.mod2...` prefix first.
OPCODE_ROLES: dict[str, str] = ROLES


def is_block_barrier(st: Statement) -> bool:
    """True for an unguarded barrier that waits for every thread of the block:
    `bar.sync 0`, `barrier.sync 0`, `bar.cta.sync 0`, `barrier.sync.aligned 0`, the old
    bare `bar 0`; not `bar.warp.sync`, not `bar.arrive`, not `bar.sync 1, 64`."""
    op = st.opcode or ""
    if st.base not in ("bar", "barrier") or st.guard:
        return False
    whole = op in ("bar", "barrier") or any(op == b or op.startswith(b + ".")
                                            for b in BLOCK_BARRIERS)
    return whole and len(st.operands) <= 1


CARRY = "cc:CF"


def is_pseudo(name: str) -> bool:
    """True for the `param:NAME` / `cc:CF` pseudo-registers."""
    return ":" in name


def family_of(st: Statement) -> str | None:
    """The registry key covering `st`'s opcode (longest dotted prefix), or None."""
    return family_key(st.opcode)


# ---------------------------------------------------------------- DefUse

@dataclass(frozen=True)
class DefUse:
    defs: tuple[str, ...]   # register names fully or partially written (guarded defs included)
    uses: tuple[str, ...]   # register names read (address bases, guard, guarded destinations)
    kills: tuple[str, ...]  # definitions that kill the old value (unguarded, whole-register)
    covered: bool           # False if the opcode is not in the table (conservative)


EMPTY = DefUse((), (), (), True)


def _regs(op, out: list) -> None:
    """Append the non-special register names of operand `op` to `out`."""
    t = type(op)
    if t is Reg:
        if not op.special:
            out.append(op.ident or op.name)
    elif t is Vector or t is ParenList:
        for item in op.items:
            if type(item) is Reg:
                if not item.special:
                    out.append(item.ident or item.name)
            else:
                _regs(item, out)
    elif t is Address:
        base = op.base
        if type(base) is Reg and not base.special:
            out.append(base.ident or base.name)
        for item in op.extra:
            _regs(item, out)
    elif t is PredPair:
        _regs(op.first, out)
        _regs(op.second, out)
    elif t is Negated:
        _regs(op.reg, out)
    elif t is Element or t is Offset:        # `%v.x`: the whole vector register; `%rd2+4`
        base = op.reg if t is Element else op.base
        if type(base) is Reg and not base.special:
            out.append(base.ident or base.name)


_ROLE_CACHE: dict = {}


def _roles(pattern: str, operands: tuple) -> tuple:
    """Expand a role pattern to one role letter per operand."""
    key = (pattern, len(operands), type(operands[0]) is Address if operands else False)
    hit = _ROLE_CACHE.get(key)
    if hit is None:
        hit = _ROLE_CACHE[key] = tuple(_expand(pattern, operands))
    return hit


def _expand(pattern: str, operands: tuple) -> list:
    if pattern == _ADDR_FIRST:
        pattern = _U if operands and isinstance(operands[0], Address) else _DU
    letters = pattern.split()
    out = []
    rest = None
    for i in range(len(operands)):
        if rest is not None:
            out.append(rest)
        elif i < len(letters):
            letter = letters[i]
            if letter.endswith("*"):
                rest = letter[0]
                out.append(rest)
            else:
                out.append(letter)
        else:
            out.append("U")
    return out


def operand_roles(st: Statement) -> list[str]:
    """One role per operand of `st`: "def", "use" or "both" ("use" for addresses and
    immediates as well). Call operands: return list "def", callee and arguments "use"."""
    if st.is_label or not st.operands:
        return []
    if st.base == "call":
        return ["def" if i == 0 and isinstance(op, ParenList) and len(st.operands) > 1
                and not _is_arg_list_only(st) else "use" for i, op in enumerate(st.operands)]
    fam = family_of(st)
    pattern = OPCODE_ROLES[fam] if fam else _DU
    names = {"D": "def", "U": "use", "M": "both"}
    return [names[r] if not isinstance(op, Address) else "use"
            for r, op in zip(_roles(pattern, st.operands), st.operands, strict=False)]


def _is_arg_list_only(st: Statement) -> bool:
    """`call f, (a, b)`: the first operand is the callee, not a return list."""
    return not isinstance(st.operands[0], ParenList)


def _block_param(st: Statement, name: str):
    """The `.param` Decl named `name` in a block enclosing `st`, or None."""
    blk = st.block
    while blk is not None:
        for d in blk.decls:
            if d.name == name and d.space == ".param":
                return d
        blk = blk.parent
    return None


def _store_bytes(st: Statement) -> int | None:
    n = None
    vec = 1
    for m in st.modifiers:
        row = TYPES.get(m)
        if row is not None and row.bytes:
            n = row.bytes
        elif m in ("v2", "v4", "v8"):
            vec = int(m[1:])
    return None if n is None else n * vec


def _param_ref(st: Statement, op) -> str | None:
    """`param:NAME` if `op` is an address (or a bare symbol) naming a body-declared .param."""
    sym = None
    if isinstance(op, Address) and isinstance(op.base, Symbol):
        sym = op.base.name
    elif isinstance(op, Symbol):
        sym = op.name
    if sym is None or _block_param(st, sym) is None:
        return None
    return "param:" + sym


def _dedupe(names: list) -> tuple:
    if len(names) < 2:
        return tuple(names)
    return tuple(dict.fromkeys(names))


def def_use(st: Statement) -> DefUse:
    """What `st` reads, writes and kills. Labels: nothing."""
    if st.is_label:
        return EMPTY
    ops = st.operands
    base = st.base
    defs: list = []
    uses: list = []
    partial: list = []       # defs that write only part of a value (keep the rest)
    kills_ok = True          # unguarded whole writes kill
    covered = True
    if base == "call":
        _call(st, defs, uses)
    else:
        fam = family_of(st)
        if fam is None:
            covered = False
            kills_ok = False
            for i, op in enumerate(ops):
                _regs(op, uses)
                if i == 0 and not isinstance(op, Address):
                    _regs(op, defs)
        else:
            for role, op in zip(_roles(OPCODE_ROLES[fam], ops), ops, strict=False):
                if role == "U" or type(op) is Address:
                    _regs(op, uses)
                elif role == "D":
                    _regs(op, defs)
                    if type(op) is Element:    # one element: the others keep their values
                        _regs(op, uses)
                        _regs(op, partial)
                else:  # "M"
                    _regs(op, defs)
                    _regs(op, uses)
            if base == "st" and ops and ".param" in st.opcode and "param" in st.modifiers:
                p = _param_ref(st, ops[0])
                if p is not None:
                    decl = _block_param(st, p[6:])
                    size = _store_bytes(st)
                    whole = (ops[0].offset == 0 and size is not None
                             and decl.byte_size is not None and size >= decl.byte_size)
                    defs.append(p)
                    if not whole:    # a partial write keeps (so reads) the rest
                        uses.append(p)
                        partial.append(p)
            elif base == "ld" and ".param" in st.opcode and len(ops) > 1 and "param" in st.modifiers:
                p = _param_ref(st, ops[1])
                if p is not None:
                    uses.append(p)
            if base in CARRY_READERS:
                uses.append(CARRY)
            if ".cc" in st.opcode and "cc" in st.modifiers:
                defs.append(CARRY)
    if st.guard is not None:
        g = st.guard.reg
        if not g.special:
            uses.insert(0, g.key)
        uses.extend(defs)    # a guarded write may not happen: the old value survives
        kills_ok = False
    defs_t = _dedupe(defs)
    if not kills_ok:
        kills = ()
    elif partial:
        kills = tuple(d for d in defs_t if d not in partial)
    else:
        kills = defs_t       # `add %r1, %r1, 1` reads first, then kills
    return DefUse(defs_t, _dedupe(uses), kills, covered)


def _call(st: Statement, defs: list, uses: list) -> None:
    """`call[.uni] (rets), callee, (args)[, proto]`; `call callee, (args)`; `call callee`."""
    ops = st.operands
    i = 0
    if len(ops) > 1 and isinstance(ops[0], ParenList):
        for item in ops[0].items:
            p = _param_ref(st, item)
            if p is not None:
                defs.append(p)
            else:
                _regs(item, defs)
        i = 1
    if i < len(ops):
        _regs(ops[i], uses)            # an indirect call's function pointer
        i += 1
    if i < len(ops) and isinstance(ops[i], ParenList):
        for item in ops[i].items:
            p = _param_ref(st, item)
            if p is not None:
                uses.append(p)
            else:
                _regs(item, uses)
        i += 1
    for op in ops[i:]:                 # a prototype label, or a jump table
        _regs(op, uses)


# ---------------------------------------------------------------- helpers

_NUM = re.compile(r"(\d+)")


def register_sort_key(name: str):
    """Natural order: %p1 < %p2 < %r2 < %r10 < %rd1 < %rs1; pseudo-registers last."""
    parts = _NUM.split(name)
    return (is_pseudo(name), tuple(int(p) if i % 2 else p for i, p in enumerate(parts)))


def sort_registers(names) -> list[str]:
    return sorted(names, key=register_sort_key)


def uncovered(fn: Function) -> dict[str, list[int]]:
    """opcode -> indices of `fn`'s statements whose opcode the table does not cover."""
    out: dict[str, list[int]] = {}
    for st in fn.statements:
        if not st.is_label and st.base != "call" and family_of(st) is None:
            out.setdefault(st.opcode, []).append(st.index)
    return out
