"""Control-flow graph of one function body.

Basic blocks are split at labels and after `bra`, `brx.idx`, `ret`, `exit` and `trap`
(`call` does not end a block: control returns to the next statement). Edges:

* `bra L`: to L's block; guarded (`@%p bra L`): to L's block and the fall-through;
* `brx.idx %r, TABLE`: to every label of TABLE's `.branchtargets` list (plus the
  fall-through when guarded);
* `ret`, `exit`, `trap`: none; guarded: the fall-through only;
* anything else: the fall-through (none after the last statement).

A label is local to the `{ }` block it is written in (and visible in the blocks inside it):
a branch goes to the label of its innermost enclosing block that has one, so an inline-asm
retry loop inlined twice keeps its two `LAB_WAIT` apart. A branch to a label the function
does not define has no edge for that target and is
listed in `CFG.unresolved` (with brx.idx tables that cannot be found), so callers can
refuse to trust the graph instead of silently losing paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ptx.isa import TERMINATORS
from ..ptx.model import Function, Statement, Symbol
from ..ptx.scopes import Labels


@dataclass
class BasicBlock:
    id: int
    first: int                  # statement index (1-based, inclusive)
    last: int                   # statement index (inclusive)
    succs: list = field(default_factory=list)   # block ids
    preds: list = field(default_factory=list)   # block ids

    def __contains__(self, index: int) -> bool:
        return self.first <= index <= self.last

    def __len__(self) -> int:
        return self.last - self.first + 1

    def __repr__(self) -> str:
        return f"<B{self.id} s{self.first}-s{self.last} -> {self.succs}>"


@dataclass
class CFG:
    blocks: list                     # BasicBlock, in source order (id == position)
    block_of: list                   # block_of[i] = id of the block holding statement i
                                     # (index 0 unused, so block_of[st.index] works)
    branch_targets: dict             # `.branchtargets` label -> [target labels]
    unresolved: list                 # (statement index, label) of targets not found

    @property
    def entry(self):
        return self.blocks[0] if self.blocks else None

    def block(self, index: int) -> BasicBlock:
        """The block holding statement `index`."""
        return self.blocks[self.block_of[index]]

    def exits(self) -> list:
        """Blocks that leave the function (no successors)."""
        return [b for b in self.blocks if not b.succs]

    def stmt_succs(self, index: int) -> list:
        """Statement indices control may reach right after statement `index`."""
        b = self.blocks[self.block_of[index]]
        if index < b.last:
            return [index + 1]
        return [self.blocks[s].first for s in b.succs]

    def stmt_preds(self, index: int) -> list:
        """Statement indices control may come from right before statement `index`
        (empty for the function's first statement unless a branch targets it)."""
        b = self.blocks[self.block_of[index]]
        if index > b.first:
            return [index - 1]
        return [self.blocks[p].last for p in b.preds]

    def reverse_postorder(self) -> list:
        """Block ids in reverse postorder from the entry; unreachable blocks follow in
        source order."""
        if not self.blocks:
            return []
        seen = [False] * len(self.blocks)
        order = []
        stack = [(0, iter(self.blocks[0].succs))]
        seen[0] = True
        while stack:
            bid, it = stack[-1]
            for s in it:
                if not seen[s]:
                    seen[s] = True
                    stack.append((s, iter(self.blocks[s].succs)))
                    break
            else:
                order.append(bid)
                stack.pop()
        order.reverse()
        order.extend(i for i, s in enumerate(seen) if not s)
        return order


def branch_tables(fn: Function) -> dict:
    """`.branchtargets` declarations: the label in front of each -> its target labels.

    The parser records `L: .branchtargets A, B;` in `Function.branch_targets` (label ->
    a LabelledDirective with `.targets`).
    """
    return {label: list(rec.targets) for label, rec in (fn.branch_targets or {}).items()}


def _label_operand(st: Statement):
    for op in st.operands:
        if isinstance(op, Symbol):
            return op.name
    return None


def build_cfg(fn: Function) -> CFG:
    stmts = fn.statements
    n = len(stmts)
    tables = branch_tables(fn)
    if n == 0:
        return CFG([], [0], tables, [])
    scoped = Labels(fn)      # a label is local to its { } block (see rrsplice.ptx.scopes)
    leader = [False] * (n + 2)
    leader[1] = True
    for st in stmts:
        if st.is_label:
            leader[st.index] = True
        elif st.base in TERMINATORS:
            leader[st.index + 1] = True
    blocks: list[BasicBlock] = []
    block_of = [0] * (n + 1)
    start = 1
    for i in range(2, n + 2):
        if i == n + 1 or leader[i]:
            bid = len(blocks)
            blocks.append(BasicBlock(bid, start, i - 1))
            for k in range(start, i):
                block_of[k] = bid
            start = i
    unresolved = []
    for b in blocks:
        st = stmts[b.last - 1]
        succ_stmts = []
        falls = True
        if not st.is_label and st.base in TERMINATORS:
            falls = st.guard is not None
            if st.base == "bra":
                target = _label_operand(st)
                lab = scoped.resolve(st, target) if target is not None else None
                if lab is not None:
                    succ_stmts.append(lab.index)
                else:
                    unresolved.append((st.index, target))
            elif st.base == "brx":
                table = _label_operand(st)
                if table in tables:
                    for t in tables[table]:
                        lab = scoped.resolve(st, t)
                        if lab is not None:
                            succ_stmts.append(lab.index)
                        else:
                            unresolved.append((st.index, t))
                else:
                    unresolved.append((st.index, table))
        if falls and b.last < n:
            succ_stmts.append(b.last + 1)
        for s in succ_stmts:
            sb = block_of[s]
            if sb not in b.succs:
                b.succs.append(sb)
                blocks[sb].preds.append(b.id)
    return CFG(blocks, block_of, tables, unresolved)
