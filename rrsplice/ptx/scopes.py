"""Register identity across `{ }` scopes.

PTX lets a nested block declare a register whose name an outer scope already uses:

    mov.u32 %r2, 7;
    { .reg .b32 %r2; mov.u32 %r2, 5; add.u32 %r3, %r1, %r2; }
    add.u32 %r4, %r3, %r2;          // the outer %r2: still 7

The two `%r2` are different registers. Every analysis (def/use, liveness, provenance,
recipe checks, outline) works on register *keys*: a register declared in the function body
(or not declared at all) keeps its name as key; one declared in a nested block gets the key
`NAME@B<k>`, k numbering the function's blocks that declare registers in source order
(`declaring_block` finds the block, and its lines, again). The parser's walk stores the key
(`declare`, `rebind`) in each `Reg` operand that refers to a scoped declaration, so `Reg.key` is all an analysis
needs; operands still compare by their text. Block numbers, not lines, make the key: an
inline-asm block that recurs in many kernels binds to the same operands everywhere, so its
statements keep sharing one parse.

A declaration scopes from its point on (ptxas: in `{ mov.u32 %r2, 5; .reg .b32 %r2; ... }`
the 5 goes to the outer %r2), and a `.reg` with a special register's name (`.reg .b32
%smid;`, `%envreg<32>`) declares an ordinary variable that hides the special register from
there to the end of its block.

The `@` cannot occur in a PTX identifier, so a key never collides with a real name.
"""

from __future__ import annotations

import re
from operator import is_

from .model import (
    Address,
    Block,
    Decl,
    Element,
    Function,
    Guard,
    Imm,
    Negated,
    Offset,
    ParenList,
    PredPair,
    Reg,
    Statement,
    Symbol,
    Vector,
    is_special_register,
)

SEP = "@"


def is_scoped(key: str) -> bool:
    """True for the key of a register declared in a nested `{ }` block."""
    return SEP in key


def source_name(key: str) -> str:
    """The name the PTX text uses for register `key` (`%r2` of `%r2@L13`)."""
    i = key.find(SEP)
    return key if i < 0 else key[:i]


def block_number(key: str) -> int:
    """k of a scoped key `NAME@B<k>` (0 for an unscoped key)."""
    i = key.find(SEP + "B")
    return int(key[i + 2:]) if i >= 0 and key[i + 2:].isdigit() else 0


def declaring_block(fn: Function, key: str) -> Block | None:
    """The `{ }` block whose declaration a scoped key names (None for an unscoped key)."""
    k = block_number(key)
    blocks = scope_blocks(fn)
    return blocks[k - 1] if 0 < k <= len(blocks) else None


def declared_registers(blk: Block) -> list:
    """The `.reg` Decls a block declares itself (not those of blocks inside it)."""
    return [d for d in blk.decls if d.space == ".reg"]


# Prefixes of a `%NAME<N>` range that can declare a special register's name (`%pm<8>`,
# `%envreg<32>`, `%clock<65>` declares %clock64): only those need a look at the operands.
_SPECIAL_RANGE_PREFIX = re.compile(
    r"%(?:pm(?:[0-7](?:_6?)?)?|clock6?|envreg\d*|reserved_smem_offset_\d*)$")


def _shadows_special(d: Decl) -> bool:
    """True if `.reg` Decl `d` may declare a name PTX also gives a special register: the
    declaration makes it an ordinary variable from that point on (ptxas assembles
    `.reg .b32 %smid; ld.global.u32 %smid, [%rd1];` as a plain load)."""
    if d.name[:1] != "%":
        return False
    if d.count is None:
        return is_special_register(d.name)
    return _SPECIAL_RANGE_PREFIX.match(d.name) is not None


# Binding happens during the parser's one walk over a function's items in source order
# (rrsplice.ptx.parser numbers statements and parses operands in the same walk): the walk
# keeps a binding state, `keys` (name -> key of the registers nested blocks declare, in
# force at this point) and `shadow` (declarations of special registers' names, innermost
# last), changes it with `declare` at each `.reg` declaration, and passes each parsed
# instruction through `rebind` while the state is not empty. A declaration scopes from its
# point on, as ptxas reads it: in `{ mov.u32 %r2, 5; .reg .b32 %r2; ... }` the first
# write is to the *outer* %r2. Functions with neither kind of declaration never leave the
# empty state, so nothing of theirs is rebuilt.

def block_tag(k: int) -> str:
    """The key suffix of the registers declared in a function's k-th declaring block."""
    return f"{SEP}B{k}"


def declare(d: Decl, tag: str, keys: dict, shadow: tuple) -> tuple:
    """The binding state (keys, shadow) after `.reg` Decl `d` of a block whose registers
    take the suffix `tag` ("" for the function body, whose registers keep their names;
    a `.reg` there matters only when it hides a special register)."""
    if tag:
        if d.count is None:
            keys = {**keys, d.name: d.name + tag}
        else:
            keys = {**keys, **{n: n + tag for n in d.names()}}
        if _shadows_special(d):
            shadow = shadow + ((d.name, d.count, tag),)
    elif _shadows_special(d):
        shadow = shadow + ((d.name, d.count, ""),)
    return keys, shadow


def state_key(keys: dict, shadow: tuple) -> tuple:
    """A hashable fingerprint of a binding state: equal states rebind equally, so the
    parsed instructions of one state are shared (an inline-asm block that recurs in many
    kernels gets the same block number in each)."""
    return (tuple(keys.items()), shadow)


def rebind(parsed: tuple, keys: dict, shadow: tuple) -> tuple:
    """(guard, opcode, operands) of a parsed instruction with its registers bound to the
    declarations of the state (keys, shadow). Operands that bind to nothing new are kept
    (they are immutable)."""
    guard, opcode, operands = parsed
    if guard is not None:
        r = _bound(guard.reg, keys, shadow)
        if r is not guard.reg and type(r) is Reg:
            guard = Guard(r, guard.negated)
    out = []
    for op in operands:
        t = type(op)
        if t is Reg:            # most operands: a plain register, bound in line
            if not op.special:
                key = keys.get(op.name)
                if key is not None:
                    op = _KEYED.get(key) or _keyed(op.name, key)
            elif shadow:
                op = _bound(op, keys, shadow)
        elif t is not Imm and t is not Symbol:
            op = _bind_op(op, keys, shadow)
        out.append(op)
    return guard, opcode, tuple(out)


_KEYED: dict = {}       # key -> the Reg of a register declared in a nested block


def clear_caches() -> None:
    """Forget the keyed registers (the parser calls this per module to bound memory)."""
    _KEYED.clear()


def _keyed(name: str, key: str) -> Reg:
    """The Reg `name` with identity `key` (one object for all its uses: Regs are
    immutable)."""
    r = _KEYED.get(key)
    if r is None:
        r = _KEYED[key] = Reg(name, False, key)
    return r


def _declares(entry: tuple, name: str) -> bool:
    base, n, _tag = entry
    if n is None:
        return name == base
    tail = name[len(base):]
    return name.startswith(base) and tail.isdigit() and int(tail) < n and \
        (tail == "0" or tail[0] != "0")


def _shadowing(name: str, shadow: tuple) -> Reg | None:
    """The ordinary register a special register's `name` denotes under the declarations
    `shadow` (innermost last), or None when none of them declares it."""
    for entry in reversed(shadow):
        if _declares(entry, name):
            tag = entry[2]
            return Reg(name, False, name + tag if tag else None)
    return None


def _rebind(g: Guard | None, operands: tuple, keys: dict, shadow: tuple) -> tuple:
    """(guard, operands) with scoped registers keyed."""
    if g is not None:
        r = _bound(g.reg, keys, shadow)
        if r is not g.reg and type(r) is Reg:
            g = Guard(r, g.negated)
    return g, tuple([_bind_op(op, keys, shadow) for op in operands])


def _bound(r: Reg, keys: dict, shadow: tuple):
    """`r` bound to its declaration: a keyed Reg, an ordinary Reg for a shadowed special
    name, an Element of a declared vector for `%tid.x` under `.reg .v4 .b32 %tid`, or `r`."""
    if r.special:
        if not shadow:
            return r
        hit = _shadowing(r.name, shadow)
        if hit is not None:
            return hit
        base, dot, elem = r.name.rpartition(".")
        if dot:
            hit = _shadowing(base, shadow)
            if hit is not None:
                return Element(hit, elem)
        return r
    key = keys.get(r.name)
    return r if key is None else _keyed(r.name, key)


def _reg_of(op, keys: dict, shadow: tuple):
    """A Reg slot (an address base, a negation, an element's vector) bound: stays a Reg."""
    r = _bound(op, keys, shadow)
    return r if type(r) is Reg else op


def _bind_op(op, keys: dict, shadow: tuple):
    t = type(op)
    if t is Reg:
        return _bound(op, keys, shadow)
    if t is Imm or t is Symbol:
        return op
    if t is Vector:
        items = [_bind_op(i, keys, shadow) for i in op.items]
        return op if all(map(is_, items, op.items)) else Vector(tuple(items))
    if t is ParenList:
        return ParenList(tuple(_bind_op(i, keys, shadow) for i in op.items))
    if t is PredPair:
        return PredPair(_bind_op(op.first, keys, shadow), _bind_op(op.second, keys, shadow))
    if t is Negated:
        return Negated(_reg_of(op.reg, keys, shadow))
    if t is Element:
        return Element(_reg_of(op.reg, keys, shadow), op.elem)
    if t is Offset:
        base = _reg_of(op.base, keys, shadow) if type(op.base) is Reg else op.base
        return Offset(base, op.offset, op.text)
    if t is Address:
        base = _reg_of(op.base, keys, shadow) if type(op.base) is Reg else op.base
        return Address(base, op.offset, tuple(_bind_op(i, keys, shadow) for i in op.extra))
    return op


def shadows_at(fn: Function, st: Statement) -> tuple:
    """The declarations of special registers' names in force at statement `st` (outermost
    first), for text spliced in there: `.reg .b32 %smid;` above a cut makes the call
    text's `%smid` the kernel's variable."""
    chain = []
    blk = st.block
    while blk is not None:
        chain.append(blk)
        blk = blk.parent
    tags = {id(b): f"{SEP}B{k}" for k, b in enumerate(scope_blocks(fn), 1)}
    out = []
    for blk in reversed(chain):
        tag = "" if blk is fn.body else tags.get(id(blk), "")
        for d in declared_registers(blk):
            if d.start < st.start and _shadows_special(d):
                out.append((d.name, d.count, tag))
    return tuple(out)


def bind_outer(fn: Function, shadow: tuple) -> None:
    """Bind the special-register names of `fn` (a splice text's wrapper) that the
    declarations `shadow` (from `shadows_at`) make ordinary registers."""
    if not shadow:
        return
    for st in fn.statements:
        if not st.is_label:
            st.guard, st.operands = _rebind(st.guard, st.operands, {}, shadow)


def scope_blocks(fn: Function) -> list:
    """Every nested block of `fn` that declares registers, outer blocks first."""
    out = []
    stack = [i for i in (fn.body.items if fn.body is not None else ()) if isinstance(i, Block)]
    while stack:
        blk = stack.pop(0)
        if declared_registers(blk):
            out.append(blk)
        stack[:0] = [i for i in blk.items if isinstance(i, Block)]
    return out


class Labels:
    """Label lookup with PTX's scoping: a label belongs to the `{ }` block it is written in
    and is visible there and in the blocks inside it, so the same label may appear in two
    blocks of one function (inline-asm retry loops `LAB_WAIT: ... bra LAB_WAIT;` inlined
    twice). A branch names the label of its innermost enclosing block that has one."""

    def __init__(self, fn: Function):
        self.fn = fn
        self._at: dict = {}
        self.unique = True
        seen = set()
        for st in fn.statements:
            if st.is_label:
                self._at.setdefault((id(st.block), st.label), st)
                if st.label in seen:
                    self.unique = False
                seen.add(st.label)

    def resolve(self, st: Statement, name: str) -> Statement | None:
        """The label statement `name` means at statement `st`, or None."""
        if self.unique:
            return self.fn.label_statement(name)
        blk = st.block
        while blk is not None:
            hit = self._at.get((id(blk), name))
            if hit is not None:
                return hit
            blk = blk.parent
        return None


_DECLS: dict = {}


def register_decl(fn: Function, reg: str) -> Decl | None:
    """The `.reg` declaration of `reg` visible at function scope (body-level, then nested
    blocks), or None; memoised for the last function asked about, which the checks ask
    about register after register."""
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
