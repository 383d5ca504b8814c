"""The region: its text span in the module, and the registers it needs on entry (with
the branch checks that keep it single-entry and self-contained)."""

from __future__ import annotations

from typing import Optional

from ..model import Function, Module, Statement, Symbol
from ..scopes import Labels
from ..select import StatementRange
from ..semantics import TERMINATORS, def_use, is_pseudo
from .common import OutlineError, _iter_blocks


def region_span(module: Module, fn: Function, rng: StatementRange,
                lines: Optional[tuple] = None) -> tuple:
    """(start, end) character offsets of the region's text: whole physical lines, either the
    recipe's `lines = (first, end)` half-open interval or the statements' own lines."""
    starts = module.line_starts()
    first_st, last_st = fn.statement(rng.first), fn.statement(rng.last)
    a_line, b_line = (lines[0], lines[1] - 1) if lines else (first_st.line, last_st.end_line)
    start = starts[a_line - 1]
    end = starts[b_line] if b_line < len(starts) else len(module.text)
    for st in fn.statements:
        if st.index in rng:
            continue
        if start <= st.start < end or start < st.end <= end:
            raise OutlineError(f"{st.sid} (line {st.line}) shares a line with the region "
                               f"s{rng.first}-s{rng.last} but lies outside it")
    if not lines:
        start, end = _widen(module, fn, rng, start, end, starts)
    for blk in _iter_blocks(fn.body):
        inside = start <= blk.start and blk.end <= end
        outside = blk.end <= start or blk.start >= end
        encloses = blk.start < start and end <= blk.end
        if not (inside or outside or encloses):
            raise OutlineError(f"the region s{rng.first}-s{rng.last} (lines {a_line}-{b_line}) "
                               f"cuts the {{ }} block of lines {blk.line}-{blk.end_line}")
        if encloses:
            raise OutlineError(f"the region s{rng.first}-s{rng.last} lies inside the {{ }} "
                               f"block of lines {blk.line}-{blk.end_line}; cut the whole block")
    return start, end


def _widen(module: Module, fn: Function, rng: StatementRange, start: int, end: int,
           starts: list) -> tuple:
    """A statement range given without lines takes in the braces of blocks it opens or
    closes when nothing else lies between (`{` before its first statement, `}` after its
    last)."""
    def line_end(off):
        nl = module.text.find("\n", off)
        return len(module.text) if nl < 0 else nl + 1

    def line_start(off):
        return module.text.rfind("\n", 0, off) + 1

    others = [st for st in fn.statements if st.index not in rng]
    changed = True
    while changed:
        changed = False
        for blk in _iter_blocks(fn.body):
            if start <= blk.start < end < blk.end:
                if not any(end <= st.start < blk.end for st in others):
                    end = line_end(blk.end - 1)
                    changed = True
            if blk.start < start < blk.end <= end:
                if not any(blk.start <= st.start < start for st in others):
                    start = line_start(blk.start)
                    changed = True
    return start, end


def _branch_targets(st: Statement) -> list:
    if st.base not in ("bra", "brx"):
        return []
    out = []
    for op in st.operands:
        if isinstance(op, Symbol):
            out.append(op.name)
    return out


def region_needs(fn: Function, rng: StatementRange, live_at_exit: set,
                 exit_labels: frozenset = frozenset()) -> dict:
    """Registers the region reads before writing them on some path from its first statement
    (with `live_at_exit` read after its last, and at every branch to one of `exit_labels`:
    the labels outside the region where the body returns, see rrsplice.exits): name ->
    index of a first such read."""
    idx = list(range(rng.first, rng.last + 1))
    sts = {i: fn.statement(i) for i in idx}
    scoped = Labels(fn)
    succ = {}
    for i in idx:
        st = sts[i]
        nxt = [i + 1] if i < rng.last else ["exit"]
        if st.is_label:
            succ[i] = nxt
            continue
        if st.base in TERMINATORS:
            targets = []
            leaves = False
            for name in _branch_targets(st):
                lab = scoped.resolve(st, name)
                if lab is None:
                    raise OutlineError(f"{st.sid} (line {st.line}) branches to {name}, which "
                                       f"is not a label of {fn.name}")
                if lab.index not in rng:
                    if name in exit_labels:
                        leaves = True
                        continue
                    raise OutlineError(f"{st.sid} (line {st.line}) branches to {name} (line "
                                       f"{lab.line}), outside the region, which is neither "
                                       f"the statement right after it nor a label the call "
                                       f"text dispatches to after the call (see `rrsplice "
                                       f"recipe new`: it writes the dispatch)")
                targets.append(lab.index)
            if st.base == "brx" and not targets:
                raise OutlineError(f"{st.sid} (line {st.line}): indirect branch in the region")
            succ[i] = targets + (["exit"] if leaves else []) + \
                (nxt if st.guard is not None else [])
        else:
            succ[i] = nxt
    labels = {sts[i].label for i in idx if sts[i].is_label}
    if labels:
        for st in fn.statements:
            if st.index in rng or st.is_label:
                continue
            for name in _branch_targets(st):
                lab = scoped.resolve(st, name) if name in labels else None
                if lab is not None and lab.index in rng and lab.index != rng.first:
                    raise OutlineError(f"{st.sid} (line {st.line}), outside the region, branches "
                                       f"to {name} (line {lab.line}) inside it: "
                                       f"the region has a second entry")
    # basic blocks of the region, gen/kill as bitsets over the region's registers
    du = {i: def_use(sts[i]) for i in idx}
    number: dict = {}
    names: list = []

    def bit(reg: str) -> int:
        n = number.get(reg)
        if n is None:
            n = number[reg] = len(names)
            names.append(reg)
        return 1 << n

    leaders = {rng.first}
    for i in idx:
        if sts[i].is_label:
            leaders.add(i)
        elif sts[i].base in TERMINATORS and i < rng.last:
            leaders.add(i + 1)
    starts = sorted(leaders)
    block_of = {}
    blocks = []
    for k, a in enumerate(starts):
        b = (starts[k + 1] - 1) if k + 1 < len(starts) else rng.last
        blocks.append((a, b))
        for i in range(a, b + 1):
            block_of[i] = k
    gen = []
    kill = []
    for a, b in blocks:
        g = 0
        kl = 0
        for i in range(b, a - 1, -1):
            k_i = 0
            for d in du[i].kills:
                k_i |= bit(d)
            u_i = 0
            for u in du[i].uses:
                if not is_pseudo(u):
                    u_i |= bit(u)
            g = (g & ~k_i) | u_i
            kl |= k_i
        gen.append(g)
        kill.append(kl)
    exit_mask = 0
    for r in live_at_exit:
        exit_mask |= bit(r)
    bsucc = [[block_of[s] if s != "exit" else "exit" for s in succ[b]] for _a, b in blocks]
    bpreds: list = [[] for _ in blocks]
    for k, ss in enumerate(bsucc):
        for s in ss:
            if s != "exit":
                bpreds[s].append(k)
    live = [0] * len(blocks)
    work = list(range(len(blocks)))
    in_work = set(work)
    while work:
        k = work.pop()
        in_work.discard(k)
        out = 0
        for s in bsucc[k]:
            out |= exit_mask if s == "exit" else live[s]
        new = gen[k] | (out & ~kill[k])
        if new != live[k]:
            live[k] = new
            for p in bpreds[k]:
                if p not in in_work:
                    work.append(p)
                    in_work.add(p)
    entry = live[0]
    needs = {names[n] for n in range(len(names)) if entry >> n & 1}
    gen = {i: [u for u in du[i].uses if not is_pseudo(u)] for i in idx}
    first_read = {}
    for i in idx:
        for u in gen[i]:
            if u in needs and u not in first_read:
                first_read[u] = i
    for u in needs:
        first_read.setdefault(u, None)
    return first_read
