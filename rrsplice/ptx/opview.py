"""The typed opcode view of a statement: its modifiers decoded once into named facts (the
family and its registry row, state space, types, vector width, rounding, `ftz`, `sat`,
`.cc`, `.hi/.lo/.wide`, comparison, call parts, branch targets).

Built lazily (`Statement.view`), so parsing costs nothing more; readers that match on the
view instead of re-splitting `st.modifiers` see one decoding of the PTX ISA's modifier
vocabulary. Facts from the PTX ISA 9.0 chapter "Instructions" (the instruction syntax lines
of each opcode).
"""

from __future__ import annotations

from dataclasses import dataclass

from .isa import TYPES, PtxType, family_key, info

#: rounding modifiers (floating-point `.rn .rz .rm .rp`, integer `.rni .rzi .rmi .rpi`,
#: `.rna` of the narrow conversions, `.rs` stochastic)
ROUNDINGS = frozenset({"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "rs"})
#: state spaces an access names (`::cta` etc. are sub-qualifiers of the space before them)
STATE_SPACES = frozenset({"global", "shared", "local", "param", "const", "tex"})
#: comparison operators of setp/set/slct (integer, unsigned, float ordered and unordered)
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ",
                         "neu", "ltu", "leu", "gtu", "geu", "num", "nan"})
#: boolean combining operators of setp/set (`setp.lt.and.s32 p, a, b, q`)
BOOL_OPS = frozenset({"and", "or", "xor"})
#: the multiply-width modifiers of mul/mad
WIDTHS = frozenset({"hi", "lo", "wide"})
#: the approximation modifiers of the floating-point transcendental opcodes
PRECISIONS = frozenset({"approx", "full"})


@dataclass(frozen=True)
class OpView:
    """The decoded opcode of one statement. `types` lists the type modifiers in written
    order (`cvt.rn.f16.f32`: (f16, f32): destination first)."""
    family: str | None               # registry key (`bar.sync`, `ld`, `cvt`)
    base: str | None
    modifiers: tuple
    types: tuple                        # PtxType, in written order
    space: str | None                # global | shared | ... | generic (memory ops)
    vector: int                         # 1, or 2/4/8 of `.v2`/`.v4`/`.v8`
    rounding: str | None
    ftz: bool
    sat: bool                           # `.sat` or `.satfinite`
    relu: bool
    cc: bool                            # writes the carry flag (`.cc`)
    width: str | None                # hi | lo | wide
    precision: str | None            # approx | full
    compare: str | None              # setp/set comparison
    bool_op: str | None              # setp/set combining operator
    callee: str | None               # call: the function called (None: indirect)
    call_returns: tuple                 # call: the return operands
    call_args: tuple                    # call: the argument operands
    targets: tuple                      # bra/brx: label names

    @property
    def row(self):
        """The registry row of the family (rrsplice.ptx.isa.OpInfo), or None."""
        return info(self.family) if self.family else None

    @property
    def type(self) -> PtxType | None:
        """The (last-written) element type: the type an arithmetic opcode computes in."""
        return self.types[-1] if self.types else None

    @property
    def dtype(self) -> PtxType | None:
        """The destination type (the first written: `cvt.f16.f32` -> f16)."""
        return self.types[0] if self.types else None

    @property
    def bits(self) -> int | None:
        t = self.type
        return t.bits if t is not None else None

    @property
    def form(self) -> str:
        """A short name of the form (`cvt.rn.f16.f32`, `ld.global.v4.u32`), the key
        coverage reports list: the opcode without cache/scope qualifiers."""
        return ".".join([self.base or "?"] + [m for m in self.modifiers
                                               if m not in _NOISE])


#: qualifiers that change neither the value computed nor the lifted C++ (caches,
#: eviction, `.aligned`, `.uni`, `.sync` of the warp-synchronous forms is kept)
_NOISE = frozenset({"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "uni", "aligned",
                    "L1::no_allocate", "L2::128B", "L2::256B", "L2::64B"})


def build_view(st) -> OpView:
    """Decode `st`'s opcode (a label gets an empty view)."""
    from .model import ParenList, Symbol
    op = st.opcode
    if not op:
        return OpView(None, None, (), (), None, 1, None, False, False, False, False, None,
                      None, None, None, None, (), (), ())
    mods = st.modifiers
    base = st.base
    flat = [p for m in mods for p in m.split("::")]
    types = tuple(TYPES[m] for m in mods if m in TYPES)
    vector = 1
    for m in mods:
        if m in ("v2", "v4", "v8"):
            vector = int(m[1:])
    fam = family_key(op)
    row = info(op)
    space = None
    if row is not None and row.memory:
        space = next((p for p in flat if p in STATE_SPACES), "generic")
    elif base in ("cvta", "isspacep"):
        space = next((p for p in flat if p in STATE_SPACES), None)
    compare = bool_op = None
    if base in ("setp", "set", "slct"):
        compare = next((m for m in mods if m in COMPARISONS), None)
        bool_op = next((m for m in mods if m in BOOL_OPS), None)
    callee, rets, args = None, (), ()
    targets: tuple = ()
    ops = st.operands
    if base == "call":
        i = 0
        if ops and isinstance(ops[0], ParenList) and len(ops) > 1:
            rets, i = ops[0].items, 1
        if i < len(ops) and isinstance(ops[i], Symbol):
            callee = ops[i].name
        if i + 1 < len(ops) and isinstance(ops[i + 1], ParenList):
            args = ops[i + 1].items
    elif base == "bra" and ops and isinstance(ops[0], Symbol):
        targets = (ops[0].name,)
    elif base == "brx" and len(ops) > 1 and isinstance(ops[1], Symbol):
        fn = st.function
        table = fn.branch_targets.get(ops[1].name) if fn is not None else None
        targets = tuple(table.targets) if table is not None else ()
    return OpView(
        family=fam, base=base, modifiers=mods, types=types, space=space, vector=vector,
        rounding=next((m for m in mods if m in ROUNDINGS), None),
        ftz="ftz" in mods, sat="sat" in mods or "satfinite" in mods, relu="relu" in mods,
        cc="cc" in mods, width=next((m for m in mods if m in WIDTHS), None),
        precision=next((m for m in mods if m in PRECISIONS), None),
        compare=compare, bool_op=bool_op, callee=callee, call_returns=tuple(rets),
        call_args=tuple(args), targets=targets)
