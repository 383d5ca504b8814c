"""Which values and branches are the same for every lane of a warp, and whether a statement
is reached in uniform control flow: a `call.uni` (and the `mma.sync.aligned` of a native
body) is defined only where every lane of the warp arrives together (PTX ISA, `call`:
"call.uni ... is guaranteed to be non-divergent").

A register is uniform when every definition of it is, flow-insensitively: a definition is
uniform when it reads only uniform values -- the UNIFORM_SPECIALS, an `.entry`'s kernel
parameters (`ld.param` of them), constants and symbol addresses, `ld.const` at a uniform
address, other uniform registers -- is not one of the PER_LANE opcodes, is not guarded by a
per-lane predicate, and does not lie in code control-dependent on a per-lane branch (there
the value depends on which way the lane went). Everything else is per-lane: `%tid`,
`%laneid`, clocks, data loaded from any other state space, call results, shuffles.

Control dependence is the classic one (post-dominators, with a virtual exit that `ret`,
`exit`, `trap` and their guarded forms reach): a block is control-dependent on a branch when
one of the branch's successors leads to it and another can avoid it. A per-lane branch whose
lanes meet again only to leave (`if (tid >= n) return;`) is told apart (`only_exits`): the
lanes that reach the call then arrive together, but without the ones that left.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ptx.model import Address, Function, Symbol

# special registers with one value per CTA or grid (PTX ISA, "Special Registers");
# a name matches by its prefix before the first '.' (`%ctaid.x` -> `%ctaid`)
UNIFORM_SPECIALS = frozenset({
    "%ctaid", "%nctaid", "%ntid", "%gridid", "%nsmid", "%nwarpid",
    "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid",
    "%cluster_ctarank", "%cluster_nctarank", "%is_explicit_cluster",
    "%total_smem_size", "%aggr_smem_size", "%dynamic_smem_size",
})
# opcodes whose result differs per lane whatever their inputs (a lane reads another lane's
# value, memory that other lanes write, or the warp's membership at that moment)
PER_LANE = frozenset({"atom", "red", "shfl", "vote", "match", "activemask", "redux",
                      "tex", "tld4", "txq", "suld", "sust", "suq", "ldmatrix", "ldu",
                      "ld", "prefetch", "cp", "mbarrier", "call", "clock", "elect"})
# loads that give every lane the same value at a uniform address
UNIFORM_LOADS = ("const",)
TERMINATORS = frozenset({"ret", "exit", "trap"})


@dataclass(frozen=True)
class Why:
    """Why a register (or branch) is per-lane: the statement and what it reads."""
    index: int          # statement index
    what: str           # "%tid.x", "a load from .global", "%r7", "control at sN"


def _special_root(name: str) -> str:
    return name.split(".", 1)[0]


def _kernel_param(fn: Function, st, addr) -> bool:
    """`ld.param [NAME+k]` of one of an `.entry`'s own parameters."""
    if fn.kind != ".entry":
        return False
    if not isinstance(addr, Address) or not isinstance(addr.base, Symbol):
        return False
    return any(p.name == addr.base.name for p in fn.params)


def _seed(fn: Function, st) -> str | None:
    """What makes `st`'s result per-lane on its own (None: only its inputs decide)."""
    for op in st.operands:
        for r in op.registers():
            if r.special and _special_root(r.name) not in UNIFORM_SPECIALS:
                return r.name
    base = st.base
    if base == "ld":
        mods = st.modifiers
        if "param" in mods and len(st.operands) > 1 and _kernel_param(fn, st, st.operands[1]):
            return None
        if any(m in mods for m in UNIFORM_LOADS):
            return None
        space = next((m for m in mods if m in ("global", "shared", "local", "param")),
                     "generic")
        return f"a load from {space} memory"
    if base in PER_LANE:
        return f"`{base}`"
    return None


class Uniformity:
    """Per-lane registers and branches of one function (`uniformity(fa)`)."""

    def __init__(self, fa):
        self.fa = fa
        self.fn = fa.fn
        self.cfg = fa.cfg
        self.per_lane: dict = {}        # register key -> Why
        self.divergent: dict = {}       # branch block id -> Why
        self._cd, self._ipdom = _control_dependence(self.cfg, self.fn.statements)
        self._solve()

    def _solve(self) -> None:
        fn, du, cfg = self.fn, self.fa.du, self.cfg
        stmts = fn.statements
        users: dict = {}
        for st in stmts:
            for r in du[st.index - 1].uses:
                users.setdefault(r, []).append(st.index)
        dependents: dict = {}           # branch block -> blocks control-dependent on it
        for b, branches in self._cd.items():
            for x in branches:
                dependents.setdefault(x, []).append(b)
        tainted_blocks: dict = {}       # block id -> Why (control-dependent on per-lane)
        work: list = []

        def taint_stmt(i: int, why: Why) -> None:
            for d in du[i - 1].defs:
                if d not in self.per_lane:
                    self.per_lane[d] = why
                    work.append(("reg", d))
            b = cfg.block_of[i]
            blk = cfg.blocks[b]
            if i == blk.last and len(_succs(cfg, stmts, b)) > 1 and b not in self.divergent:
                st = stmts[i - 1]
                if st.base in ("bra", "brx") or st.base in TERMINATORS:
                    self.divergent[b] = why
                    work.append(("branch", b))

        for st in stmts:
            what = _seed(fn, st)
            if what is not None:
                taint_stmt(st.index, Why(st.index, what))
        while work:
            kind, item = work.pop()
            if kind == "reg":
                for i in users.get(item, ()):
                    taint_stmt(i, Why(i, item))
            else:
                x = cfg.blocks[item]
                for b in dependents.get(item, ()):
                    if b in tainted_blocks:
                        continue
                    tainted_blocks[b] = Why(x.last, f"control at s{x.last}")
                    blk = cfg.blocks[b]
                    for i in range(blk.first, blk.last + 1):
                        taint_stmt(i, tainted_blocks[b])
        self.tainted_blocks = tainted_blocks

    def branches_over(self, index: int, outside=None) -> list:
        """The branch blocks statement `index` is (transitively) control-dependent on,
        nearest first; with `outside` (a statement range), only branches outside it."""
        start = self.cfg.block_of[index]
        seen, order, todo = {start}, [], [start]
        while todo:
            b = todo.pop(0)
            for x in self._cd.get(b, ()):
                if x in seen:
                    continue
                seen.add(x)
                last = self.cfg.blocks[x].last
                if outside is not None and outside.first <= last <= outside.last:
                    continue
                order.append(x)
                todo.append(x)
        return order

    def divergence_at(self, index: int, outside=None, *, exits: bool = True
                      ) -> tuple | None:
        """(branch statement index, Why) of the nearest per-lane branch `index` is
        control-dependent on (outside the range `outside`), or None when control is
        uniform there. `exits=False` skips the branches that only end lanes early (see
        `only_exits`)."""
        for x in self.branches_over(index, outside):
            if x in self.divergent and (exits or not self.only_exits(x)):
                return self.cfg.blocks[x].last, self.divergent[x]
        return None

    def only_exits(self, b: int) -> bool:
        """Whether the lanes that branch block `b` separates meet again only to leave:
        its post-dominator is the exit, or a block of nothing but labels and
        ret/exit/trap (nvcc's shared `ret` after `if (tid >= n) return;`)."""
        y = self._ipdom.get(b, EXIT)
        if y == EXIT:
            return True
        blk = self.cfg.blocks[y]
        stmts = self.fn.statements
        return not blk.succs and all(stmts[i - 1].is_label or stmts[i - 1].base in TERMINATORS
                                     for i in range(blk.first, blk.last + 1))

    def chain(self, why: Why | None, limit: int = 6) -> list:
        """The statements from a per-lane value back to its source: [(index, what)]."""
        out: list = []
        seen = set()
        while why is not None and len(out) < limit and why.index not in seen:
            seen.add(why.index)
            out.append((why.index, why.what))
            why = self.per_lane.get(why.what)
        return out


def uniformity(fa) -> Uniformity:
    """The function's Uniformity, remembered on its analysis."""
    return fa.derived("uniformity", lambda: Uniformity(fa))


# ---------------------------------------------------------------- control dependence

EXIT = -1       # the virtual exit node


def _succs(cfg, stmts, b: int) -> list:
    """Successors with the virtual exit: a block ending in ret/exit/trap (guarded or not)
    or with no successor reaches EXIT."""
    blk = cfg.blocks[b]
    out = list(blk.succs)
    if not out or stmts[blk.last - 1].base in TERMINATORS:
        out.append(EXIT)
    return out


def _control_dependence(cfg, stmts) -> tuple:
    """(block id -> the branch blocks it is control-dependent on, immediate
    post-dominators) (Ferrante, Ottenstein and
    Warren; post-dominators by Cooper, Harvey and Kennedy's iterative algorithm on the
    reversed graph)."""
    n = len(cfg.blocks)
    succ = {b: _succs(cfg, stmts, b) for b in range(n)}
    # blocks that cannot reach EXIT (endless loops) get an edge to it, so every block has
    # a post-dominator
    preds: dict[int, list[int]] = {EXIT: []}
    for b in range(n):
        preds.setdefault(b, [])
    for b, ss in succ.items():
        for s in ss:
            preds[s].append(b)
    reach = {EXIT}
    todo = [EXIT]
    while todo:
        x = todo.pop()
        for p in preds[x]:
            if p not in reach:
                reach.add(p)
                todo.append(p)
    for b in range(n):
        if b not in reach:
            succ[b].append(EXIT)
            preds[EXIT].append(b)
    # reverse postorder of the reversed graph from EXIT
    order, seen = [], {EXIT}
    stack = [(EXIT, iter(preds[EXIT]))]
    while stack:
        x, it = stack[-1]
        for p in it:
            if p not in seen:
                seen.add(p)
                stack.append((p, iter(preds[p])))
                break
        else:
            order.append(x)
            stack.pop()
    order.reverse()
    pos = {x: i for i, x in enumerate(order)}
    ipdom = {EXIT: EXIT}

    def meet(a, b):
        while a != b:
            while pos[a] > pos[b]:
                a = ipdom[a]
            while pos[b] > pos[a]:
                b = ipdom[b]
        return a

    changed = True
    while changed:
        changed = False
        for x in order[1:]:
            cands = [s for s in succ[x] if s in ipdom]
            if not cands:
                continue
            new = cands[0]
            for s in cands[1:]:
                new = meet(new, s)
            if ipdom.get(x) != new:
                ipdom[x] = new
                changed = True
    cd: dict = {}
    for x in range(n):
        if len(succ[x]) < 2 or x not in ipdom:
            continue
        stop = ipdom[x]
        for s in set(succ[x]):
            y = s
            while y != stop and y != EXIT:
                cd.setdefault(y, []).append(x)
                y = ipdom.get(y, EXIT)
    return cd, ipdom
