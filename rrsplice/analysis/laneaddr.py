"""Per-lane addresses of loaded values: a load's address as a linear form in the thread ids.

`rrsplice.analysis.provenance` gives a weight-image offset as the constant part of the address (lane 0
of warp 0). A fragment map needs every lane's bytes, so this module evaluates the address
as `const + sum(coefficient x atom)` where the atoms are special registers (`%tid.x`,
`%laneid`, `%tid.z`, `%ctaid.x`, ...) and pointer roots (`W` for the weight image, the
parameter field rrsplice.analysis.paramroles finds the B fragments loading from; `param+N` for other
parameter loads). Integer `mov`, `cvt`, `cvta`,
`add`, `sub`, `mul`/`mad` by a constant (`.lo` and `.wide`) and `shl` by a constant are
followed through reaching definitions. Where that fails (nvcc's `lane & 3`, `lane >> 2`
bit fields), the address is evaluated lane by lane (rrsplice.analysis.threadaddr) and the LaneLoad
carries the 32 offsets of warp 0 instead of a linear form.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ptx.isa import element_bytes
from ..ptx.model import Address, Imm, Reg, Vector

WEIGHT = "W"


@dataclass(frozen=True)
class Linear:
    """const + sum(coef x atom); `terms` sorted by atom name, no zero coefficients."""
    const: int
    terms: tuple = ()

    def coef(self, atom: str) -> int:
        return dict(self.terms).get(atom, 0)

    def __add__(self, other: Linear) -> Linear:
        d = dict(self.terms)
        for a, c in other.terms:
            d[a] = d.get(a, 0) + c
        return Linear(self.const + other.const, tuple(sorted((a, c) for a, c in d.items() if c)))

    def scale(self, k: int) -> Linear:
        return Linear(self.const * k, tuple((a, c * k) for a, c in self.terms if c * k))


@dataclass(frozen=True)
class LaneLoad:
    """Where a register's value was loaded from: the load statement and the element's
    address as a linear form (`addr.const` is the lane-0, warp-0 byte offset from the root)."""
    load: int          # statement number of the load
    addr: Linear       # without a linear form: Linear(lane-0 offset, (root, 1)) and `lanes`
    width: int         # bytes of the loaded element
    vector: int        # elements in the load (1, 2, 4)
    lanes: tuple | None = None      # per-lane offsets of warp 0, and tid.z's step
    warp_step: int = 0

    def offset(self, lane: int = 0, warp_z: int = 0) -> int:
        """Byte offset from the root for thread (lane, 0, warp_z) of block 0."""
        if self.lanes is not None:
            return self.lanes[lane] + warp_z * self.warp_step
        a = self.addr
        return (a.const + lane * (a.coef("%tid.x") + a.coef("%laneid"))
                + warp_z * a.coef("%tid.z"))

    @property
    def lane_stride(self) -> int | None:
        """Bytes from one lane to the next, None when the lanes are not evenly spaced."""
        if self.lanes is None:
            return self.addr.coef("%tid.x") + self.addr.coef("%laneid")
        steps = {b - a for a, b in zip(self.lanes, self.lanes[1:], strict=False)}
        return steps.pop() if len(steps) == 1 else None

    @property
    def warp_stride(self) -> int:
        return self.warp_step if self.lanes is not None else self.addr.coef("%tid.z")


def _imm(op) -> int | None:
    return op.value if isinstance(op, Imm) and isinstance(op.value, int) else None


class _Eval:
    def __init__(self, fa):
        self.fa = fa
        self.stmts = fa.fn.statements
        from .paramroles import weight_param
        w = weight_param(fa)
        self.weight = (w.name, w.offset) if w is not None else None
        self.memo: dict = {}

    def at(self, index: int, reg: str) -> Linear | None:
        """The value `reg` holds at the entry of statement `index`."""
        defs = self.fa.reaching_defs(index, reg)
        if len(defs) != 1:
            return None
        return self.defined(defs[0], reg)

    def operand(self, index: int, op) -> Linear | None:
        if isinstance(op, Reg):
            if op.special:
                return Linear(0, ((op.name, 1),))
            return self.at(index, op.name)
        v = _imm(op)
        return None if v is None else Linear(v)

    def defined(self, d: int, reg: str) -> Linear | None:
        key = (d, reg)
        if key in self.memo:
            return self.memo[key]
        self.memo[key] = None          # a cycle is unknown
        got = self._compute(self.stmts[d - 1], d)
        self.memo[key] = got
        return got

    def _compute(self, st, d: int) -> Linear | None:
        base, mods, ops = st.base, st.modifiers, st.operands
        if st.guard is not None or len(ops) < 2:
            return None
        if base == "ld" and "param" in mods and isinstance(ops[1], Address):
            a = ops[1]
            if isinstance(a.base, Reg) or a.base is None:
                return None
            if (a.base.name, a.offset) == self.weight:
                return Linear(0, ((WEIGHT, 1),))
            return Linear(0, ((f"{a.base.name}+{a.offset}", 1),))
        maybe = [self.operand(d, op) for op in ops[1:]]
        if base in ("mov", "cvt", "cvta") and len(maybe) == 1:
            return maybe[0]
        if None in maybe:
            return None
        srcs = [s for s in maybe if s is not None]
        if base == "add" and len(srcs) == 2:
            return srcs[0] + srcs[1]
        if base == "sub" and len(srcs) == 2:
            return srcs[0] + srcs[1].scale(-1)
        if base == "shl" and len(srcs) == 2 and not srcs[1].terms:
            return srcs[0].scale(1 << srcs[1].const)
        if base in ("mul", "mad") and "hi" not in mods:
            x, y = srcs[0], srcs[1]
            if x.terms and y.terms:
                return None
            prod = x.scale(y.const) if not y.terms else y.scale(x.const)
            if base == "mad":
                return prod + srcs[2] if len(srcs) == 3 else None
            return prod
        return None


_EVALS: dict = {}


def _eval(fa) -> _Eval:
    ev = _EVALS.get(id(fa))
    if ev is None or ev.fa is not fa:
        ev = _Eval(fa)
        _EVALS.clear()
        _EVALS[id(fa)] = ev
    return ev


def loaded_from(fa, index: int, reg: str) -> LaneLoad | None:
    """The load that produced the value `reg` holds at the entry of `index` (through plain
    `mov` copies), with its per-lane address; None when it is not a load with a linear
    address."""
    ev = _eval(fa)
    stmts = fa.fn.statements
    for _ in range(16):
        defs = fa.reaching_defs(index, reg)
        if len(defs) != 1:
            return None
        d = defs[0]
        st = stmts[d - 1]
        ops = st.operands
        if st.base == "mov" and len(ops) == 2 and isinstance(ops[1], Reg) \
                and not ops[1].special and st.guard is None:
            index, reg = d, ops[1].name
            continue
        if st.base not in ("ld", "ldu") or len(ops) < 2 or not isinstance(ops[1], Address):
            return None
        dst = ops[0]
        items = list(dst.items) if isinstance(dst, Vector) else [dst]
        pos = next((i for i, it in enumerate(items)
                    if isinstance(it, Reg) and it.name == reg), None)
        if pos is None:
            return None
        width = element_bytes(st.modifiers)
        a = ops[1]
        if not isinstance(a.base, Reg):
            return None
        addr = ev.at(d, a.base.name)
        if addr is None:
            return _per_lane(fa, ev, d, pos, width, len(items))
        return LaneLoad(load=d, addr=addr + Linear(a.offset + pos * width), width=width,
                        vector=len(items))
    return None


def _per_lane(fa, ev, d: int, pos: int, width: int, vector: int) -> LaneLoad | None:
    """A LaneLoad from lane-by-lane evaluation (rrsplice.analysis.threadaddr), root named like the
    linear form's atoms (W for the weight parameter)."""
    from .threadaddr import LANES, PROBES, load_addresses
    got = load_addresses(fa, d)
    if got is None:
        return None
    root, offs = got
    name = root[len("param:"):] if root.startswith("param:") else root
    pname, _, poff = name.rpartition("+")
    if ev.weight is not None and root.startswith("param:") and poff.isdigit() \
            and (pname, int(poff)) == ev.weight:
        name = WEIGHT
    tz = next(i for i, p in enumerate(PROBES) if p["%tid.z"] == 1)
    lanes = tuple(o + pos * width for o in offs[:LANES])
    return LaneLoad(load=d, addr=Linear(lanes[0], ((name, 1),)), width=width, vector=vector,
                    lanes=lanes, warp_step=offs[tz] - offs[0])


def weight_load(fa, index: int, reg: str) -> LaneLoad | None:
    """`loaded_from`, only when the load reads the weight image (root W, coefficient 1)."""
    got = loaded_from(fa, index, reg)
    if got is None or got.addr.coef(WEIGHT) != 1:
        return None
    return got
