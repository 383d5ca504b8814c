"""Value provenance: where a register's value comes from, resolved at a program point.

`value_of(fa, index, reg)` follows the definitions of `reg` that reach the ENTRY of
statement `index` (rrsplice.analysis.dataflow reaching definitions, so a register reused across
phases resolves to the definition that reaches *that* statement) back through `mov`,
`cvta`, integer `cvt`, `add`/`sub`/`mul`/`mad`/`shl` with constants and loads, into a
small symbolic value:

    Const(value)                     a known integer
    Index(offset, roots)             a runtime integer (lane, warp, loaded index, ...);
                                     `offset` is its value with every runtime input
                                     (the `roots`) taken as 0 -- exactly the constant term
                                     of a linear address computation
    Special(name)                    a copy of `%tid.x`, `%laneid`, ...
    ParamBlock(name)                 the kernel parameter block (`mov`/`cvta.param` of
                                     NAME_param_0)
    Param(name, offset)              a kernel-parameter load (`ld.param [NAME_param_0+40]`)
    WeightImage()                    the globalised weight image (`cvta.to.global` of the
                                     parameter field the B fragments load from, found by
                                     rrsplice.analysis.paramroles: any parameter, any offset)
    SharedAddr(symbol, offset, dynamic)   the address of a `.shared` symbol plus offset
    Offset(base, offset, dynamic)    pointer arithmetic on ParamBlock/Param/WeightImage/Load
    Load(space, base, offset, index, dynamic, width)  a value loaded from `base`
                                     (a root value above) at constant byte `offset`;
                                     element `index` of a vector load of `width`-byte
                                     elements
    Unknown(reason)                  anything else, with the reason

`dynamic` marks an address that also has a runtime part (per lane, per warp); its constant
part is still reported, which is what a weight-image offset means (the offset of lane 0 of
warp 0). `weight_offset(fa, index, reg)` gives the byte offset in the weight image of the
value `reg` holds at `index` (None when it is not a weight-image load).

`symbol_uses(fa, symbol)`: the accesses of a (`.shared`) symbol, counting accesses through
every register derived from its address, and the last one. `classify_live_in(fa, rng)`:
what a native body needs for each live-in register of a range (passed / derivable /
special / other).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ptx.isa import ADDRESS_ARITH, INT_EVAL, TYPES, element_bytes, memory_effect
from ..ptx.model import Address, Function, Imm, Reg, Statement, Symbol, Vector, is_special_register
from .dataflow import analyze
from .semantics import register_sort_key

# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Const:
    value: int

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Index:
    offset: int
    roots: tuple = ()

    def __str__(self) -> str:
        r = "runtime(" + ", ".join(self.roots) + ")"
        return r + (f"{self.offset:+d}" if self.offset else "")


@dataclass(frozen=True)
class Special:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ParamBlock:
    name: str

    def __str__(self) -> str:
        return f"parameter block {self.name}"


@dataclass(frozen=True)
class Param:
    name: str
    offset: int

    def __str__(self) -> str:
        return f"param [{self.name}+{self.offset}]"


@dataclass(frozen=True)
class WeightImage:
    def __str__(self) -> str:
        return "weight image"


@dataclass(frozen=True)
class SharedAddr:
    symbol: str
    offset: int = 0
    dynamic: bool = False

    def __str__(self) -> str:
        return f"&{self.symbol}{self.offset:+d}" + (" + runtime" if self.dynamic else "")


@dataclass(frozen=True)
class Offset:
    base: object
    offset: int
    dynamic: bool = False

    def __str__(self) -> str:
        return f"{self.base} {self.offset:+d}" + (" + runtime" if self.dynamic else "")


@dataclass(frozen=True)
class Load:
    space: str
    base: object
    offset: int
    index: int = 0
    dynamic: bool = False
    width: int = 4

    @property
    def element_offset(self) -> int:
        return self.offset + self.width * self.index

    def __str__(self) -> str:
        s = f"ld.{self.space} [{self.base} {self.offset:+d}" + (" + runtime" if self.dynamic else "") + "]"
        return s + (f" element {self.index}" if self.index else "")


@dataclass(frozen=True)
class Unknown:
    reason: str

    def __str__(self) -> str:
        return f"unknown ({self.reason})"


Value = (Const | Index | Special | ParamBlock | Param | WeightImage | SharedAddr | Offset | Load
         | Unknown)

_KNOWN_PTR = (WeightImage, ParamBlock, SharedAddr)
_OPAQUE = (Param, Load)

# ---------------------------------------------------------------- instruction helpers

# the scalar integer types (b, u, s of 8 to 64 bits) and every floating-point type
_INT_TYPES = frozenset(n for n, t in TYPES.items()
                       if t.kind in ("signed", "unsigned", "bits") and t.lanes == 1
                       and t.bits <= 64)
_FLOAT_TYPES = frozenset(n for n, t in TYPES.items() if t.is_float)
_SPACES = ("param", "global", "shared", "local", "const")


def _space(st: Statement) -> str:
    for m in st.modifiers:
        sp = m.split("::", 1)[0]
        if sp in _SPACES:
            return sp
    return "generic"


def _is_float_op(st: Statement) -> bool:
    return any(m in _FLOAT_TYPES for m in st.modifiers)


def _int_view(v):
    """('int', offset, roots) | ('known', v) | ('opaque', v) | ('unk', v)."""
    if isinstance(v, Const):
        return ("int", v.value, ())
    if isinstance(v, Index):
        return ("int", v.offset, v.roots)
    if isinstance(v, Special):
        return ("int", 0, (v.name,))
    if isinstance(v, _KNOWN_PTR):
        return ("known", v)
    if isinstance(v, Offset):
        return ("known", v) if isinstance(v.base, _KNOWN_PTR) else ("opaque", v)
    if isinstance(v, _OPAQUE):
        return ("opaque", v)
    return ("unk", v)


def _as_runtime(v) -> tuple:
    """A value used as a plain integer in non-additive arithmetic: (offset, roots)."""
    k = _int_view(v)
    if k[0] == "int":
        return k[1], k[2]
    return 0, (str(v),)


def _mk_int(offset: int, roots) -> Value:
    roots = tuple(sorted(set(roots)))
    return Index(offset, roots) if roots else Const(offset)


def split(v) -> tuple:
    """(root, constant offset, dynamic) of an address-like value."""
    if isinstance(v, SharedAddr):
        return SharedAddr(v.symbol), v.offset, v.dynamic
    if isinstance(v, Offset):
        return v.base, v.offset, v.dynamic
    return v, 0, False


def shift(v, c: int, dynamic: bool = False):
    """Address `v` plus constant `c` (plus a runtime part when `dynamic`)."""
    if isinstance(v, SharedAddr):
        return SharedAddr(v.symbol, v.offset + c, v.dynamic or dynamic)
    if isinstance(v, Offset):
        return Offset(v.base, v.offset + c, v.dynamic or dynamic)
    if c == 0 and not dynamic:
        return v
    return Offset(v, c, dynamic)


def _add(a, b) -> Value:
    ka, kb = _int_view(a), _int_view(b)
    if ka[0] == "unk":
        return a
    if kb[0] == "unk":
        return b
    if ka[0] == "int" and kb[0] == "int":
        return _mk_int(ka[1] + kb[1], ka[2] + kb[2])
    if ka[0] == "int":
        ka, kb, a, b = kb, ka, b, a
    if kb[0] == "int":
        return shift(a, kb[1], bool(kb[2]))
    if ka[0] == "known" and kb[0] == "opaque":
        return shift(a, 0, True)
    if kb[0] == "known" and ka[0] == "opaque":
        return shift(b, 0, True)
    return Unknown("sum of two addresses")


def _sub(a, b) -> Value:
    ka, kb = _int_view(a), _int_view(b)
    if ka[0] == "unk":
        return a
    if kb[0] == "unk":
        return b
    if kb[0] == "int":
        if ka[0] == "int":
            return _mk_int(ka[1] - kb[1], ka[2] + kb[2])
        return shift(a, -kb[1], bool(kb[2]))
    return Unknown("difference of addresses")


def _binop(a, b, fn) -> Value:
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    oa, ra = _as_runtime(a)
    ob, rb = _as_runtime(b)
    try:
        return _mk_int(fn(oa, ob), ra + rb)
    except (ValueError, OverflowError):
        return Unknown("shift out of range")


# ---------------------------------------------------------------- the engine

_LOOP = Unknown("value depends on itself around a loop")
# opcodes whose values the engine follows: integer evaluation (the registry's) and loads
_HANDLED = frozenset(INT_EVAL) | {"ld", "ldu"}


class _Engine:
    """Memoised value of (defining statement, register), computed without recursion."""

    def __init__(self, fa):
        self.fa = fa
        self.fn: Function = fa.fn
        self.stmts = self.fn.statements
        self.memo: dict = {}
        self.rd_cache: dict = {}
        self.params = {p.name for p in self.fn.params}
        self.p0 = self.fn.params[0].name if self.fn.params else None
        shared = set()
        self.pred_decls = []
        for d in self.fn.decls():
            if d.space == ".shared":
                shared.add(d.name)
            elif d.space == ".reg" and d.type == ".pred":
                self.pred_decls.append(d)
        mod = self.fn.module
        if mod is not None:
            for d in mod.decls:
                if d.space == ".shared":
                    shared.add(d.name)
        self.shared = shared

    # reaching definitions, cached
    def rd(self, index: int, reg: str) -> tuple:
        key = (index, reg)
        got = self.rd_cache.get(key)
        if got is None:
            got = tuple(self.fa.reaching_defs(index, reg))
            self.rd_cache[key] = got
        return got

    @property
    def weight(self):
        """(parameter, offset) of the weight pointer (rrsplice.analysis.paramroles), or None."""
        w = getattr(self, "_weight", False)
        if w is False:
            from .paramroles import weight_param
            ref = weight_param(self.fa)
            w = self._weight = (ref.name, ref.offset) if ref is not None else None
        return w

    def is_weight(self, root) -> bool:
        return isinstance(root, WeightImage) or (
            isinstance(root, Param) and (root.name, root.offset) == self.weight)

    # public
    def machine_state(self, reg: str) -> bool:
        """True for a special register: a special name the function does not declare as a
        variable (a declared `%smid` is a register of the analysis, see rrsplice.ptx.scopes)."""
        return is_special_register(reg) and reg not in self.fa.bit

    def value_at(self, index: int, reg: str) -> Value:
        if self.machine_state(reg):
            return Special(reg)
        defs = self.rd(index, reg)
        if not defs:
            return Unknown(f"no definition of {reg} reaches s{index}")
        for d in defs:
            self._ensure((d, reg))
        return self._merge(reg, defs, [self.memo[(d, reg)] for d in defs])

    def def_value(self, d: int, reg: str) -> Value:
        self._ensure((d, reg))
        return self.memo[(d, reg)]

    @staticmethod
    def _merge(reg, defs, vals) -> Value:
        first = vals[0]
        if all(v == first for v in vals[1:]):
            return first
        return Unknown(f"{len(defs)} definitions of {reg} reach with different values ("
                       + ", ".join(f"s{d}" for d in defs[:6]) + (", ..." if len(defs) > 6 else "")
                       + ")")

    def _ensure(self, key) -> None:
        memo = self.memo
        if key in memo:
            return
        stack = [key]
        expanded = set()
        while stack:
            k = stack[-1]
            if k in memo:
                stack.pop()
                continue
            if k in expanded:
                memo[k] = self._compute(*k)
                stack.pop()
                continue
            expanded.add(k)
            for dep in self._deps(*k):
                if dep not in memo and dep not in expanded:
                    stack.append(dep)

    # which (def, reg) values statement d needs to compute reg
    def _sources(self, st: Statement) -> list:
        base = st.base
        if base not in _HANDLED:
            return []
        ops = st.operands
        if base in ("ld", "ldu"):
            if len(ops) > 1 and isinstance(ops[1], Address) and isinstance(ops[1].base, Reg):
                return [ops[1].base]
            return []
        if base in ("add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "neg") \
                and _is_float_op(st):
            return []
        if base == "cvt" and not all(m in _INT_TYPES for m in st.modifiers
                                     if m in _INT_TYPES or m in _FLOAT_TYPES):
            return []
        return [op for op in ops[1:] if isinstance(op, Reg)]

    def _deps(self, d: int, reg: str) -> list:
        st = self.stmts[d - 1]
        out = []
        for r in self._sources(st):
            if r.special:
                continue
            for dd in self.rd(d, r.key):
                out.append((dd, r.key))
        return out

    def _val(self, d: int, op) -> Value:
        """An operand's value at the entry of statement d (deps already computed)."""
        if isinstance(op, Reg):
            if op.special:
                return Special(op.name)
            defs = self.rd(d, op.key)
            if not defs:
                return Unknown(f"no definition of {op.key} reaches s{d}")
            return self._merge(op.key, defs, [self.memo.get((dd, op.key), _LOOP) for dd in defs])
        if isinstance(op, Imm):
            if op.kind_name == "int":
                return Const(int(op.value))
            return Unknown("floating-point constant")
        if isinstance(op, Symbol):
            return self._symbol(op.name)
        if isinstance(op, Vector):
            return Unknown("packed from several registers")
        return Unknown(f"{op.kind} operand")

    def _symbol(self, name: str) -> Value:
        if name in self.params:
            return ParamBlock(name)
        if name in self.shared:
            return SharedAddr(name)
        return Unknown(f"address of {name}")

    def _compute(self, d: int, reg: str) -> Value:
        st = self.stmts[d - 1]
        base = st.base
        ops = st.operands
        if base not in _HANDLED or not ops:
            return Unknown(f"defined by {st.opcode}")
        if base in ("ld", "ldu"):
            return self._load(st, d, reg)
        dest = ops[0]
        if not isinstance(dest, Reg):
            return Unknown(f"one of several results of {st.opcode}")
        if base in ("add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "neg") \
                and _is_float_op(st):
            return Unknown(f"floating-point {base}")
        src = [self._val(d, op) for op in ops[1:]]
        if not src:
            return Unknown(f"{st.opcode} without sources")
        mods = st.modifiers
        if base == "mov":
            return src[0]
        if base == "cvta":
            v = src[0]
            if "to" in mods and "global" in mods:
                root, off, dyn = split(v)
                if self.is_weight(root):
                    return shift(WeightImage(), off, dyn)
            return v
        if base == "cvt":
            if not all(m in _INT_TYPES for m in mods if m in _INT_TYPES or m in _FLOAT_TYPES):
                return Unknown("floating-point conversion")
            return src[0]
        if base == "neg":
            return _binop(Const(0), src[0], INT_EVAL["sub"])
        if len(src) < 2:
            return Unknown(f"{st.opcode} with one source")
        a, b = src[0], src[1]
        if base == "add":
            if "cc" in mods:
                return Unknown("add with carry")
            return _add(a, b)
        if base == "sub":
            if "cc" in mods:
                return Unknown("subtract with carry")
            return _sub(a, b)
        if base in ("mul", "mad") and "hi" in mods:
            return Unknown("high half of a product")
        if base == "mad":
            if len(src) < 3:
                return Unknown(f"{st.opcode} with two sources")
            return _add(_binop(a, b, INT_EVAL["mul"]), src[2])
        fn2 = INT_EVAL.get(base)
        if fn2 is not None:
            return _binop(a, b, fn2)
        return Unknown(f"defined by {st.opcode}")

    def _load(self, st: Statement, d: int, reg: str) -> Value:
        ops = st.operands
        if len(ops) < 2 or not isinstance(ops[1], Address):
            return Unknown(f"{st.opcode} without an address")
        dest = ops[0]
        if isinstance(dest, Reg):
            idx = 0
        elif isinstance(dest, Vector):
            idx = None
            for i, item in enumerate(dest.items):
                if isinstance(item, Reg) and item.key == reg:
                    idx = i
                    break
            if idx is None:
                return Unknown(f"{reg} is not a destination of s{d}")
        else:
            return Unknown(f"{st.opcode} destination")
        assert idx is not None  # each branch above found an index or returned
        addr = ops[1]
        if isinstance(addr.base, Reg):
            bv = self._val(d, addr.base)
        elif isinstance(addr.base, Symbol):
            bv = self._symbol(addr.base.name)
        elif addr.base is None:
            bv = Const(0)
        else:
            return Unknown("load address")
        if isinstance(bv, Unknown):
            return Unknown(f"load through an unknown address ({bv.reason})")
        root, off, dyn = split(bv)
        off += addr.offset
        space = _space(st)
        width = element_bytes(st.modifiers)
        if isinstance(root, ParamBlock) and not dyn and space in ("param", "generic"):
            return Param(root.name, off + width * idx)
        if isinstance(root, (Const, Index)):
            return Unknown("load from an integer address")
        return Load(space, root, off, idx, dyn, width)


# the engines of the most recent analyses (an engine holds its analysis, and through it the
# module: a weak-keyed table would keep every one alive, so this is a small LRU instead)
_ENGINES_BY_ID: dict = {}
_ENGINES_KEPT = 4


def _engine(fa) -> _Engine:
    eng = _ENGINES_BY_ID.pop(id(fa), None)
    if eng is None or eng.fa is not fa:
        eng = _Engine(fa)
    _ENGINES_BY_ID[id(fa)] = eng
    while len(_ENGINES_BY_ID) > _ENGINES_KEPT:
        _ENGINES_BY_ID.pop(next(iter(_ENGINES_BY_ID)))
    return eng


# ---------------------------------------------------------------- public API

def value_of(fa, index: int, reg: str) -> Value:
    """The symbolic value `reg` holds at the ENTRY of statement `index`."""
    return _engine(fa).value_at(index, reg)


def def_value(fa, index: int, reg: str) -> Value:
    """The symbolic value statement `index` writes to `reg`."""
    return _engine(fa).def_value(index, reg)


def weight_offset(fa, index: int, reg: str) -> int | None:
    """The weight-image byte offset of the value `reg` holds at the entry of `index`
    (lane 0 of warp 0 when the address also has a runtime part); None if it is not a load
    from the weight image."""
    v = value_of(fa, index, reg)
    if isinstance(v, Load) and _engine(fa).is_weight(v.base):
        return v.element_offset
    return None


# ---------------------------------------------------------------- symbol uses



@dataclass(frozen=True)
class Access:
    index: int          # statement number
    line: int
    kind: str           # "read" | "write" | "atomic" | "address" | "escape"
    via: str | None  # the register holding the address (None: the symbol itself)
    opcode: str
    text: str

    @property
    def sid(self) -> str:
        return f"s{self.index}"

    def to_json(self) -> dict:
        return {"sid": self.sid, "line": self.line, "kind": self.kind, "via": self.via,
                "opcode": self.opcode, "text": self.text}


@dataclass
class SymbolUses:
    symbol: str
    accesses: tuple = ()      # Access, program order
    derived: tuple = ()       # (reg, defining statement)

    def _last(self, kinds) -> Access | None:
        found = [a for a in self.accesses if a.kind in kinds]
        return max(found, key=lambda a: a.index) if found else None

    @property
    def last_access(self) -> Access | None:
        return self._last(("read", "write", "atomic"))

    @property
    def last_read(self) -> Access | None:
        return self._last(("read", "atomic"))

    @property
    def last_write(self) -> Access | None:
        return self._last(("write", "atomic"))

    @property
    def derived_registers(self) -> list:
        seen, out = set(), []
        for r, _ in self.derived:
            if r not in seen:
                seen.add(r)
                out.append(r)
        return out

    def to_json(self) -> dict:
        la, lr, lw = self.last_access, self.last_read, self.last_write
        return {"symbol": self.symbol, "accesses": [a.to_json() for a in self.accesses],
                "derived": [{"register": r, "defined_at": f"s{d}"} for r, d in self.derived],
                "derived_registers": self.derived_registers,
                "last_access": la.to_json() if la else None,
                "last_read": lr.to_json() if lr else None,
                "last_write": lw.to_json() if lw else None}


def _mentions_symbol(op, symbol: str) -> bool:
    if isinstance(op, Symbol):
        return op.name == symbol
    if isinstance(op, (Vector,)):
        return any(_mentions_symbol(i, symbol) for i in op.items)
    return False


def _access_kind(st: Statement, pos: int, n_addr_before: int) -> str:
    """read | write | atomic for the n-th address of `st`, from the registry's memory
    effect (a copy writes its first address and reads the others; an unknown effect counts
    as atomic: it may do both)."""
    effect = memory_effect(st.opcode)
    if effect in ("read", "prefetch"):
        return "read"
    if effect == "write":
        return "write"
    if effect == "copy":
        return "write" if n_addr_before == 0 else "read"
    if effect == "atomic" and st.base == "cp" and n_addr_before > 0:
        return "read"            # cp.reduce: the source is only read
    return "atomic"


def symbol_accesses(fn: Function, sym: str) -> list:
    """(index, 'read'|'write'|'both') of every memory access of `sym`, directly or through a
    register derived from its address, in statement order: `symbol_uses`, reduced to the
    JSON the recipe checks' facts memo keeps."""
    kinds = {"read": "read", "write": "write", "atomic": "both"}
    return sorted((a.index, kinds[a.kind]) for a in symbol_uses(analyze(fn), sym).accesses
                  if a.kind in kinds)


def symbol_uses(fa, symbol: str) -> SymbolUses:
    """Every access of `symbol` (directly `[sym+off]`, or through a register derived from
    its address by mov/cvta/cvt/add/sub/mad/and/or/xor/selp), the derived registers, and
    where its address escapes (stored, or passed to a call). Computed once per analysis:
    several checks of one run ask for the same array."""
    return fa.derived(("symbol_uses", symbol), lambda: _symbol_uses(fa, symbol))


def _symbol_uses(fa, symbol: str) -> SymbolUses:
    fn: Function = fa.fn
    eng = _engine(fa)
    stmts = fn.statements
    du = fa.du
    tainted: set = set()          # (def index, reg)
    tainted_names: set = set()
    derived: list = []
    address_at: dict = {}

    def taint(i: int):
        for r in du[i - 1].defs:
            if ":" in r:
                continue
            if (i, r) not in tainted:
                tainted.add((i, r))
                tainted_names.add(r)
                derived.append((r, i))

    for i, st in enumerate(stmts, 1):
        if st.is_label:
            continue
        for op in st.operands[1:] if st.operands else ():
            if _mentions_symbol(op, symbol):
                address_at[i] = None
                if st.base in ADDRESS_ARITH:
                    taint(i)
                break
    # propagate through address arithmetic until nothing changes
    changed = True
    while changed:
        changed = False
        for i, st in enumerate(stmts, 1):
            if st.is_label or st.base not in ADDRESS_ARITH:
                continue
            uses = du[i - 1].uses
            if tainted_names.isdisjoint(uses):
                continue
            for r in uses:
                if r in tainted_names and any((d, r) in tainted for d in eng.rd(i, r)):
                    before = len(tainted)
                    taint(i)
                    if len(tainted) != before:
                        changed = True
                        address_at.setdefault(i, r)
                    break

    def via_tainted(i: int, r: str) -> bool:
        return r in tainted_names and any((d, r) in tainted for d in eng.rd(i, r))

    accesses = []
    for i, st in enumerate(stmts, 1):
        if st.is_label:
            continue
        found = False
        n_addr = 0
        for pos, op in enumerate(st.operands):
            if isinstance(op, Address):
                b = op.base
                hit: tuple[bool, str | None] | None = None
                if isinstance(b, Symbol) and b.name == symbol:
                    hit = (True, None)
                elif isinstance(b, Reg) and via_tainted(i, b.key):
                    hit = (True, b.key)
                if hit:
                    accesses.append(Access(i, st.line, _access_kind(st, pos, n_addr), hit[1],
                                           st.opcode, st.text.strip()))
                    found = True
                n_addr += 1
        if found:
            continue
        if i in address_at:
            accesses.append(Access(i, st.line, "address", address_at[i], st.opcode,
                                   st.text.strip()))
            continue
        # the address itself stored or handed to a call: it escapes
        if st.base in ("st", "call", "atom", "red"):
            for _pos, op in enumerate(st.operands):
                if isinstance(op, Address):
                    continue
                for r in op.registers():
                    if via_tainted(i, r.key):
                        accesses.append(Access(i, st.line, "escape", r.key, st.opcode,
                                               st.text.strip()))
                        found = True
                        break
                if found:
                    break
    accesses.sort(key=lambda a: a.index)
    return SymbolUses(symbol, tuple(accesses), tuple(derived))


# ---------------------------------------------------------------- live-in classification


@dataclass(frozen=True)
class LiveIn:
    reg: str
    klass: str              # "passed" | "derivable" | "special" | "other"
    detail: str
    reaching_defs: tuple    # statement numbers of the definitions reaching the range

    def to_json(self) -> dict:
        return {"register": self.reg, "class": self.klass, "detail": self.detail,
                "reaching_defs": [f"s{d}" for d in self.reaching_defs]}


_READ_ONLY = "a read-only-looking load (ld.global.nc, ld.const, ld.param, ldu)"


def _read_only_load(st: Statement) -> bool:
    if st.base == "ldu":
        return True
    if st.base != "ld":
        return False
    mods = st.modifiers
    sp = _space(st)
    return sp in ("const", "param") or (sp == "global" and "nc" in mods)


def _is_predicate(eng: _Engine, reg: str) -> bool:
    return any(d.declares(reg) for d in eng.pred_decls)


def classify_live_in(fa, rng, passed=None) -> list[LiveIn]:
    """Classify each live-in register of statement range `rng` for a native body.

    * passed    -- a value the body must be handed (with `passed`: one the call hands
                   over, a predicate included; without: the least set a call must pass)
    * derivable -- every definition reaching the range is a read-only-looking load at a
                   constant offset from a pointer register that is itself live-in to the
                   range (and not itself derivable), with the same pointer value at the
                   range entry: the body can reload it. With `passed`, the pointer must be
                   passed. `ld.param` of a kernel parameter is derivable from a live-in
                   (passed) register holding the parameter block.
    * special   -- a plain copy of a special register (`%tid.x`, `%laneid`, ...): the body
                   can read it itself
    * other     -- cannot be handed over as a value: a predicate register, a register with
                   no reaching definition (undefined), or (with `passed`) "not passed"
    """
    eng = _engine(fa)
    first = rng.first
    live = list(fa.range_live_in(rng))
    liveset = set(live)
    passed_set = set(passed) if passed is not None else None
    pred = {r for r in live if _is_predicate(eng, r)}
    entries = list(getattr(fa, "range_entries", lambda _r: [first])(rng)) or [first]
    if first not in entries:
        entries.insert(0, first)
    defs_of = {r: _outside_defs(eng, entries, rng, r) for r in live}
    values = {r: _merged(eng, r, defs_of[r]) for r in live if defs_of[r]}

    # candidates: (pointer register, detail) for registers reloadable from a pointer
    block_regs: dict = {}
    for r in live:
        if isinstance(values.get(r), ParamBlock) and r not in pred:
            block_regs.setdefault(values[r].name, []).append(r)
    cand: dict = {}
    for r in live:
        if r in pred or not defs_of[r]:
            continue
        got = _reload(eng, r, defs_of, liveset, block_regs)
        if got is not None:
            cand[r] = got

    out = []
    for r in live:
        d = defs_of[r]
        if r in pred and passed_set is not None and r in passed_set:
            # the call text converts it to an integer and passes that: accepted
            out.append(LiveIn(r, "passed", "passed (predicate register)", d))
            continue
        if r in pred:
            out.append(LiveIn(r, "other", "predicate register: cannot be passed as a value "
                                          "(pass it as an integer or recompute it)", d))
            continue
        if not d:
            out.append(LiveIn(r, "other", "undefined: no definition reaches the range", d))
            continue
        if passed_set is not None and r in passed_set:
            out.append(LiveIn(r, "passed", "passed", d))
            continue
        v = values[r]
        c = cand.get(r)
        if passed_set is not None:
            ok = c is not None and c[0] in passed_set
        else:
            ok = c is not None and c[0] not in cand
        if ok:
            assert c is not None  # ok implies a candidate
            out.append(LiveIn(r, "derivable", c[1], d))
        elif isinstance(v, Special):
            out.append(LiveIn(r, "special", f"copy of {v.name}", d))
        elif passed_set is not None:
            out.append(LiveIn(r, "other", "not passed", d))
        else:
            out.append(LiveIn(r, "passed", _value_note(eng, v), d))
    out.sort(key=lambda x: register_sort_key(x.reg))
    return out


def _value_note(eng: _Engine, v) -> str:
    if isinstance(v, Unknown):
        return "value"
    if isinstance(v, Load) and eng.is_weight(v.base):
        return f"value (weight image +{v.element_offset})"
    if isinstance(v, WeightImage):
        return "value (the weight image pointer)"
    if isinstance(v, ParamBlock):
        return "value (the parameter block pointer)"
    return f"value ({v})"


def _outside_defs(eng: _Engine, entries, rng, reg: str) -> tuple:
    """Definitions of `reg` made outside `rng` that reach one of its entries."""
    out: set = set()
    for e in entries:
        out.update(d for d in eng.rd(e, reg) if not (rng.first <= d <= rng.last))
    return tuple(sorted(out))


def _merged(eng: _Engine, reg: str, defs: tuple):
    if eng.machine_state(reg):
        return Special(reg)
    return eng._merge(reg, defs, [eng.def_value(d, reg) for d in defs])


def _reload(eng: _Engine, reg: str, defs_of: dict, liveset: set, block_regs: dict):
    """(pointer register, detail) if every reaching definition of `reg` is the same
    read-only load from a live-in pointer (or from the parameter block)."""
    defs = defs_of[reg]
    found = None
    for d in defs:
        st = eng.stmts[d - 1]
        if not _read_only_load(st) or len(st.operands) < 2:
            return None
        addr = st.operands[1]
        if not isinstance(addr, Address):
            return None
        dest = st.operands[0]
        if isinstance(dest, Vector):
            idx = next((i for i, it in enumerate(dest.items)
                        if isinstance(it, Reg) and it.key == reg), None)
            if idx is None:
                return None
        else:
            idx = 0
        width = element_bytes(st.modifiers)
        b = addr.base
        if isinstance(b, Reg) and not b.special:
            if b.key not in liveset:
                return None
            # the pointer must hold the same value at the load and at the range entry
            if eng.rd(d, b.key) != defs_of.get(b.key):
                return None
            ptr = b.key
            bv = eng.value_at(d, b.key)
            root, off, dyn = split(bv) if not isinstance(bv, Unknown) else (bv, 0, False)
            total = addr.offset + width * idx
            what = ""
            if eng.is_weight(root):
                what = f" (weight image +{off + total}" + (" + runtime" if dyn else "") + ")"
            vec = f".v{len(dest.items)}" if isinstance(dest, Vector) else ""
            elem = f" element {idx}" if isinstance(dest, Vector) else ""
            ld = "ld." + ".".join(m for m in st.modifiers if m in ("global", "nc", "const",
                                                                  "param"))
            if st.base == "ldu":
                ld = "ldu"
            detail = f"{ld}{vec} [{ptr}+{addr.offset}]{elem}{what}"
        elif isinstance(b, Symbol) and b.name in eng.params:
            regs = block_regs.get(b.name)
            if not regs:
                return None
            ptr = regs[0]
            total = addr.offset + width * idx
            detail = f"ld.param [{b.name}+{addr.offset}] (parameter block {ptr} +{total})"
        else:
            return None
        got = (ptr, detail)
        if found is not None and found != got:
            return None
        found = got
    return found
