"""Register identity across `{ }` scopes.

PTX lets a nested block declare a register whose name an outer scope already uses:

    mov.u32 %r2, 7;
    { .reg .b32 %r2; mov.u32 %r2, 5; add.u32 %r3, %r1, %r2; }
    add.u32 %r4, %r3, %r2;          // the outer %r2: still 7

The two `%r2` are different registers. Every analysis (def/use, liveness, provenance,
recipe checks, outline) works on register *keys*: a register declared in the function body
(or not declared at all) keeps its name as key; one declared in a nested block gets the key
`NAME@L<line>` (the declaration's physical line, `c<column>` added when two declarations of
the name share a line). `bind_scopes` stores the key in each `Reg` operand that refers to a
scoped declaration, so `Reg.key` is all an analysis needs.

The `@` cannot occur in a PTX identifier, so a key never collides with a real name.
"""

from __future__ import annotations

from .model import (Address, Block, Decl, Element, Function, Guard, Negated, Offset, ParenList,
                    PredPair, Reg, Statement, Vector)

SEP = "@"


def is_scoped(key: str) -> bool:
    """True for the key of a register declared in a nested `{ }` block."""
    return SEP in key


def source_name(key: str) -> str:
    """The name the PTX text uses for register `key` (`%r2` of `%r2@L13`)."""
    i = key.find(SEP)
    return key if i < 0 else key[:i]


def declaration_line(key: str) -> int:
    """The physical line of the declaration a scoped key names (0 for an unscoped one)."""
    i = key.find(SEP + "L")
    if i < 0:
        return 0
    digits = ""
    for ch in key[i + 2:]:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits)


def declared_registers(blk: Block) -> list:
    """The `.reg` Decls a block declares itself (not those of blocks inside it)."""
    return [d for d in blk.decls if d.space == ".reg"]


def _column(fn: Function, d: Decl) -> int:
    text = fn.module.text if fn.module is not None else ""
    return d.start - (text.rfind("\n", 0, d.start) + 1) + 1


def _keys_of(fn: Function, blk: Block, lines_used: dict) -> dict:
    """name -> key for every register `blk` declares (ranges expanded)."""
    out = {}
    for d in declared_registers(blk):
        tag = f"L{d.line}"
        others = lines_used.setdefault(d.line, set())
        if d.name in others:
            tag += f"c{_column(fn, d)}"
        others.add(d.name)
        for name in d.names():
            out[name] = f"{name}{SEP}{tag}"
    return out


def bind_scopes(fn: Function) -> None:
    """Give every register operand of `fn` that refers to a nested block's declaration
    that declaration's key (`Reg.ident`). Functions without nested `.reg` declarations are
    left untouched (the common case costs one walk over the blocks)."""
    if fn.body is None or not _has_nested_regs(fn.body):
        return
    lines_used: dict = {}

    def walk(blk: Block, keys: dict) -> None:
        if blk is not fn.body:
            own = _keys_of(fn, blk, lines_used)
            if own:
                keys = {**keys, **own}
        for item in blk.items:
            if isinstance(item, Block):
                walk(item, keys)
            elif isinstance(item, Statement) and keys and not item.is_label:
                _rebind(item, keys)

    walk(fn.body, {})


def _has_nested_regs(body: Block) -> bool:
    stack = [i for i in body.items if isinstance(i, Block)]
    while stack:
        blk = stack.pop()
        if declared_registers(blk):
            return True
        stack.extend(i for i in blk.items if isinstance(i, Block))
    return False


def _rebind(st: Statement, keys: dict) -> None:
    g = st.guard
    if g is not None and not g.reg.special and g.reg.name in keys:
        st.guard = Guard(_bound(g.reg, keys), g.negated)
    st.operands = tuple(_bind_op(op, keys) for op in st.operands)


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
