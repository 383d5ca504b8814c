"""mma analysis: every tensor-core `mma`, the D->C chains between them, and phases.

A *chain* is a run of mma that accumulate into each other: one mma's D registers are the
next one's C registers and that D value is the one reaching that C. A *phase* is one GEMM:
the chains computed between two epilogues. docs/phases.md explains how phases are
delimited; in short, walking the mma in program order, a new phase starts at an mma when,
since the previous mma,

  * a statement other than an mma READ a register still holding a D result of the current
    phase (an epilogue consumed the accumulators) -- unless the mma is more of the same
    GEMM (its opcode, a fragment or bias seed in common with the phase, its other
    fragments from the same sources) that neither depends on that epilogue (through
    registers, memory it wrote, or its guard) nor continues a chain it read: nvcc
    converts a finished tile early, between the mma of the others -- or
  * control flow intervened (a label, or a branch/return/exit/trap), or
  * the mma itself reads a D result of the current phase as an A or B fragment.

Geometry comes from the fragment structure, never from fragment counts: K = k x chain
length, M = m x (distinct A-fragment sequences among the chains), N = n x (distinct
B-fragment sequences). Fragments are told apart by value (rrsplice.analysis.fragvalue: the same
address loaded again into a new register is the same fragment), not by register. A 48x96x128
m16n8k32 phase has 12 A fragments = 3 m-tiles x 4 k-slices, not 12 m-tiles.

With a FunctionAnalysis (rrsplice.analysis.dataflow.analyze) chains are confirmed with reaching
definitions and every B fragment / bias seed gets its weight-image offset resolved at
its own mma (registers are reused across phases). Without one, register names are
tracked through the straight-line code between labels, which is exact there, and no
offsets are given.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ..ptx.isa import TERMINATORS, memory_effect, state_space
from ..ptx.model import Address, Function, Reg, Statement, Vector
from .semantics import def_use

# ---------------------------------------------------------------- mma

_SHAPE = re.compile(r"^m(\d+)n(\d+)k(\d+)$")
_TYPES = frozenset({"f16", "f32", "f64", "bf16", "tf32", "e4m3", "e5m2", "e3m2", "e2m3", "e2m1",
                    "s8", "u8", "s4", "u4", "b1", "s32", "f16x2", "bf16x2", "ue8m0", "ue4m3"})
_LAYOUTS = frozenset({"row", "col"})


def _regs_of(op) -> tuple[str, ...]:
    if op is None:
        return ()
    return tuple(r.key for r in op.registers())


@dataclass(frozen=True)
class Mma:
    """One `mma` statement: shape, layouts, element types and the four fragment lists."""
    index: int                    # statement number (sN)
    line: int
    end_line: int
    opcode: str
    shape: str                    # "m16n8k32"
    m: int
    n: int
    k: int
    layouts: tuple                # ("row", "col") = A layout, B layout
    d_type: str | None
    a_type: str | None
    b_type: str | None
    c_type: str | None
    d: tuple                      # register names of each fragment list
    a: tuple
    b: tuple
    c: tuple
    guarded: bool = False

    @property
    def sid(self) -> str:
        return f"s{self.index}"

    def to_json(self) -> dict:
        return {"sid": self.sid, "index": self.index, "lines": [self.line, self.end_line],
                "opcode": self.opcode, "shape": self.shape, "m": self.m, "n": self.n,
                "k": self.k, "layouts": list(self.layouts),
                "types": {"d": self.d_type, "a": self.a_type, "b": self.b_type,
                          "c": self.c_type},
                "d": list(self.d), "a": list(self.a), "b": list(self.b), "c": list(self.c),
                "guarded": self.guarded}


def is_mma(st: Statement) -> bool:
    return (not st.is_label) and st.base == "mma"


def mma_of(st: Statement) -> Mma | None:
    """The Mma view of an `mma` statement (None for anything else)."""
    if not is_mma(st):
        return None
    mods = st.modifiers
    shape, m, n, k = "", 0, 0, 0
    layouts = []
    types = []
    for mod in mods:
        mm = _SHAPE.match(mod)
        if mm and not shape:
            shape = mod
            m, n, k = (int(x) for x in mm.groups())
        elif mod in _LAYOUTS:
            layouts.append(mod)
        elif mod in _TYPES:
            types.append(mod)
    d_t: str | None
    a_t: str | None
    b_t: str | None
    c_t: str | None
    if len(types) >= 4:
        d_t, a_t, b_t, c_t = types[:4]
    elif len(types) == 2:       # e.g. an 'f64' form written with two types: D/C and A/B
        d_t, a_t, b_t, c_t = types[0], types[1], types[1], types[0]
    elif len(types) == 1:
        d_t = a_t = b_t = c_t = types[0]
    else:
        d_t, a_t, b_t, c_t = (types + [None] * 4)[:4] if types else (None,) * 4
    ops = list(st.operands) + [None] * 4
    return Mma(index=st.index, line=st.line, end_line=st.end_line, opcode=st.opcode,
               shape=shape, m=m, n=n, k=k, layouts=tuple(layouts),
               d_type=d_t, a_type=a_t, b_type=b_t, c_type=c_t,
               d=_regs_of(ops[0]), a=_regs_of(ops[1]), b=_regs_of(ops[2]), c=_regs_of(ops[3]),
               guarded=st.guard is not None)


def find_mma(fn: Function) -> list[Mma]:
    """Every `mma` of the function, in program order."""
    return [mm for st in fn.statements if (mm := mma_of(st)) is not None]


# ---------------------------------------------------------------- chains

@dataclass
class _Scan:
    """What one program-order walk over the statements learns (see _scan)."""
    mmas: list                     # Mma in program order
    pred: dict                     # mma index -> mma index whose D is its C
    phase_of: dict                 # mma index -> 0-based phase number
    phase_starts: list             # per phase: (reason, statement index or None, register)
    frag_def: dict                 # (mma index, reg) -> defining statement (None: unknown)
    c_from_mma: dict               # mma index -> True if its C value comes from some mma
    # per phase: (statement, mma) of every epilogue read of one of its accumulators made
    # before its last mma (a finished chain's epilogue interleaved with the other chains)
    early_reads: dict = field(default_factory=dict)


def _mentions(st: Statement) -> list:
    """Every register a statement mentions, by key (cheap; no roles)."""
    out = []
    g = st.guard
    if g is not None:
        out.append(g.reg.key)
    for op in st.operands:
        t = type(op)
        if t is Reg:
            out.append(op.key)
        elif t is Address:
            b = op.base
            if type(b) is Reg:
                out.append(b.key)
            if op.extra:
                out.extend(r.key for x in op.extra for r in x.registers())
        elif t is Vector and all(type(x) is Reg for x in op.items):
            out.extend(x.key for x in op.items)
        else:
            out.extend(r.key for r in op.registers())
    return out


class _LazyDefUse:
    """def/use of statement i on demand: from `fa.du` when given, else computed once."""

    def __init__(self, fn: Function, fa=None):
        self.stmts = fn.statements
        pre = getattr(fa, "du", None) if fa is not None else None
        self.pre = pre
        self.cache: dict = {}

    def __call__(self, i: int) -> tuple:
        if self.pre is not None:
            d = self.pre[i - 1]
            return d.defs, d.uses
        got = self.cache.get(i)
        if got is None:
            d = def_use(self.stmts[i - 1])
            got = (d.defs, d.uses)
            self.cache[i] = got
        return got


def _immutable_load(st: Statement) -> bool:
    """A load of memory the kernel cannot write (no store of an epilogue can reach it)."""
    mods = st.modifiers
    return st.base == "ldu" or "nc" in mods or "const" in mods or "param" in mods


class _Gemm:
    """The operands one phase's mma have read so far, to tell whether a later mma draws on
    the same ones (the same GEMM): fragment values (rrsplice.analysis.fragvalue with an
    analysis, else register and straight-line definition), the bias seeds, and where A and
    B fragments come from (a load's state space and root pointer, else how the value is
    made). Filled lazily: only a phase an epilogue has started reading ever asks."""

    def __init__(self, fa, frag_def: dict, stmts):
        self.fa, self.frag_def, self.stmts = fa, frag_def, stmts
        self.pending: list = []       # mma not yet folded into the sets below
        self.opcodes: set = set()
        self.a: set = set()
        self.b: set = set()
        self.c: set = set()
        self.a_src: set = set()
        self.b_src: set = set()

    def _key(self, idx: int, regs: tuple) -> tuple:
        if self.fa is not None:
            from .fragvalue import value_key
            return tuple(value_key(self.fa, idx, r) for r in regs)
        return tuple((r, self.frag_def.get((idx, r))) for r in regs)

    def _source(self, idx: int, regs: tuple) -> frozenset:
        out: set[tuple] = set()
        for r in regs:
            if self.fa is not None:
                from .provenance import Load, value_of
                v = value_of(self.fa, idx, r)
                out.add(("load", v.space, repr(v.base)) if isinstance(v, Load)
                        else (type(v).__name__,))
            else:
                d = self.frag_def.get((idx, r))
                out.add(("def", None if d is None else opcode_family(self.stmts[d - 1])))
        return frozenset(out)

    def _fold(self) -> None:
        for mm, seed in self.pending:
            self.opcodes.add(mm.opcode)
            self.a.add(self._key(mm.index, mm.a))
            self.b.add(self._key(mm.index, mm.b))
            if seed and mm.c:
                self.c.add(self._key(mm.index, mm.c))
            self.a_src.add(self._source(mm.index, mm.a))
            self.b_src.add(self._source(mm.index, mm.b))
        self.pending = []

    def add(self, mm: Mma, seed: bool) -> None:
        self.pending.append((mm, seed))

    def same(self, mm: Mma, seed: bool) -> bool:
        """Does `mm` (not continuing a chain of the phase) belong to the phase's GEMM? It
        has the phase's opcode, shares an A or a B fragment or a bias seed with the phase,
        and a fragment it does not share comes from where the phase's come from."""
        self._fold()
        if mm.opcode not in self.opcodes:
            return False
        ka, kb = self._key(mm.index, mm.a), self._key(mm.index, mm.b)
        shares_a, shares_b = ka in self.a, kb in self.b
        if not (shares_a or shares_b or (seed and mm.c and self._key(mm.index, mm.c) in self.c)):
            return False
        return ((shares_a or self._source(mm.index, mm.a) in self.a_src)
                and (shares_b or self._source(mm.index, mm.b) in self.b_src))


class _Taint:
    """The values one phase's epilogue computed so far, walked forward on demand (only a
    phase an epilogue has started reading, and only when an mma there is more of the same
    GEMM, ever asks): registers holding a value computed from the accumulators the epilogue
    read (`roots`: the statements reading them) by statements other than mma, and whether
    such a value was written to memory (every later load of writable memory, and every call,
    may then return it). Straight-line code only: a label ends the phase before anyone asks."""

    def __init__(self, stmts, bases, du):
        self.stmts, self.bases, self.du = stmts, bases, du
        self.roots: set = set()
        self.pos = 0                  # the next statement to walk (0: nothing to walk yet)
        self.epi: set = set()
        self.mem_dirty = False

    def root(self, i: int) -> None:
        self.roots.add(i)
        if not self.pos:
            self.pos = i

    def depends(self, i: int, regs) -> bool:
        """Does a register of `regs`, read by statement i, hold an epilogue value?"""
        if not self.pos:
            return False
        epi, du = self.epi, self.du
        for j in range(self.pos, i):
            base = self.bases[j - 1]
            if base is None:
                continue
            if base == "mma":
                epi.difference_update(du(j)[0])
                continue
            st = self.stmts[j - 1]
            eff = "call" if base == "call" else memory_effect(st.opcode)
            if j not in self.roots and epi.isdisjoint(_mentions(st)) \
                    and not (self.mem_dirty and eff):
                continue
            defs, uses = du(j)
            tainted = j in self.roots or not epi.isdisjoint(uses)
            if tainted and eff in ("write", "atomic", "copy", "call"):
                self.mem_dirty = True
            if self.mem_dirty and eff in ("read", "atomic", "copy", "call") \
                    and not (eff == "read" and _immutable_load(st)):
                tainted = True
            if tainted:
                epi.update(defs)
            else:
                epi.difference_update(defs)
        self.pos = max(self.pos, i)
        return not epi.isdisjoint(regs)


def _scan(fn: Function, fa=None) -> _Scan:
    du = _LazyDefUse(fn, fa)
    stmts = fn.statements
    # only registers that appear in some mma matter: a statement mentioning none of them
    # can neither read an accumulator nor redefine a fragment register (what the epilogue
    # computes from the accumulators it read: _Taint)
    interesting: set = set()
    bases = [None if st.is_label else st.opcode.split(".", 1)[0] for st in stmts]
    for st, b in zip(stmts, bases, strict=False):
        if b == "mma":
            interesting.update(_mentions(st))
    mmas: list[Mma] = []
    pred: dict[int, int] = {}
    phase_of: dict[int, int] = {}
    starts: list = []
    frag_def: dict = {}
    c_from_mma: dict = {}
    early: dict = {}
    last_def: dict[str, int] = {}      # name-based, reset at labels (exact in straight code)
    mma_d: dict[int, tuple] = {}       # mma index -> its D tuple
    cur_d: dict[str, int] = {}         # reg -> mma of the current phase whose D it holds
    # the current phase's epilogue so far: the mma whose D an epilogue statement read
    # (finished chains), those reads, and what the epilogue computed from them
    consumed: set = set()
    reads: list = []
    epi_first: tuple | None = None   # the phase's first epilogue read
    epi_since: tuple | None = None   # the first one since the previous mma
    pending: tuple | None = None     # control flow: the next mma starts a new phase
    gemm = _Gemm(fa, frag_def, stmts)
    taint = _Taint(stmts, bases, du)
    phase = -1
    reaching = getattr(fa, "reaching_defs", None) if fa is not None else None
    for i, st in enumerate(stmts, 1):
        base = bases[i - 1]
        if base is None:
            last_def.clear()
            if pending is None and phase >= 0:
                pending = epi_since or ("control flow", i, None)
            continue
        if base == "mma":
            mm = mma_of(st)
            assert mm is not None  # base "mma" on a non-label is an mma
            for r in mm.a + mm.b + mm.c:
                frag_def[(i, r)] = last_def.get(r)
            # the D -> C link
            src = None
            if mm.c:
                if reaching is not None:
                    srcs: set = set()
                    for r in set(mm.c):
                        defs = reaching(i, r)
                        srcs.add(tuple(defs) if len(defs) != 1 else defs[0])
                    if len(srcs) == 1:
                        cand = next(iter(srcs))
                        if isinstance(cand, int) and mma_d.get(cand) == mm.c:
                            src = cand
                    c_from_mma[i] = all(isinstance(s, int) and s in mma_d for s in srcs)
                else:
                    srcs = {last_def.get(r) for r in mm.c}
                    if len(srcs) == 1:
                        cand = next(iter(srcs))
                        if cand is not None and mma_d.get(cand) == mm.c:
                            src = cand
                    c_from_mma[i] = all(s is not None and s in mma_d for s in srcs)
            if src is not None:
                pred[i] = src
            seed = src is None and not c_from_mma.get(i)
            why = pending
            if why is None and phase >= 0:
                for r in mm.a + mm.b:
                    if r in cur_d:
                        why = epi_since or ("A/B reads an accumulator", i, r)
                        break
            if why is None and phase >= 0 and consumed:
                # an epilogue has read some of the phase's accumulators: this mma still
                # belongs to the phase only if it does not depend on that epilogue, does not
                # continue a chain the epilogue read, and is more of the same GEMM
                owners = {cur_d.get(r) for r in mm.c}
                continues = len(owners) == 1 and None not in owners
                guard = (st.guard.reg.key,) if st.guard is not None else ()
                if (not consumed.isdisjoint(owners)
                        or not (continues or gemm.same(mm, seed))
                        or taint.depends(i, mm.a + mm.b + mm.c + guard)):
                    why = epi_since or epi_first
            if why is not None or phase < 0:
                if phase >= 0:
                    early[phase] = [rd for rd in reads if rd[0] < mmas[-1].index]
                phase += 1
                starts.append(why or ("first mma", i, None))
                cur_d, consumed, reads = {}, set(), []
                epi_first = None
                gemm = _Gemm(fa, frag_def, stmts)
                taint = _Taint(stmts, bases, du)
                pending = None
            epi_since = None
            phase_of[i] = phase
            gemm.add(mm, seed)
            mmas.append(mm)
            mma_d[i] = mm.d
            for r in du(i)[0]:
                last_def[r] = i
            for r in mm.d:
                cur_d[r] = i
            continue
        if pending is None and phase >= 0 and base in TERMINATORS:
            pending = epi_since or ("control flow", i, None)
        if interesting.isdisjoint(_mentions(st)):
            continue
        defs, uses = du(i)
        if phase >= 0 and cur_d:
            for r in uses:
                if r in cur_d:
                    read = ("epilogue reads an accumulator", i, r)
                    epi_first = epi_first or read
                    epi_since = epi_since or read
                    consumed.add(cur_d[r])
                    reads.append((i, cur_d[r]))
                    taint.root(i)
        for r in defs:
            last_def[r] = i
            cur_d.pop(r, None)
    if phase >= 0:
        early[phase] = [rd for rd in reads if rd[0] < mmas[-1].index]
    return _Scan(mmas, pred, phase_of, starts, frag_def, c_from_mma, early)


def chains(fn: Function, fa=None) -> list[tuple[int, ...]]:
    """Every chain as the statement numbers of its mma, in program order of their heads.

    mma k continues mma j when k's C registers are exactly j's D registers and j's
    definition is the one reaching k's C (reaching definitions with `fa`, else names in
    straight-line code). A D that feeds two C lists forks: the later consumer starts a
    chain of its own.
    """
    return _chains_of(_scan(fn, fa))


def _chains_of(sc: _Scan) -> list[tuple[int, ...]]:
    succ: dict[int, int] = {}
    for dst, src in sorted(sc.pred.items()):
        if src not in succ:
            succ[src] = dst
    heads = [m.index for m in sc.mmas
             if m.index not in sc.pred or succ.get(sc.pred[m.index]) != m.index]
    out = []
    for h in heads:
        c = [h]
        while c[-1] in succ:
            c.append(succ[c[-1]])
        out.append(tuple(c))
    return out


# ---------------------------------------------------------------- phases

@dataclass
class Phase:
    index: int                      # 1-based
    mmas: list                      # Mma in program order
    first: int                      # statement numbers of the first and last mma
    last: int
    first_line: int
    last_line: int                  # the last mma's last physical line
    start_reason: str               # why a new phase starts here
    start_at: int | None         # the statement that caused it (None for the first)
    start_register: str | None
    chains: list                    # tuple of mma statement numbers per chain
    chain_count: int
    chain_length: int | None     # None when chains differ in length
    chain_lengths: list
    shape: str
    m: int
    n: int
    k: int
    m_tiles: int
    n_tiles: int
    k_slices: int
    dense: bool
    a_fragments: list               # register tuples, first-use order
    b_fragments: list               # register tuples, first-use order
    bias_seeds: list                # registers, first-use order
    bias_seed_offsets: dict         # reg -> weight-image offset (None: not resolved)
    bias_seeds_by_offset: list      # registers sorted by offset (resolved ones)
    b_weight_range: tuple | None # [lo, hi) bytes of the B fragments in the weight image
    b_unresolved: int               # B registers without a weight-image offset
    gap_first: int | None = None  # statements between this phase and the next one
    gap_last: int | None = None
    gap_counts: list = field(default_factory=list)   # [(family, count)] first-seen order
    notes: list = field(default_factory=list)

    @property
    def geometry(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def gap(self) -> str | None:
        if self.gap_first is None:
            return None
        return ", ".join(f"{f} x{c}" for f, c in self.gap_counts) or "nothing"

    @property
    def bias_offset_range(self) -> tuple | None:
        offs = [o for o in self.bias_seed_offsets.values() if o is not None]
        return (min(offs), max(offs)) if offs else None

    def to_json(self) -> dict:
        return {"index": self.index, "mma": len(self.mmas),
                "statements": [self.first, self.last], "lines": [self.first_line, self.last_line],
                "start": {"reason": self.start_reason,
                          "at": f"s{self.start_at}" if self.start_at else None,
                          "register": self.start_register},
                "shape": self.shape, "geometry": self.geometry,
                "m": self.m, "n": self.n, "k": self.k, "m_tiles": self.m_tiles,
                "n_tiles": self.n_tiles, "k_slices": self.k_slices,
                "chains": self.chain_count, "chain_length": self.chain_length,
                "chain_lengths": self.chain_lengths, "dense": self.dense,
                "a_fragments": [list(a) for a in self.a_fragments],
                "b_fragment_count": len(self.b_fragments),
                "bias_seeds": self.bias_seeds,
                "bias_seed_offsets": self.bias_seed_offsets,
                "bias_seeds_by_offset": self.bias_seeds_by_offset,
                "bias_offset_range": list(self.bias_offset_range) if self.bias_offset_range else None,
                "b_weight_range": list(self.b_weight_range) if self.b_weight_range else None,
                "b_unresolved": self.b_unresolved,
                "gap": {"statements": [self.gap_first, self.gap_last],
                        "counts": [[f, c] for f, c in self.gap_counts],
                        "summary": self.gap} if self.gap_first is not None else None,
                "notes": self.notes}


def opcode_family(st: Statement) -> str:
    """A short family name for gap summaries: `ld.global`, `st.shared`, `bar.warp.sync`,
    `cvt`, `mov`, ... (memory operations keep their state space, barriers their kind)."""
    if st.is_label:
        return "label"
    base = st.base
    assert base is not None     # every instruction has an opcode (rrsplice.ptx.operands)
    mods = st.modifiers
    space = state_space(st.opcode)          # memory operations (rrsplice.ptx.isa)
    if space is not None:
        return base if space == "generic" else f"{base}.{space}"
    if base in ("bar", "barrier"):
        kept = [m for m in mods if m in ("warp", "sync", "arrive", "red", "cta", "cluster",
                                          "wait")]
        return ".".join([base] + kept)
    return base


def _gap_counts(stmts, first: int, last: int) -> list:
    counts: Counter = Counter()
    order: list = []
    for st in stmts[first - 1:last]:
        fam = opcode_family(st)
        if fam not in counts:
            order.append(fam)
        counts[fam] += 1
    return [(f, counts[f]) for f in order]


def phases(fn: Function, fa=None) -> list[Phase]:
    """The phases (GEMMs) of the function's mma, in program order (see the module doc)."""
    sc = _scan(fn, fa)
    if not sc.mmas:
        return []
    all_chains = _chains_of(sc)
    by_phase: dict[int, list] = {}
    for m in sc.mmas:
        by_phase.setdefault(sc.phase_of[m.index], []).append(m)
    chains_by_phase: dict[int, list] = {}
    cross: Counter = Counter()
    for c in all_chains:
        # a chain never spans phases: cut it where the phase changes
        cur = [c[0]]
        for idx in c[1:]:
            if sc.phase_of[idx] != sc.phase_of[cur[-1]]:
                chains_by_phase.setdefault(sc.phase_of[cur[-1]], []).append(tuple(cur))
                cross[sc.phase_of[idx]] += 1
                cur = [idx]
            else:
                cur.append(idx)
        chains_by_phase.setdefault(sc.phase_of[cur[-1]], []).append(tuple(cur))
    prov = _provenance_helpers(fa)
    stmts = fn.statements
    mma_at = {m.index: m for m in sc.mmas}
    out: list[Phase] = []
    nphase = len(by_phase)
    for p in range(nphase):
        ms = by_phase[p]
        chs = sorted(chains_by_phase.get(p, []), key=lambda c: c[0])
        ph = _build_phase(p, ms, chs, sc, mma_at, prov, fa)
        if cross[p]:
            ph.notes.append(f"{cross[p]} chain(s) continue an accumulator of an earlier phase")
        early = sc.early_reads.get(p)
        if early:
            ph.notes.append(
                f"{len({m for _, m in early})} chain(s) finished before the phase's last mma: "
                f"an epilogue reads their accumulators between its mma "
                f"(s{early[0][0]}..s{early[-1][0]})")
        out.append(ph)
    for a, b in zip(out, out[1:], strict=False):
        if b.first - 1 >= a.last + 1:
            a.gap_first, a.gap_last = a.last + 1, b.first - 1
        else:
            a.gap_first, a.gap_last = a.last + 1, a.last
        a.gap_counts = _gap_counts(stmts, a.gap_first, a.gap_last)
    return out


def _provenance_helpers(fa):
    if fa is None:
        return None
    from .provenance import weight_offset
    return lambda index, reg: weight_offset(fa, index, reg)


def _frag_key(sc: _Scan, idx: int, regs: tuple, fa=None) -> tuple:
    """What identifies a fragment: the value of each register (rrsplice.analysis.fragvalue) with an
    analysis, else the register and its definition in straight-line code."""
    if fa is not None:
        from .fragvalue import value_key
        return tuple(value_key(fa, idx, r) for r in regs)
    return tuple((r, sc.frag_def.get((idx, r))) for r in regs)


def _build_phase(p: int, ms: list, chs: list, sc: _Scan, mma_at: dict, prov,
                 fa=None) -> Phase:
    first, last = ms[0], ms[-1]
    reason, at, reg = sc.phase_starts[p]
    shapes = Counter(m.shape for m in ms)
    shape = shapes.most_common(1)[0][0]
    mm, nn, kk = ms[0].m, ms[0].n, ms[0].k
    notes = []
    if len(shapes) > 1:
        notes.append("mixed shapes: " + ", ".join(sorted(shapes)))
    lengths = sorted({len(c) for c in chs})
    chain_length = lengths[0] if len(lengths) == 1 else None
    if chain_length is None:
        notes.append("chains differ in length: " + ", ".join(map(str, lengths)))
    a_seq_ids: dict = {}
    b_seq_ids: dict = {}
    pairs = []
    for c in chs:
        a_seq = tuple(_frag_key(sc, i, mma_at[i].a, fa) for i in c)
        b_seq = tuple(_frag_key(sc, i, mma_at[i].b, fa) for i in c)
        pairs.append((a_seq_ids.setdefault(a_seq, len(a_seq_ids)),
                      b_seq_ids.setdefault(b_seq, len(b_seq_ids))))
    m_tiles, n_tiles = len(a_seq_ids), len(b_seq_ids)
    k_slices = max(lengths) if lengths else 0
    dense = (len(chs) == m_tiles * n_tiles and len(set(pairs)) == len(chs))
    # fragments in first-use order
    a_frags, b_frags, seen_a, seen_b = [], [], set(), set()
    for m in ms:
        ka, kb = _frag_key(sc, m.index, m.a, fa), _frag_key(sc, m.index, m.b, fa)
        if ka not in seen_a:
            seen_a.add(ka)
            a_frags.append(m.a)
        if kb not in seen_b:
            seen_b.add(kb)
            b_frags.append(m.b)
    # bias seeds: C operands whose value no mma produced
    seed_at: dict
    seeds, seed_at, seen_s = [], {}, set()
    for m in ms:
        if m.index in sc.pred or sc.c_from_mma.get(m.index):
            continue
        for r in m.c:
            key = (r, sc.frag_def.get((m.index, r)))
            if key not in seen_s:
                seen_s.add(key)
                seeds.append(r)
                seed_at.setdefault(r, m.index)
    seed_offsets: dict = {}
    b_range = None
    b_unresolved = 0
    if prov is not None:
        for r in seeds:
            seed_offsets[r] = prov(seed_at[r], r)
        lo = hi = None
        for m in ms:
            for r in m.b:
                off = prov(m.index, r)
                if off is None:
                    b_unresolved += 1
                    continue
                lo = off if lo is None else min(lo, off)
                hi = off + 4 if hi is None else max(hi, off + 4)
        if lo is not None:
            b_range = (lo, hi)
    else:
        seed_offsets = {r: None for r in seeds}
        b_unresolved = sum(len(m.b) for m in ms)
    resolved = [r for r in seeds if seed_offsets.get(r) is not None]
    by_offset = sorted(resolved, key=lambda r: (seed_offsets[r], seeds.index(r)))
    return Phase(index=p + 1, mmas=ms, first=first.index, last=last.index,
                 first_line=first.line, last_line=last.end_line,
                 start_reason=reason, start_at=at if p else None, start_register=reg,
                 chains=chs, chain_count=len(chs), chain_length=chain_length,
                 chain_lengths=lengths, shape=shape,
                 m=mm * m_tiles, n=nn * n_tiles, k=kk * k_slices,
                 m_tiles=m_tiles, n_tiles=n_tiles, k_slices=k_slices, dense=dense,
                 a_fragments=a_frags, b_fragments=b_frags, bias_seeds=seeds,
                 bias_seed_offsets=seed_offsets, bias_seeds_by_offset=by_offset,
                 b_weight_range=b_range, b_unresolved=b_unresolved, notes=notes)
