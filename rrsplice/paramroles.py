"""Kernel parameters by role: which parameter holds the weights, the bias, the debug arena.

The weight image is the pointer the B fragments load from, found by provenance
(rrsplice.threadaddr): any parameter, any offset -- a scalar `.param .u64 K_param_1`
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
from typing import Optional

from .isa import state_space

_WEIGHT_KEY = ("paramroles.weight",)
_BIAS_KEY = ("paramroles.bias",)


@dataclass(frozen=True)
class ParamRef:
    """A pointer stored in kernel parameter `name` at byte `offset`."""
    name: str
    offset: int
    param_size: Optional[int] = None

    @property
    def root(self) -> str:
        """The root name rrsplice.threadaddr gives a pointer loaded from here."""
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


def _size(fn, name: str) -> Optional[int]:
    for p in fn.params:
        if p.name == name:
            return p.byte_size
    return None


def _ref_of_root(fn, root: Optional[str]) -> Optional[ParamRef]:
    if not root or not root.startswith("param:") or "+" not in root:
        return None
    name, _, off = root[len("param:"):].rpartition("+")
    return ParamRef(name, int(off), _size(fn, name))


def loaded_root(fa, index: int, reg: str) -> Optional[str]:
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


def _most_loaded(fa, regs_at) -> Optional[ParamRef]:
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


def weight_param(fa) -> Optional[ParamRef]:
    """The parameter field the B fragments load from (the one most of them use), or the one
    `name_weight` recorded; None when no B fragment loads from a parameter's pointer."""
    def find():
        from .mma import find_mma
        return _most_loaded(fa, ((m.index, r) for m in find_mma(fa.fn) for r in m.b))
    return fa.derived(_WEIGHT_KEY, find)


def bias_param(fa) -> Optional[ParamRef]:
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


def name_weight(fa, ref: Optional[ParamRef]) -> None:
    """Record the weight parameter a recipe or the command line names, before any analysis
    of `fa` asks for it (analyses remember what they computed)."""
    fa._derived[_WEIGHT_KEY] = ref
