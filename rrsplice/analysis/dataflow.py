"""Register liveness, reaching definitions and range queries for one function.

Liveness is the classic backward may-analysis: a register is live at a point if some path
from there reads it before an unguarded write (a *kill*). It is solved per basic block with
integer bitsets (one bit per register) to a fixed point, visiting blocks in postorder (the
reverse of the reverse postorder suits a backward problem). Per-statement sets are derived
on demand from the block's live-out by a backward scan; checkpoints every `_STRIDE`
statements keep each such query short in the long straight-line blocks of real kernels.

Range queries work on a contiguous statement range R = sA..sB, which may hold labels
targeted from outside it (side entries), loops and early exits:

* `range_live_in(R)`: registers read in R, on some path that enters R, before any kill in
  R. Solved as liveness on the sub-graph of R whose exits lead nowhere.
* `range_live_out(R)`: registers that some definition in R (guarded ones included) may
  carry to an exit edge of R, and that are live at that edge's target. Solved with a
  forward "may be defined in R" pass over the same sub-graph.
* `range_live_through(R)`: everything whose value from before R is still needed at some
  point of R or after it on a path through R (live-in plus values passing through,
  untouched or only conditionally overwritten). `range_pass_in_for_out` is the part of
  live-out among them: a native body replacing R must receive those values as well,
  because some path through R leaves them unwritten.

Pseudo-registers (`param:NAME`, `cc:CF`, see rrsplice.analysis.semantics) take part in the analysis
but are left out of range lists unless `pseudo=True`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable

from ..ptx.model import Function
from .cfg import CFG, build_cfg
from .semantics import DefUse, def_use, is_pseudo, register_sort_key

_STRIDE = 32
_MISSING = object()


class FunctionAnalysis:
    """Def/use, CFG and liveness of one function. Build with `analyze(fn)`."""

    def __init__(self, fn: Function, *, du: list | None = None, cfg: CFG | None = None):
        self.fn = fn
        self.cfg = cfg if cfg is not None else build_cfg(fn)
        self.du: list[DefUse] = du if du is not None else [def_use(st) for st in fn.statements]
        self._number_registers()
        self._solve()
        self._checkpoints: dict = {}
        self._def_sites: dict | None = None
        self._touch_sites: dict | None = None
        self._use_sets = None
        self._derived: dict = {}

    def derived(self, key, compute):
        """`compute()`, remembered on this analysis under `key`: facts that depend only on
        the function (and so on this analysis), asked for by several checks of one run.
        The value is shared: it must not be modified."""
        hit = self._derived.get(key, _MISSING)
        if hit is _MISSING:
            hit = self._derived[key] = compute()
        return hit

    # ------------------------------------------------------------ setup

    def _number_registers(self) -> None:
        bit: dict = {}
        for du in self.du:
            for r in du.uses:
                if r not in bit:
                    bit[r] = len(bit)
            for r in du.defs:
                if r not in bit:
                    bit[r] = len(bit)
        self.bit = bit
        self.names = list(bit)

    def mask(self, names: Iterable[str]) -> int:
        """The bitset of `names` (names the function never mentions are ignored)."""
        bit = self.bit
        if not isinstance(names, (set, frozenset, list, tuple)):
            names = list(names)
        if len(names) < 48:
            m = 0
            for n in names:
                b = bit.get(n)
                if b is not None:
                    m |= 1 << b
            return m
        buf = bytearray((len(bit) >> 3) + 1)
        for n in names:
            b = bit.get(n)
            if b is not None:
                buf[b >> 3] |= 1 << (b & 7)
        return int.from_bytes(buf, "little")

    def names_of(self, mask: int) -> list[str]:
        """Register names of the set bits of `mask` (bit order)."""
        out = []
        names = self.names
        s = bin(mask)[:1:-1]       # little-endian digits
        i = s.find("1")
        while i >= 0:
            out.append(names[i])
            i = s.find("1", i + 1)
        return out

    def _block_gen_kill(self, first: int, last: int) -> tuple[int, int]:
        """(upward-exposed uses, kills) of statements first..last as bitsets."""
        du = self.du
        gen: set = set()
        kill: set = set()
        for i in range(last, first - 1, -1):
            d = du[i - 1]
            if d.kills:
                gen.difference_update(d.kills)
                kill.update(d.kills)
            if d.uses:
                gen.update(d.uses)
        return self.mask(gen), self.mask(kill)

    def _solve(self) -> None:
        blocks = self.cfg.blocks
        nb = len(blocks)
        gen = [0] * nb
        kill = [0] * nb
        for b in blocks:
            gen[b.id], kill[b.id] = self._block_gen_kill(b.first, b.last)
        live_in = [0] * nb
        live_out = [0] * nb
        order = list(reversed(self.cfg.reverse_postorder()))   # postorder
        self.iterations = 0
        changed = True
        while changed:
            changed = False
            self.iterations += 1
            for bid in order:
                out = 0
                for s in blocks[bid].succs:
                    out |= live_in[s]
                live_out[bid] = out
                new_in = gen[bid] | (out & ~kill[bid])
                if new_in != live_in[bid]:
                    live_in[bid] = new_in
                    changed = True
        self._gen, self._kill = gen, kill
        self._in, self._out = live_in, live_out

    # ------------------------------------------------------------ block and statement sets

    def block_live_in(self, bid: int) -> frozenset:
        return frozenset(self.names_of(self._in[bid]))

    def block_live_out(self, bid: int) -> frozenset:
        return frozenset(self.names_of(self._out[bid]))

    def _live_after(self, index: int) -> set:
        """Live set right after statement `index`: from the nearest checkpoint at or
        below the block's end. Checkpoints (every _STRIDE-th statement counted from the
        block's end) are extended lazily, only as far down as queries need."""
        b = self.cfg.block(index)
        state = self._checkpoints.get(b.id)
        if state is None:
            # [checkpoint sets, live set at `next`, next statement to scan]
            state = self._checkpoints[b.id] = [[], set(self.names_of(self._out[b.id])), b.last]
        cps, live, nxt = state
        du = self.du
        k = (b.last - index) // _STRIDE
        while len(cps) <= k:
            # `live` is the live-out of statement `nxt`; record it, scan _STRIDE statements
            cps.append(frozenset(live))
            stop = max(nxt - _STRIDE, b.first - 1)
            for i in range(nxt, stop, -1):
                d = du[i - 1]
                if d.kills:
                    live.difference_update(d.kills)
                if d.uses:
                    live.update(d.uses)
            nxt = stop
        state[2] = nxt
        live = set(cps[k])
        for i in range(b.last - k * _STRIDE, index, -1):
            d = du[i - 1]
            if d.kills:
                live.difference_update(d.kills)
            if d.uses:
                live.update(d.uses)
        return live

    def live_out_at(self, index: int) -> frozenset:
        """Registers live right after statement `index` (pseudo-registers included)."""
        self._check_index(index)
        return frozenset(self._live_after(index))

    def live_in_at(self, index: int) -> frozenset:
        """Registers live right before statement `index` (pseudo-registers included)."""
        self._check_index(index)
        live = self._live_after(index)
        d = self.du[index - 1]
        live.difference_update(d.kills)
        live.update(d.uses)
        return frozenset(live)

    def _check_index(self, index: int) -> None:
        if not 1 <= index <= len(self.du):
            raise IndexError(f"{self.fn.name} has statements s1..s{len(self.du)}, not s{index}")

    # ------------------------------------------------------------ per-register sites

    def _sites(self):
        if self._def_sites is None:
            defs: dict = {}
            touch: dict = {}
            for i, d in enumerate(self.du, 1):
                for r in d.defs:
                    defs.setdefault(r, []).append(i)
                seen = d.defs + d.uses
                for r in seen:
                    lst = touch.setdefault(r, [])
                    if not lst or lst[-1] != i:
                        lst.append(i)
            self._def_sites, self._touch_sites = defs, touch
        return self._def_sites, self._touch_sites

    def reaching_defs(self, index: int, reg: str) -> list[int]:
        """Statements whose definition of `reg` reaches the entry of statement `index`
        (sorted). [] if none: the value comes from the function's entry (undefined)."""
        return self._reach(index, reg)[0]

    def reaches_from_entry(self, index: int, reg: str) -> bool:
        """True if some path from the function entry reaches `index` without writing
        `reg` (so its value may be undefined there)."""
        return self._reach(index, reg)[1]

    def _reach(self, index: int, reg: str) -> tuple[list[int], bool]:
        self._check_index(index)
        defs_by, _ = self._sites()
        sites = defs_by.get(reg, ())
        du = self.du
        blocks = self.cfg.blocks
        found: set = set()
        from_entry = False
        b = self.cfg.block(index)
        work = [(b.id, index - 1)]
        full_seen: set = set()
        while work:
            bid, hi = work.pop()
            blk = blocks[bid]
            k = bisect_right(sites, hi) - 1
            killed = False
            while k >= 0 and sites[k] >= blk.first:
                s = sites[k]
                found.add(s)
                if reg in du[s - 1].kills:
                    killed = True
                    break
                k -= 1
            if killed:
                continue
            if bid == 0:
                from_entry = True
            for p in blk.preds:
                if p not in full_seen:
                    full_seen.add(p)
                    work.append((p, blocks[p].last))
        return sorted(found), from_entry

    # ------------------------------------------------------------ ranges

    def _range_graph(self, rng):
        """Sub-blocks of R: list of [lo, hi, internal succ ids, exit target stmts], and the
        ids of the entry sub-blocks."""
        a, z = rng.first, rng.last
        self._check_index(a)
        self._check_index(z)
        if a > z:
            raise ValueError(f"empty range s{a}-s{z}")
        cfg = self.cfg
        blocks = cfg.blocks
        first_b, last_b = cfg.block_of[a], cfg.block_of[z]
        subs: list = []
        sub_of_block = {}
        for bid in range(first_b, last_b + 1):
            b = blocks[bid]
            sub_of_block[bid] = len(subs)
            subs.append([max(b.first, a), min(b.last, z), [], []])
        entries = []
        for k, bid in enumerate(range(first_b, last_b + 1)):
            b = blocks[bid]
            lo, hi, succ, exits = subs[k]
            if hi < b.last:
                exits.append(hi + 1)
            else:
                for s in b.succs:
                    t = blocks[s].first
                    if a <= t <= z:
                        succ.append(sub_of_block[s])
                    else:
                        exits.append(t)
            if lo > b.first or lo == 1 or any(not a <= blocks[p].last <= z for p in b.preds):
                entries.append(k)
        return subs, entries

    def _sub_gen_kill(self, subs) -> list:
        return [self._block_gen_kill(lo, hi) for lo, hi, _, _ in subs]

    def _range_backward(self, subs, gk, boundary) -> list:
        """Liveness on R's sub-graph; `boundary(t)` is the mask live at exit target t.
        Returns live-in masks per sub-block."""
        n = len(subs)
        live_in = [0] * n
        bound = [0] * n
        for k, (_, _, _, exits) in enumerate(subs):
            m = 0
            for t in exits:
                m |= boundary(t)
            bound[k] = m
        preds: list[list[int]] = [[] for _ in range(n)]
        for k, (_, _, succ, _) in enumerate(subs):
            for s in succ:
                preds[s].append(k)
        work = list(range(n))          # pop() visits the last sub-block first
        pending = set(work)
        while work:
            k = work.pop()
            pending.discard(k)
            out = bound[k]
            for s in subs[k][2]:
                out |= live_in[s]
            gen, kill = gk[k]
            new = gen | (out & ~kill)
            if new != live_in[k]:
                live_in[k] = new
                for p in preds[k]:
                    if p not in pending:
                        pending.add(p)
                        work.append(p)
        return live_in

    def _finish(self, mask: int, pseudo: bool) -> list[str]:
        names = self.names_of(mask)
        if not pseudo:
            names = [n for n in names if not is_pseudo(n)]
        return sorted(names, key=register_sort_key)

    def range_entries(self, rng) -> list[int]:
        """Statements of R where control enters it from outside (or the function entry)."""
        subs, entries = self._range_graph(rng)
        return [subs[k][0] for k in entries]

    def range_exits(self, rng) -> list[tuple[int, int]]:
        """Edges (from statement in R, to statement outside R) that leave R."""
        subs, _ = self._range_graph(rng)
        return [(hi, t) for _, hi, _, exits in subs for t in exits]

    def range_live_in(self, rng, *, pseudo: bool = False) -> list[str]:
        """Registers read in R before any write in R, on some path entering R."""
        subs, entries = self._range_graph(rng)
        live = self._range_backward(subs, self._sub_gen_kill(subs), lambda t: 0)
        m = 0
        for k in entries:
            m |= live[k]
        return self._finish(m, pseudo)

    def range_live_through(self, rng, *, pseudo: bool = False) -> list[str]:
        """Registers whose value from before R is needed in R or after it, on some path
        entering R (live-in plus values passing through R)."""
        subs, entries = self._range_graph(rng)
        cache: dict = {}

        def boundary(t):
            m = cache.get(t)
            if m is None:
                m = cache[t] = self.mask(self.live_in_at(t))
            return m

        live = self._range_backward(subs, self._sub_gen_kill(subs), boundary)
        m = 0
        for k in entries:
            m |= live[k]
        return self._finish(m, pseudo)

    def _range_defs_at_exits(self, subs, entries) -> list[int]:
        """Forward may-define masks at the end of each sub-block."""
        n = len(subs)
        defs = []
        du = self.du
        for lo, hi, _, _ in subs:
            regs: set = set()
            for i in range(lo, hi + 1):
                d = du[i - 1].defs
                if d:
                    regs.update(d)
            defs.append(self.mask(regs))
        out = list(defs)
        preds: list[list[int]] = [[] for _ in range(n)]
        for k, (_, _, succ, _) in enumerate(subs):
            for s in succ:
                preds[s].append(k)
        work = list(range(n - 1, -1, -1))
        pending = set(work)
        while work:
            k = work.pop()
            pending.discard(k)
            m = defs[k]
            for p in preds[k]:
                m |= out[p]
            if m != out[k]:
                out[k] = m
                for s in subs[k][2]:
                    if s not in pending:
                        pending.add(s)
                        work.append(s)
        return out

    def range_live_out(self, rng, *, pseudo: bool = False) -> list[str]:
        """Registers written in R (on some path) and read after R before being redefined."""
        subs, entries = self._range_graph(rng)
        dout = self._range_defs_at_exits(subs, entries)
        m = 0
        cache: dict = {}
        for k, (_, _, _, exits) in enumerate(subs):
            for t in exits:
                lm = cache.get(t)
                if lm is None:
                    lm = cache[t] = self.mask(self.live_in_at(t))
                m |= dout[k] & lm
        return self._finish(m, pseudo)

    def range_pass_in_for_out(self, rng, *, pseudo: bool = False) -> list[str]:
        """Live-out registers that some path through R leaves unwritten: their incoming
        value can reach the code after R, so a replacement body must receive them too."""
        out = set(self.range_live_out(rng, pseudo=pseudo))
        return [r for r in self.range_unwritten_through(rng, pseudo=pseudo) if r in out]

    def range_unwritten_through(self, rng, *, pseudo: bool = False) -> list[str]:
        """Registers whose value from before R reaches a use after R along some path
        through R that does not write them: liveness on R's sub-graph with R's own reads
        left out (only its kills count), so a register R reads and then writes on every
        path is not one of them (range_live_through, which counts R's reads, would say it
        is)."""
        subs, entries = self._range_graph(rng)
        cache: dict = {}

        def boundary(t):
            m = cache.get(t)
            if m is None:
                m = cache[t] = self.mask(self.live_in_at(t))
            return m

        gk = [(0, kill) for _gen, kill in self._sub_gen_kill(subs)]
        live = self._range_backward(subs, gk, boundary)
        m = 0
        for k in entries:
            m |= live[k]
        return self._finish(m, pseudo)

    def range_defs(self, rng, *, pseudo: bool = False) -> list[str]:
        s: set = set()
        for i in range(rng.first, rng.last + 1):
            s.update(self.du[i - 1].defs)
        return self._finish(self.mask(s), pseudo)

    def first_uses_after(self, rng, reg: str) -> list[int]:
        """Statements reached from R's exits that read `reg` before it is redefined: the
        first such read on each path (a re-entry into R counts, e.g. a loop around R)."""
        _, touch_by = self._sites()
        sites = touch_by.get(reg, ())
        du = self.du
        blocks = self.cfg.blocks
        block_of = self.cfg.block_of
        found: set = set()
        work = []
        for _, t in self.range_exits(rng):
            work.append((block_of[t], t))
        seen_full: set = set()
        while work:
            bid, lo = work.pop()
            b = blocks[bid]
            k = bisect_left(sites, lo)
            if k < len(sites) and sites[k] <= b.last:
                s = sites[k]
                d = du[s - 1]
                if reg in d.uses:
                    found.add(s)
                continue       # read or killed here: this path ends
            for sb in b.succs:
                if sb not in seen_full:
                    seen_full.add(sb)
                    work.append((sb, blocks[sb].first))
        return sorted(found)

    # ------------------------------------------------------------ pickling (rrsplice.infra.cache)

    def __getstate__(self):
        return {"cfg": self.cfg, "du": self.du, "bit": self.bit, "names": self.names,
                "_gen": self._gen, "_kill": self._kill, "_in": self._in, "_out": self._out,
                "iterations": self.iterations}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.fn = None  # type: ignore[assignment]  # a loaded analysis gets its Function from the loader
        self._checkpoints = {}
        self._def_sites = None
        self._touch_sites = None
        self._use_sets = None
        self._derived = {}


# ---------------------------------------------------------------- memo

_MEMO: dict = {}
_MEMO_SIZE = 4          # each entry holds a function and so its whole module


def memoised(fn: Function) -> FunctionAnalysis | None:
    """`fn`'s analysis if this process already holds it (and marks it recently used)."""
    hit = _MEMO.get(id(fn))
    if hit is not None and hit[0] is fn:
        _MEMO[id(fn)] = _MEMO.pop(id(fn))
        return hit[1]
    return None


def analyze(fn: Function) -> FunctionAnalysis:
    """The analysis of `fn`, memoised per Function object (a small LRU)."""
    fa = memoised(fn)
    if fa is not None:
        return fa
    fa = FunctionAnalysis(fn)
    remember(fn, fa)
    return fa


def remember(fn: Function, fa: FunctionAnalysis) -> None:
    """Register an analysis (e.g. one loaded from the cache) as `fn`'s."""
    fa.fn = fn
    _MEMO[id(fn)] = (fn, fa)
    while len(_MEMO) > _MEMO_SIZE:
        _MEMO.pop(next(iter(_MEMO)))
