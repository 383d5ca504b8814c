"""Kernel parameters by role: which parameter holds the weights, the bias, the debug arena.

The weight image is the pointer the B fragments load from, found by provenance
(rrsplice.analysis.threadaddr): any parameter, any offset -- a scalar `.param .u64 K_param_1`
(`param:K_param_1+0`) or a field of a struct parameter (`param:K_param_0+24`). The bias
pointer is the one the chains' bias seeds load from. Neither is assumed: a kernel whose B
fragments come from shared memory (a Triton-style kernel stages them there) has no weight
parameter unless a recipe names one (`W_PARAM`), which `name_weight` records on the analysis
before anything asks.

`ParamRef` names a pointer-sized field: the parameter, the byte offset inside it, and the
parameter's size, so a caller can refuse an offset past its end.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..ptx.isa import state_space

_WEIGHT_KEY = ("paramroles.weight",)
# texture and surface instructions address through a handle, not a pointer
_HANDLE_OPS = frozenset({"tex", "tld4", "txq", "suld", "sust", "sured", "suq", "istypep"})
_BIAS_KEY = ("paramroles.bias",)
_NAMED_KEY = ("paramroles.weight_named",)


@dataclass(frozen=True)
class ParamRef:
    """A pointer stored in kernel parameter `name` at byte `offset`."""
    name: str
    offset: int
    param_size: int | None = None

    @property
    def root(self) -> str:
        """The root name rrsplice.analysis.threadaddr gives a pointer loaded from here."""
        return f"param:{self.name}+{self.offset}"

    def __str__(self) -> str:
        return f"{self.name}+{self.offset}"

    def to_json(self) -> dict:
        return {"param": self.name, "offset": self.offset, "param_size": self.param_size}


def parse_ref(fn, text: str) -> ParamRef:
    """`NAME+OFF`, `NAME` or a parameter number (`1`, `1+24`) -> ParamRef; ValueError naming
    the parameters when there is no such parameter."""
    name, _, off = str(text).strip().partition("+")
    names = [p.name for p in fn.params]
    if name == "" and names:
        name = names[0]
    if name.isdigit() and int(name) < len(names):
        name = names[int(name)]
    if name not in names:
        raise ValueError(f"no parameter {name!r} in {fn.name} (parameters: "
                         + (", ".join(names) or "none") + ")")
    try:
        offset = int(off, 0) if off else 0
    except ValueError:
        raise ValueError(f"offset {off!r} of {text!r} is not an integer") from None
    return ParamRef(name, offset, _size(fn, name))


def _size(fn, name: str) -> int | None:
    for p in fn.params:
        if p.name == name:
            return p.byte_size
    return None


def _ref_of_root(fn, root: str | None) -> ParamRef | None:
    if not root or not root.startswith("param:") or "+" not in root:
        return None
    name, _, off = root[len("param:"):].rpartition("+")
    return ParamRef(name, int(off), _size(fn, name))


def loaded_root(fa, index: int, reg: str) -> str | None:
    """The root pointer (threadaddr's name) of the global load `reg`'s value at `index`
    comes from, through `mov` copies; None for anything else."""
    from .fragvalue import _origin
    from .threadaddr import load_address
    d, _ = _origin(fa, index, reg)
    if d is None:
        return None
    st = fa.fn.statements[d - 1]
    if st.base not in ("ld", "ldu") or state_space(st.opcode) not in ("global", "generic"):
        return None
    got = load_address(fa, d, 0)
    return got[0] if got is not None else None


def _most_loaded(fa, regs_at) -> ParamRef | None:
    counts: Counter = Counter()
    first: dict = {}
    for index, reg in regs_at:
        root = loaded_root(fa, index, reg)
        ref = _ref_of_root(fa.fn, root)
        if ref is not None:
            counts[ref] += 1
            first.setdefault(ref, len(first))
    if not counts:
        return None
    return max(counts, key=lambda r: (counts[r], -first[r]))


def weight_param(fa) -> ParamRef | None:
    """The parameter field the B fragments load from (the one most of them use), or the one
    `name_weight` recorded; None when no B fragment loads from a parameter's pointer."""
    def find():
        from .mma import find_mma
        return _most_loaded(fa, ((m.index, r) for m in find_mma(fa.fn) for r in m.b))
    return fa.derived(_WEIGHT_KEY, find)


def weight_named(fa) -> bool:
    """True when a recipe or the command line named the weight parameter."""
    return fa.derived(_NAMED_KEY, lambda: False)


def bias_param(fa) -> ParamRef | None:
    """The parameter field the mma's C operands that no mma produced load from."""
    def find():
        from .mma import find_mma
        pairs = []
        for m in find_mma(fa.fn):
            for r in m.c:
                if any(fa.fn.statements[x - 1].base == "mma"
                       for x in fa.reaching_defs(m.index, r)):
                    continue
                pairs.append((m.index, r))
        return _most_loaded(fa, pairs)
    return fa.derived(_BIAS_KEY, find)


def name_weight(fa, ref: ParamRef | None) -> None:
    """Record the weight parameter a recipe or the command line names; the evaluators that
    remember the weight pointer for `fa` are dropped so they see it."""
    fa._derived[_WEIGHT_KEY] = ref
    fa._derived[_NAMED_KEY] = True
    from . import laneaddr, provenance
    provenance._ENGINES_BY_ID.pop(id(fa), None)
    laneaddr._EVALS.pop(id(fa), None)


def name_bias(fa, ref: ParamRef | None) -> None:
    """Record the bias parameter a recipe names."""
    fa._derived[_BIAS_KEY] = ref


def apply_recipe_roles(fa, rec, weight: str | None = None) -> None:
    """Name the weight and bias parameters a recipe gives (`W_PARAM`, `BIAS_PARAM`), or
    `weight` from the command line; RecipeError-style ValueError on a bad name."""
    w = weight if weight is not None else (rec.const("W_PARAM") if rec is not None else None)
    if w is not None:
        name_weight(fa, parse_ref(fa.fn, str(w)))
    b = rec.const("BIAS_PARAM") if rec is not None else None
    if b is not None:
        name_bias(fa, parse_ref(fa.fn, str(b)))


def access_root(fa, d: int) -> str | None:
    """The root pointer (threadaddr's name) of the memory access statement `d` (a load's or
    a store's address); None when it is not known."""
    from ..ptx.model import Address
    from .threadaddr import pointer_root
    st = fa.fn.statements[d - 1]
    a = next((op for op in st.operands if isinstance(op, Address)), None)
    if a is None or a.base is None:
        return None
    return pointer_root(fa, d, a.base)


def pointer_uses(fa) -> dict:
    """ParamRef -> {"read": first statement reading through it or None, "write": first
    statement writing through it or None}, for every global/generic access whose address
    comes from a pointer loaded from a parameter."""
    from ..ptx.isa import memory_effect

    def compute():
        out: dict = {}
        for st in fa.fn.statements:
            if st.is_label:
                continue
            eff = memory_effect(st.opcode)
            if not eff or state_space(st.opcode) not in ("global", "generic") \
                    or st.base in _HANDLE_OPS:
                continue
            ref = _ref_of_root(fa.fn, access_root(fa, st.index))
            if ref is None:
                continue
            use = out.setdefault(ref, {"read": None, "write": None})
            kinds = {"read": ("read",), "write": ("write",), "atomic": ("read", "write"),
                     "copy": ("read",), "prefetch": ()}.get(eff, ())
            for k in kinds:
                if use[k] is None:
                    use[k] = st.index
        return out
    return fa.derived(("paramroles.uses",), compute)


def write_only_pointer(fa) -> ParamRef | None:
    """The first (parameter order, offset) pointer the kernel writes through and never
    reads: where a debug stage can store without changing what the kernel computes."""
    order = {p.name: i for i, p in enumerate(fa.fn.params)}
    cands = [r for r, u in pointer_uses(fa).items() if u["write"] and not u["read"]]
    cands.sort(key=lambda r: (order.get(r.name, 0), r.offset))
    return cands[0] if cands else None
