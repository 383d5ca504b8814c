"""Where control leaves a cut region, and how a splice's call text says where to go on.

Compilers lay loops out so that their exits branch forward: an nvcc loop cut out whole ends
`@%p4 bra $L__BB0_2; bra.uni $L__BB0_5;` with `$L__BB0_5:` right after the cut. After the
splice the call stands where the region stood, so

* a branch to the statement that follows the region (or to one of the labels directly in
  front of that statement) is the callee's return: the code after the call runs next;
* a branch to any other label outside the region is a *dispatched* exit: the callee returns
  an exit index, and the call text, after reading its results, branches on it:

      ld.param.b32 %rrsx, [rv+8];
      setp.eq.u32 %rrsq, %rrsx, 1;   @%rrsq bra $L__BB2_7;
      setp.eq.u32 %rrsq, %rrsx, 2;   @%rrsq bra $L__BB2_6;

  Index 0 is the return (falling through past the call). `read_dispatch` reads that
  pattern back out of the call text, so `check` and `outline` agree with whatever wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ptx.model import Function, Reg, Statement, Symbol
from ..ptx.scopes import Labels
from ..ptx.select import StatementRange


def branch_labels(st: Statement) -> list:
    """The labels a `bra` names (a `brx.idx` table is not followed here)."""
    if st.is_label or st.base != "bra":
        return []
    return [op.name for op in st.operands if isinstance(op, Symbol)]


def return_labels(fn: Function, rng: StatementRange) -> set:
    """Labels that mean "the statement right after the region": the labels directly after
    its last statement, up to the first instruction."""
    out = set()
    for i in range(rng.last + 1, len(fn.statements) + 1):
        st = fn.statements[i - 1]
        if not st.is_label:
            break
        out.add(st.label)
    return out


@dataclass
class RegionExit:
    """A branch inside the region to a label outside it."""
    statement: Statement
    label: str
    target: Statement | None        # None: the function has no such label

    @property
    def sid(self) -> str:
        return self.statement.sid


def region_exits(fn: Function, rng: StatementRange) -> list:
    """Every branch in the region whose label lies outside it, in statement order."""
    out = []
    labels = Labels(fn)
    for i in range(rng.first, rng.last + 1):
        st = fn.statements[i - 1]
        for name in branch_labels(st):
            lab = labels.resolve(st, name)
            if lab is None or lab.index not in rng:
                out.append(RegionExit(st, name, lab))
    return out


@dataclass
class Dispatch:
    """The call text's branches on the callee's exit index."""
    register: str | None = None          # the register that holds the index
    targets: dict = field(default_factory=dict)   # label -> exit index (1, 2, ...)
    statements: list = field(default_factory=list)  # the setp/bra statements of it


_EQ_TYPES = ("u32", "s32", "b32")


def read_dispatch(statements: list) -> Dispatch:
    """Read `setp.eq.T %q, %x, K; @%q bra L;` (or `setp.ne` with `@!%q`) pairs from the call
    text's statements after the call. Raises ValueError when they do not agree on one index
    register or give one label two indices."""
    preds: dict = {}
    d = Dispatch()
    for st in statements:
        if st.is_label:
            continue
        if st.base == "setp" and len(st.operands) == 3 and isinstance(st.operands[0], Reg):
            mods = st.modifiers
            cmp = mods[0] if mods else ""
            x, k = st.operands[1], st.operands[2]
            if cmp in ("eq", "ne") and any(t in mods for t in _EQ_TYPES) \
                    and isinstance(x, Reg) and getattr(k, "kind_name", None) == "int":
                preds[st.operands[0].key] = (cmp, x.key, int(k.value), st)
                continue
        if st.base == "bra" and st.guard is not None and st.guard.reg.key in preds:
            cmp, reg, k, setp = preds[st.guard.reg.key]
            if (cmp == "eq") == st.guard.negated:
                raise ValueError(f"`{st.text.strip()}` branches when the exit index is NOT "
                                 f"{k}: one branch per exit index, taken when it is equal")
            if d.register is not None and reg != d.register:
                raise ValueError(f"the call text dispatches on both {d.register} and {reg}")
            (label,) = branch_labels(st) or [None]
            if label in d.targets and d.targets[label] != k:
                raise ValueError(f"the call text sends exit indices {d.targets[label]} and {k} "
                                 f"to {label}")
            if k < 1:
                raise ValueError(f"`{st.text.strip()}`: exit index {k}; 0 is the return "
                                 f"(falling through past the call), dispatched ones count "
                                 f"from 1")
            d.register = reg
            d.targets[label] = k
            d.statements += [setp, st]
    return d
