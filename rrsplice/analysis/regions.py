"""One cut region's control and data flow, the facts both `check` and `outline` decide on.

A region R = sA..sB of a function is what a splice replaces by a call. `Region` reads, from
the function's CFG and liveness (rrsplice.analysis.dataflow), everything about R that a splice must
respect, once:

* `entries`: the CFG edges from outside R into it, each classified: `fall` (control runs
  into sA from the statement before), `head` (a branch to sA's own label, which the cut
  removes unless the splice text keeps it), `side` (to any other statement of R: a second
  entry, which no call can have);
* `exits`: the edges from R to outside it: `fall` (to the statement right after R, by
  falling through or by branching), `return` (a branch to one of the labels directly in
  front of that statement, rrsplice.analysis.exits.return_labels), `dispatch` (to a label the splice
  text branches to on the callee's exit index), `stray` (anywhere else);
* `unresolved` and `indirect`: branches of R whose targets the CFG does not know, and
  `brx.idx` in R (an outlined body cannot take a branch table along);
* `live_in`, `live_out`: the registers a replacement must receive and give back;
* `needs_at_exit(live_at_exit)`: what the region reads before writing on some path from
  sA, when `live_at_exit` must hold at every way out (the outlined body's entry needs).

`check` reports the classified edges as findings; `outline` refuses the same edges and
takes its entry registers from `needs_at_exit`: one analysis, so a cut `check` passes is
one `outline` accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..ptx.model import Symbol
from ..ptx.select import StatementRange
from .exits import branch_labels, return_labels
from .semantics import is_pseudo

if TYPE_CHECKING:
    from .dataflow import FunctionAnalysis

ENTRY_KINDS = ("fall", "head", "side")
EXIT_KINDS = ("fall", "return", "dispatch", "stray")


@dataclass(frozen=True)
class Edge:
    """A CFG edge across the region's boundary, between statement indices."""
    source: int
    target: int
    kind: str


@dataclass
class Region:
    """The control and data flow of statements `rng` of the analysed function `fa.fn`."""
    fa: FunctionAnalysis
    rng: StatementRange
    dispatched: frozenset = frozenset()  # labels the splice text dispatches to
    edges: list = field(default_factory=list)     # every boundary Edge, in CFG order
    entries: list = field(default_factory=list)
    exits: list = field(default_factory=list)
    unresolved: list = field(default_factory=list)   # (statement index, label)
    indirect: list = field(default_factory=list)     # statement indices of brx in R
    back: frozenset = frozenset()        # labels meaning "the statement after R"

    def __post_init__(self):
        fn, rng = self.fa.fn, self.rng
        cfg = self.fa.cfg
        stmts = fn.statements
        self.back = frozenset(return_labels(fn, rng))
        self.dispatched = frozenset(self.dispatched)
        for b in cfg.blocks:
            src = b.last
            for s in b.succs:
                dst = cfg.blocks[s].first
                inside_src, inside_dst = src in rng, dst in rng
                if inside_src == inside_dst:
                    continue
                if inside_dst:
                    lab = stmts[dst - 1]
                    if dst != rng.first:
                        kind = "side"
                    elif lab.is_label and lab.label in self._labels_of(src):
                        kind = "head"
                    else:
                        kind = "fall"
                    self.entries.append(Edge(src, dst, kind))
                else:
                    self.exits.append(Edge(src, dst, self._exit_kind(dst)))
                self.edges.append((self.entries if inside_dst else self.exits)[-1])
        # a range that begins or ends inside a basic block: control runs across without
        # an edge of the CFG
        a, z = rng.first, rng.last
        if a > 1 and cfg.block_of[a - 1] == cfg.block_of[a]:
            self.entries.insert(0, Edge(a - 1, a, "fall"))
            self.edges.insert(0, self.entries[0])
        if z < len(stmts) and cfg.block_of[z] == cfg.block_of[z + 1]:
            self.exits.append(Edge(z, z + 1, "fall"))
            self.edges.append(self.exits[-1])
        self.unresolved = [(i, lab) for i, lab in cfg.unresolved if i in rng]
        self.indirect = [i for i in range(rng.first, rng.last + 1)
                         if not stmts[i - 1].is_label and stmts[i - 1].base == "brx"]

    def _exit_kind(self, dst: int) -> str:
        if dst == self.rng.last + 1:
            return "fall"
        to = self.fa.fn.statements[dst - 1]
        if to.is_label and to.label in self.back:
            return "return"
        if to.is_label and to.label in self.dispatched:
            return "dispatch"
        return "stray"

    # ------------------------------------------------------------ edges by kind

    def entries_of(self, kind: str) -> list:
        return [e for e in self.entries if e.kind == kind]

    def exits_of(self, *kinds: str) -> list:
        return [e for e in self.exits if e.kind in kinds]

    def _labels_of(self, index: int) -> list:
        """The labels statement `index` branches to: a `bra`'s, or every target of a
        `brx.idx` table."""
        st = self.fa.fn.statements[index - 1]
        if not st.is_label and st.base == "brx":
            tables = self.fa.cfg.branch_targets
            return [t for op in st.operands if isinstance(op, Symbol)
                    for t in tables.get(op.name, ())]
        return branch_labels(st)

    def branches(self, e: Edge) -> str | None:
        """The label edge `e` branches to (None when control falls along it)."""
        to = self.fa.fn.statements[e.target - 1]
        if to.is_label and to.label in self._labels_of(e.source):
            return to.label
        return None

    # ------------------------------------------------------------ registers

    @property
    def live_in(self) -> list:
        """Registers read in R before any write there, on some path entering it."""
        return self.fa.range_live_in(self.rng)

    @property
    def live_out(self) -> list:
        """Registers written in R and read after it before being redefined."""
        return self.fa.range_live_out(self.rng)

    def needs_at_exit(self, live_at_exit: Iterable[str],
                      exit_labels: Iterable[str] | None = None) -> dict:
        """Registers R reads before writing them on some path from its first statement,
        with `live_at_exit` read at every way out that returns to the code after the call:
        the fall-through, and branches to `exit_labels` (default: the return and dispatch
        labels). A `stray` exit, or a branch to a label not in `exit_labels`, leads
        nowhere here: callers refuse those first. Name -> index of a first read in R (in
        statement order; None when only `live_at_exit` asks for it)."""
        fa, rng = self.fa, self.rng
        labels = (self.back | self.dispatched) if exit_labels is None else set(exit_labels)
        stmts = fa.fn.statements
        exit_mask = fa.mask(set(live_at_exit))
        extra = [r for r in live_at_exit if r not in fa.bit]   # never mentioned by fn

        def returns(t: int) -> bool:
            if t == rng.last + 1:
                return True
            to = stmts[t - 1]
            return to.is_label and to.label in labels

        subs, _entries = fa._range_graph(rng)
        live = fa._range_backward(subs, fa._sub_gen_kill(subs),
                                  lambda t: exit_mask if returns(t) else 0)
        needs = {n for n in fa.names_of(live[0]) if not is_pseudo(n)}
        if extra and _reaches(subs, returns):
            needs.update(r for r in extra if not is_pseudo(r))
        first_read: dict = {}
        for i in range(rng.first, rng.last + 1):
            for u in fa.du[i - 1].uses:
                if u in needs and u not in first_read:
                    first_read[u] = i
        for u in sorted(needs - set(first_read)):
            first_read[u] = None
        return first_read


def _reaches(subs, returns) -> bool:
    """True if some path from the region's first sub-block reaches an exit `returns`
    accepts (a register R never writes is then needed there unchanged)."""
    seen = {0}
    work = [0]
    while work:
        k = work.pop()
        _lo, _hi, succ, exits = subs[k]
        if any(returns(t) for t in exits):
            return True
        for s in succ:
            if s not in seen:
                seen.add(s)
                work.append(s)
    return False


def region_of(fa, rng: StatementRange, dispatched: Iterable[str] = ()) -> Region:
    """The Region of `rng` in the analysed function `fa` (remembered on `fa` per range and
    dispatch labels: check's control and dataflow steps ask for the same one)."""
    key = ("region", rng.first, rng.last, frozenset(dispatched))
    return fa.derived(key, lambda: Region(fa, rng, frozenset(dispatched)))
