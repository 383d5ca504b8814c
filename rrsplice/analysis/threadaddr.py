"""An address evaluated for concrete threads: what `rrsplice.analysis.laneaddr`'s linear form cannot say.

nvcc computes lane addresses with `and`/`or`/`shr` of `%tid.x` (`lane & 3`, `lane >> 2`,
bit fields OR-ed together), which no linear form in the thread ids describes. Here a
register's value is computed for one thread at a time (a *probe*: `%tid.x`, `%laneid` and the
other special registers given numbers) as `(root, integer)`: `root` names the pointer the
value is an offset from -- `param:NAME+OFF` for a pointer loaded from a kernel parameter,
`param:NAME` for the parameter block itself, `shared:SYM` for the address of a shared (or
other) symbol -- or None for a plain integer. Integer instructions are evaluated with the
registry's semantics (`rrsplice.ptx.isa.INT_EVAL`), through reaching definitions; a guarded
definition, several reaching definitions, a load of anything but a parameter, or a special
register without a probe value makes the value unknown (None).

`PROBES` are the 32 lanes of warp 0 of block 0, then lane 0 with each other thread and block
id set to 1: two addresses with the same values at every probe are the same address for every
thread of an affine (or bit-field) computation, which is what fragment identity needs.
"""

from __future__ import annotations

from ..ptx.isa import INT_EVAL
from ..ptx.model import Address, Imm, Reg, Symbol, Vector

_OTHER_IDS = ("%tid.y", "%tid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z")


def _probe(lane: int, **other) -> dict:
    env = {"%tid.x": lane, "%laneid": lane}
    for name in _OTHER_IDS:
        env[name] = other.get(name, 0)
    return env


PROBES: tuple = tuple(_probe(lane) for lane in range(32)) + tuple(
    _probe(0, **{name: 1}) for name in _OTHER_IDS)
LANES = 32          # the first LANES probes are lanes 0..31 of warp 0

_FOLLOW = frozenset({"mov", "cvta", "cvt", "add", "sub", "mul", "mad", "shl", "shr", "and",
                     "or", "xor", "neg"})


class _Eval:
    def __init__(self, fa):
        self.fa = fa
        self.stmts = fa.fn.statements
        self.params = {p.name for p in fa.fn.params}
        self.memo: dict = {}

    def at(self, index: int, reg: str, probe: int):
        defs = self.fa.reaching_defs(index, reg)
        if len(defs) != 1:
            return None
        return self.defined(defs[0], reg, probe)

    def operand(self, index: int, op, probe: int):
        if isinstance(op, Reg):
            if op.special:
                v = PROBES[probe].get(op.name)
                return None if v is None else (None, v)
            return self.at(index, op.key, probe)
        if isinstance(op, Imm):
            return (None, op.value) if isinstance(op.value, int) else None
        if isinstance(op, Symbol):
            kind = "param" if op.name in self.params else "shared"
            return (f"{kind}:{op.name}", 0)
        return None

    def defined(self, d: int, reg: str, probe: int):
        key = (d, reg, probe)
        memo = self.memo
        if key in memo:
            return memo[key]
        memo[key] = None                    # a cycle is unknown
        got = self._compute(self.stmts[d - 1], d, probe)
        memo[key] = got
        return got

    def _compute(self, st, d: int, probe: int):
        base, ops = st.base, st.operands
        if st.guard is not None or len(ops) < 2 or not isinstance(ops[0], Reg):
            return None
        if base == "ld" and isinstance(ops[1], Address):
            # a pointer read from a kernel parameter: directly, or through the block's address
            a = ops[1]
            if isinstance(a.base, Symbol) and a.base.name in self.params \
                    and "param" in st.modifiers:
                return (f"param:{a.base.name}+{a.offset}", 0)
            if isinstance(a.base, Reg) and ("param" in st.modifiers
                                            or "global" not in st.modifiers):
                got = self.at(d, a.base.key, probe)
                if got is not None and got[0] is not None and got[0].startswith("param:") \
                        and "+" not in got[0]:
                    return (f"{got[0]}+{got[1] + a.offset}", 0)
            return None
        if base not in _FOLLOW:
            return None
        if base in ("mul", "mad") and "hi" in st.modifiers:
            return None
        if any(m.startswith("f") and m[1:].isdigit() for m in st.modifiers):
            return None                     # floating-point arithmetic
        srcs = [self.operand(d, op, probe) for op in ops[1:]]
        if any(s is None for s in srcs) or not srcs:
            return None
        if base in ("mov", "cvta", "cvt"):
            return srcs[0]
        roots = [r for r, _ in srcs if r is not None]
        vals = [v for _, v in srcs]
        if base == "add" and len(srcs) == 2 and len(roots) <= 1:
            return (roots[0] if roots else None, vals[0] + vals[1])
        if base == "sub" and len(srcs) == 2 and srcs[1][0] is None:
            return (srcs[0][0], vals[0] - vals[1])
        if base == "mad" and len(srcs) == 3 and srcs[0][0] is None and srcs[1][0] is None:
            return (srcs[2][0], vals[0] * vals[1] + vals[2])
        if roots:
            return None
        fn = INT_EVAL.get(base)
        try:
            return (None, fn(*vals)) if fn is not None else None
        except (TypeError, ValueError, OverflowError):
            return None


def _eval(fa) -> _Eval:
    return fa.derived(("threadaddr",), lambda: _Eval(fa))


def load_address(fa, d: int, probe: int) -> tuple | None:
    """(root, byte offset) of the address load statement `d` reads for probe `probe`."""
    st = fa.fn.statements[d - 1]
    ops = st.operands
    if len(ops) < 2 or not isinstance(ops[1], Address):
        return None
    a = ops[1]
    ev = _eval(fa)
    if isinstance(a.base, Reg):
        got = ev.at(d, a.base.key, probe)
    elif isinstance(a.base, Symbol):
        got = ev.operand(d, a.base, probe)
    else:
        return None
    if got is None or got[0] is None:
        return None
    return got[0], got[1] + a.offset


def load_addresses(fa, d: int) -> tuple | None:
    """(root, offsets at every probe) of load `d`'s address; None unless every probe
    evaluates to one root."""
    vals = [load_address(fa, d, p) for p in range(len(PROBES))]
    known = [v for v in vals if v is not None]
    if len(known) != len(vals) or len({v[0] for v in known}) != 1:
        return None
    return known[0][0], tuple(v[1] for v in known)


def destination_position(st, reg: str) -> int | None:
    """Which element of the statement's (vector) destination `reg` is."""
    dst = st.operands[0] if st.operands else None
    items = list(dst.items) if isinstance(dst, Vector) else [dst]
    return next((i for i, it in enumerate(items)
                 if isinstance(it, Reg) and it.key == reg), None)


_ADDITIVE = frozenset({"add", "sub", "mad", "mov", "cvta", "cvt"})
_UNKNOWN = "?"


def pointer_root(fa, index: int, op) -> str | None:
    """The root pointer of operand `op` at statement `index` whatever its integer part: only
    `add`/`sub`/`mad`/`mov`/`cvt`/`cvta` carry a pointer; any other integer instruction
    (`bfi`, `mul`, `and`, ...) yields an integer, a load of anything but a parameter an
    unknown value. None unless exactly one root is found."""
    got = _root(fa, index, op)
    return None if got in (None, _UNKNOWN) else got


def _root(fa, index: int, op):
    ev = _eval(fa)
    if isinstance(op, Symbol):
        return ev.operand(index, op, 0)[0]
    if not isinstance(op, Reg) or op.special:
        return None                                  # an integer
    defs = fa.reaching_defs(index, op.key)
    if len(defs) != 1:
        return _UNKNOWN
    memo = fa.derived(("threadaddr.roots",), dict)
    key = (defs[0], op.key)
    if key in memo:
        return memo[key]
    memo[key] = _UNKNOWN
    st = fa.fn.statements[defs[0] - 1]
    got = _root_of_def(fa, st)
    memo[key] = got
    return got


def _root_of_def(fa, st):
    ops = st.operands
    if st.base == "ld":
        v = _eval(fa).defined(st.index, ops[0].key, 0) if isinstance(ops[0], Reg) else None
        return v[0] if v is not None and v[0] is not None else _UNKNOWN
    if st.base not in _ADDITIVE:
        return None if st.base in INT_EVAL or st.base in ("bfi", "bfe", "selp", "min",
                                                           "max", "prmt") else _UNKNOWN
    roots = {_root(fa, st.index, o) for o in ops[1:]}
    if _UNKNOWN in roots:
        return _UNKNOWN
    roots.discard(None)
    if len(roots) > 1 or (roots and st.base == "sub" and _root(fa, st.index, ops[-1])):
        return _UNKNOWN
    return roots.pop() if roots else None
