"""Register identity across `{ }` scopes.

PTX lets a nested block declare a register whose name an outer scope already uses:

    mov.u32 %r2, 7;
    { .reg .b32 %r2; mov.u32 %r2, 5; add.u32 %r3, %r1, %r2; }
    add.u32 %r4, %r3, %r2;          // the outer %r2: still 7

The two `%r2` are different registers. Every analysis (def/use, liveness, provenance,
recipe checks, outline) works on register *keys*: a register declared in the function body
(or not declared at all) keeps its name as key; one declared in a nested block gets the key
`NAME@B<k>`, k numbering the function's blocks that declare registers in source order
(`declaring_block` finds the block, and its lines, again). `bind_scopes` stores the key in
each `Reg` operand that refers to a scoped declaration, so `Reg.key` is all an analysis
needs; operands still compare by their text. Block numbers, not lines, make the key: an
inline-asm block that recurs in many kernels binds to the same operands everywhere, so its
statements keep sharing one parse.

The `@` cannot occur in a PTX identifier, so a key never collides with a real name.
"""

from __future__ import annotations

from typing import Optional

from .model import (Address, Block, Element, Function, Guard, Negated, Offset, ParenList,
                    PredPair, Reg, Statement, Vector)

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


def declaring_block(fn: Function, key: str) -> Optional[Block]:
    """The `{ }` block whose declaration a scoped key names (None for an unscoped key)."""
    k = block_number(key)
    blocks = scope_blocks(fn)
    return blocks[k - 1] if 0 < k <= len(blocks) else None


def declared_registers(blk: Block) -> list:
    """The `.reg` Decls a block declares itself (not those of blocks inside it)."""
    return [d for d in blk.decls if d.space == ".reg"]


_REBOUND: dict = {}      # (operands, guard, scope keys) -> rebound: shared across kernels


def bind_scopes(fn: Function) -> None:
    """Give every register operand of `fn` that refers to a nested block's declaration
    that declaration's key (`Reg.ident`). Functions without nested `.reg` declarations are
    left untouched (the common case costs one walk over the blocks)."""
    if fn.body is None or not _has_nested_regs(fn.body):
        return
    count = [0]
    if len(_REBOUND) > 200_000:
        _REBOUND.clear()

    def walk(blk: Block, keys: dict, fp: tuple) -> None:
        if blk is not fn.body and declared_registers(blk):
            count[0] += 1
            tag = f"{SEP}B{count[0]}"
            keys = {**keys, **{n: n + tag for d in declared_registers(blk) for n in d.names()}}
            fp = tuple(sorted(keys.items()))
        for item in blk.items:
            if isinstance(item, Block):
                walk(item, keys, fp)
            elif isinstance(item, Statement) and keys and not item.is_label:
                hit = _REBOUND.get((item.operands, item.guard, fp))
                if hit is None:
                    hit = _REBOUND[(item.operands, item.guard, fp)] = _rebind(item, keys)
                item.guard, item.operands = hit

    walk(fn.body, {}, ())


def _has_nested_regs(body: Block) -> bool:
    stack = [i for i in body.items if isinstance(i, Block)]
    while stack:
        blk = stack.pop()
        if declared_registers(blk):
            return True
        stack.extend(i for i in blk.items if isinstance(i, Block))
    return False


def _rebind(st: Statement, keys: dict) -> tuple:
    """(guard, operands) of `st` with scoped registers keyed."""
    g = st.guard
    if g is not None and not g.reg.special and g.reg.name in keys:
        g = Guard(_bound(g.reg, keys), g.negated)
    return g, tuple(_bind_op(op, keys) for op in st.operands)


def _bound(r: Reg, keys: dict) -> Reg:
    key = keys.get(r.name) if not r.special else None
    return r if key is None else Reg(r.name, r.special, key)


def _bind_op(op, keys: dict):
    t = type(op)
    if t is Reg:
        return _bound(op, keys)
    if t is Vector:
        return Vector(tuple(_bind_op(i, keys) for i in op.items))
    if t is ParenList:
        return ParenList(tuple(_bind_op(i, keys) for i in op.items))
    if t is PredPair:
        return PredPair(_bind_op(op.first, keys), _bind_op(op.second, keys))
    if t is Negated:
        return Negated(_bound(op.reg, keys))
    if t is Element:
        return Element(_bound(op.reg, keys), op.elem)
    if t is Offset:
        base = _bound(op.base, keys) if type(op.base) is Reg else op.base
        return Offset(base, op.offset, op.text)
    if t is Address:
        base = _bound(op.base, keys) if type(op.base) is Reg else op.base
        return Address(base, op.offset, tuple(_bind_op(i, keys) for i in op.extra))
    if t is Element:
        return Element(_bound(op.reg, keys), op.elem)
    if t is Offset and type(op.base) is Reg:
        return Offset(_bound(op.base, keys), op.offset, op.text)
    return op


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

    def resolve(self, st: Statement, name: str) -> Optional[Statement]:
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
