"""Property test: liveness, range queries, reaching definitions and first uses of random
small PTX programs (branches, loops, guarded definitions, vectors, setp pairs) agree with a
brute-force reference that searches paths statement by statement.

The reference is independent of rrsplice's semantics table and CFG: each generated
instruction carries its own ground truth (what it reads, writes and kills, where control
goes), written next to its PTX text below. Only the parser is shared.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrsplice import parse
from rrsplice.analysis.dataflow import FunctionAnalysis
from rrsplice.ptx.select import StatementRange

R = ["%r1", "%r2", "%r3", "%r4"]
RD = ["%rd1", "%rd2"]
P = ["%p1", "%p2", "%p3"]


class Item:
    """One generated statement and its ground truth. `pre`/`post`: lines printed before /
    after it that are not statements (a call block's braces and `.param` declarations, a
    `.branchtargets` table)."""

    def __init__(self, text, uses=(), defs=(), kills=(), kind="plain", target=None,
                 guarded=False, label=None, pre=(), post=(), targets=()):
        self.text = text
        self.pre = tuple(pre)
        self.post = tuple(post)
        self.targets = tuple(targets)   # brx.idx: its table's labels
        self.uses = frozenset(uses)
        self.defs = frozenset(defs)
        self.kills = frozenset(kills)
        self.kind = kind            # plain | bra | ret | label
        self.target = target        # label name for bra
        self.guarded = guarded
        self.label = label


def two(draw, pool):
    a = draw(st.sampled_from(pool))
    b = draw(st.sampled_from([x for x in pool if x != a]))
    return a, b


CARRY = "cc:CF"


@st.composite
def wide(draw, nlabels):
    """A group of statements (a list of Items): the shapes beyond plain instructions --
    carry chains, call blocks with `.param` arguments and returns, `!%p` sources, octal
    literals, unknown opcodes, mma, and `brx.idx` through a `.branchtargets` table."""
    r = lambda: draw(st.sampled_from(R))          # noqa: E731
    kind = draw(st.integers(0, 8 if nlabels else 7))
    if kind == 0:
        # add.cc writes the carry flag, addc reads it (and does not write it)
        x, y, z = r(), r(), r()
        cc = Item(f"add.cc.u32 {x}, {y}, {z};", uses={y, z}, defs={x, CARRY},
                  kills={x, CARRY})
        if draw(st.booleans()):
            return [cc]
        a, b = r(), r()
        return [cc, Item(f"addc.u32 {a}, {b}, 0;", uses={b, CARRY}, defs={a}, kills={a})]
    if kind == 1:
        # the middle of a chain: reads the carry and writes it again
        x, y = r(), r()
        return [Item(f"addc.cc.u32 {x}, {y}, 1;", uses={y, CARRY}, defs={x, CARRY},
                     kills={x, CARRY})]
    if kind == 2:
        # a call block: the argument slot is written whole, the call reads it
        x = r()
        return [Item(f"st.param.b32 [pa+0], {x};", uses={x}, defs={"param:pa"},
                     kills={"param:pa"}, pre=("{", "\t.param .b32 pa;")),
                Item("call.uni f, (pa);", uses={"param:pa"}, post=("}",))]
    if kind == 3:
        x, y = r(), r()
        return [Item(f"st.param.b32 [pa+0], {x};", uses={x}, defs={"param:pa"},
                     kills={"param:pa"}, pre=("{", "\t.param .b32 pa;", "\t.param .b32 pr;")),
                Item("call.uni (pr), g, (pa);", uses={"param:pa"}, defs={"param:pr"},
                     kills={"param:pr"}),
                Item(f"ld.param.b32 {y}, [pr+0];", uses={"param:pr"}, defs={y}, kills={y},
                     post=("}",))]
    if kind == 4:
        x, y, z, p = r(), r(), r(), draw(st.sampled_from(P))
        return [Item(f"selp.b32 {x}, {y}, {z}, !{p};", uses={y, z, p}, defs={x}, kills={x})]
    if kind == 5:
        x, y = r(), r()
        lit = draw(st.sampled_from(["010", "0777", "017U", "0x1f", "0b101"]))
        return [Item(f"add.s32 {x}, {y}, {lit};", uses={y}, defs={x}, kills={x})]
    if kind == 6:
        # not in the semantics table: every register read, the first operand's written,
        # nothing killed
        x, y = r(), r()
        return [Item(f"frobnicate.b32 {x}, {y};", uses={x, y}, defs={x})]
    if kind == 7:
        d0, d1 = two(draw, R)
        a0, a1, b0, c0 = r(), r(), r(), r()
        return [Item(f"mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16 {{{d0}, {d1}}}, "
                     f"{{{a0}, {a1}}}, {{{b0}}}, {{{c0}, {c0}}};", uses={a0, a1, b0, c0},
                     defs={d0, d1}, kills={d0, d1})]
    x = r()
    labs = sorted({f"$L{draw(st.integers(0, nlabels - 1))}" for _ in range(draw(st.integers(1, 3)))})
    p = draw(st.sampled_from(P)) if draw(st.booleans()) else None
    return [Item(f"{'@' + p + ' ' if p else ''}brx.idx {x}, TABLE;", uses={x} | ({p} if p else set()),
                 kind="brx", targets=labs, guarded=p is not None,
                 pre=(f"TABLE: .branchtargets {', '.join(labs)};",))]


@st.composite
def instruction(draw, nlabels):
    r = lambda: draw(st.sampled_from(R))          # noqa: E731
    kind = draw(st.integers(0, 15 if nlabels else 12))
    if kind == 0:
        x = r()
        return Item(f"mov.u32 {x}, {draw(st.integers(0, 9))};", defs={x}, kills={x})
    if kind == 1:
        x, y, z = r(), r(), r()
        return Item(f"add.s32 {x}, {y}, {z};", uses={y, z}, defs={x}, kills={x})
    if kind == 2:
        p, x, y = draw(st.sampled_from(P)), r(), r()
        # a guarded write may not happen: it reads the old value and kills nothing
        return Item(f"@{p} add.s32 {x}, {y}, 1;", uses={p, y, x}, defs={x})
    if kind == 3:
        p, x, y = draw(st.sampled_from(P)), r(), r()
        return Item(f"@!{p} mov.u32 {x}, {y};", uses={p, y, x}, defs={x})
    if kind == 4:
        a, b = two(draw, P)
        x, y = r(), r()
        return Item(f"setp.lt.s32 {a}|{b}, {x}, {y};", uses={x, y}, defs={a, b}, kills={a, b})
    if kind == 5:
        a, x = draw(st.sampled_from(P)), r()
        return Item(f"setp.eq.s32 {a}, {x}, 0;", uses={x}, defs={a}, kills={a})
    if kind == 6:
        x, y = two(draw, R)
        a = draw(st.sampled_from(RD))
        return Item(f"ld.global.v2.u32 {{{x}, {y}}}, [{a}+8];", uses={a}, defs={x, y},
                    kills={x, y})
    if kind == 7:
        x, y = r(), r()
        a = draw(st.sampled_from(RD))
        return Item(f"st.global.v2.u32 [{a}], {{{x}, {y}}};", uses={a, x, y})
    if kind == 8:
        x, y = two(draw, R)
        a = draw(st.sampled_from(RD))
        return Item(f"mov.b64 {{{x}, {y}}}, {a};", uses={a}, defs={x, y}, kills={x, y})
    if kind == 9:
        x, y = r(), r()
        a = draw(st.sampled_from(RD))
        return Item(f"mov.b64 {a}, {{{x}, {y}}};", uses={x, y}, defs={a}, kills={a})
    if kind == 10:
        x, y, z = r(), r(), r()
        return Item(f"mad.lo.s32 {x}, {y}, {z}, {x};", uses={x, y, z}, defs={x}, kills={x})
    if kind == 11:
        x, y, z, p = r(), r(), r(), draw(st.sampled_from(P))
        return Item(f"selp.b32 {x}, {y}, {z}, {p};", uses={y, z, p}, defs={x}, kills={x})
    if kind == 12:
        which = draw(st.integers(0, 3))
        if which == 0:
            return Item("ret;", kind="ret")
        if which == 1:
            return Item("exit;", kind="ret")
        p = draw(st.sampled_from(P))
        return Item(f"@{p} ret;", uses={p}, kind="ret", guarded=True)
    # branches
    lab = f"$L{draw(st.integers(0, nlabels - 1))}"
    if kind == 13:
        return Item(f"bra.uni {lab};", kind="bra", target=lab)
    p = draw(st.sampled_from(P))
    neg = "!" if kind == 15 else ""
    return Item(f"@{neg}{p} bra {lab};", uses={p}, kind="bra", target=lab, guarded=True)


@st.composite
def program(draw, widen=False):
    nlabels = draw(st.integers(0, 3))
    one = instruction(nlabels).map(lambda it: [it])
    groups = draw(st.lists(st.one_of(one, wide(nlabels)) if widen else one,
                           min_size=1, max_size=22))
    for k in range(nlabels):
        pos = draw(st.integers(0, len(groups)))
        groups.insert(pos, [Item(f"$L{k}:", kind="label", label=f"$L{k}")])
    body = [it for g in groups for it in g]
    for k, it in enumerate(x for x in body if x.kind == "brx"):
        it.text = it.text.replace("TABLE", f"ts{k}")
        it.pre = tuple(ln.replace("TABLE", f"ts{k}") for ln in it.pre)
    return body


def to_ptx(items) -> str:
    lines = [".version 8.7", ".target sm_89", ".address_size 64", "",
             ".extern .func f (.param .b32 f_a);",
             ".extern .func (.param .b32 g_r) g (.param .b32 g_a);", "",
             ".visible .entry k(", "\t.param .u64 k_param_0", ")", "{",
             "\t.reg .pred \t%p<4>;", "\t.reg .b32 \t%r<5>;", "\t.reg .b64 \t%rd<3>;", ""]
    for it in items:
        lines.extend(it.pre)
        lines.append(it.text if it.kind == "label" else "\t" + it.text)
        lines.extend(it.post)
    lines += ["}", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the reference

class Reference:
    """Brute-force path search over the generated items (1-based statement numbers)."""

    def __init__(self, items):
        self.items = items
        self.n = len(items)
        where = {it.label: i for i, it in enumerate(items, 1) if it.kind == "label"}
        self.succ = {}
        for i, it in enumerate(items, 1):
            nxt = [i + 1] if i < self.n else []
            if it.kind == "bra":
                self.succ[i] = [where[it.target]] + (nxt if it.guarded else [])
            elif it.kind == "brx":
                self.succ[i] = [where[t] for t in it.targets] + (nxt if it.guarded else [])
            elif it.kind == "ret":
                self.succ[i] = nxt if it.guarded else []
            else:
                self.succ[i] = nxt
        self.pred = {i: [] for i in range(1, self.n + 1)}
        for i, ss in self.succ.items():
            for s in ss:
                self.pred[s].append(i)
        self.regs = sorted({r for it in items for r in it.uses | it.defs})

    def reads_before_kill(self, start, reg, inside=None) -> bool:
        """Some path from statement `start` (staying within `inside` if given) reads `reg`
        before killing it."""
        seen = set()
        stack = [start]
        while stack:
            i = stack.pop()
            if i in seen or (inside is not None and i not in inside):
                continue
            seen.add(i)
            it = self.items[i - 1]
            if reg in it.uses:
                return True
            if reg in it.kills:
                continue
            stack.extend(self.succ[i])
        return False

    def live_in(self, i):
        return {r for r in self.regs if self.reads_before_kill(i, r)}

    def live_out(self, i):
        out = set()
        for s in self.succ[i]:
            out |= self.live_in(s)
        return out

    def entries(self, a, b):
        return [i for i in range(a, b + 1)
                if i == 1 or any(not a <= p <= b for p in self.pred[i])]

    def range_live_in(self, a, b):
        inside = set(range(a, b + 1))
        return {r for r in self.regs
                if any(self.reads_before_kill(e, r, inside) for e in self.entries(a, b))}

    def range_live_out(self, a, b):
        inside = set(range(a, b + 1))
        exits = [(i, t) for i in inside for t in self.succ[i] if t not in inside]
        out = set()
        for r in self.regs:
            sites = [i for i in inside if r in self.items[i - 1].defs]
            # from a definition in R, along R, to an exit whose target still needs r
            reach = set()
            stack = list(sites)
            while stack:
                i = stack.pop()
                if i in reach or i not in inside:
                    continue
                reach.add(i)
                stack.extend(self.succ[i])
            if any(i in reach and r in self.live_in(t) for i, t in exits):
                out.add(r)
        return out

    def reaching_defs(self, index, reg):
        found = set()
        seen = set()
        stack = list(self.pred[index])
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            it = self.items[i - 1]
            if reg in it.defs:
                found.add(i)
            if reg in it.kills:
                continue
            stack.extend(self.pred[i])
        return sorted(found)

    def first_uses_after(self, a, b, reg):
        inside = set(range(a, b + 1))
        starts = [t for i in inside for t in self.succ[i] if t not in inside]
        found = set()
        seen = set()
        stack = list(starts)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            it = self.items[i - 1]
            if reg in it.uses:
                found.add(i)
                continue
            if reg in it.kills:
                continue
            stack.extend(self.succ[i])
        return sorted(found)


# ---------------------------------------------------------------- the properties

def _analysis(items):
    m = parse(to_ptx(items))
    fn = m.functions[-1]
    assert len(fn.statements) == len(items)
    return FunctionAnalysis(fn)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program())
@pytest.mark.slow
def test_statement_liveness_matches_path_search(items):
    fa = _analysis(items)
    ref = Reference(items)
    for i in range(1, len(items) + 1):
        assert set(fa.live_in_at(i)) == ref.live_in(i), (i, to_ptx(items))
        assert set(fa.live_out_at(i)) == ref.live_out(i), (i, to_ptx(items))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
@pytest.mark.slow
def test_range_queries_match_path_search(data):
    items = data.draw(program())
    fa = _analysis(items)
    ref = Reference(items)
    n = len(items)
    for _ in range(3):
        a = data.draw(st.integers(1, n))
        b = data.draw(st.integers(a, n))
        rng = StatementRange(a, b)
        assert set(fa.range_live_in(rng)) == ref.range_live_in(a, b), (a, b, to_ptx(items))
        assert set(fa.range_live_out(rng)) == ref.range_live_out(a, b), (a, b, to_ptx(items))
        assert fa.range_entries(rng) == ref.entries(a, b)
        for r in ref.regs:
            assert fa.first_uses_after(rng, r) == ref.first_uses_after(a, b, r), \
                (a, b, r, to_ptx(items))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
@pytest.mark.slow
def test_reaching_definitions_match_path_search(data):
    items = data.draw(program())
    fa = _analysis(items)
    ref = Reference(items)
    n = len(items)
    for _ in range(4):
        i = data.draw(st.integers(1, n))
        for r in ref.regs:
            assert fa.reaching_defs(i, r) == ref.reaching_defs(i, r), (i, r, to_ptx(items))


def test_reference_sanity():
    """The reference itself on a hand-made loop: %r1 is live around the back edge."""
    items = [
        Item("mov.u32 %r1, 0;", defs={"%r1"}, kills={"%r1"}),
        Item("$L0:", kind="label", label="$L0"),
        Item("add.s32 %r1, %r1, %r2;", uses={"%r1", "%r2"}, defs={"%r1"}, kills={"%r1"}),
        Item("setp.eq.s32 %p1, %r1, 0;", uses={"%r1"}, defs={"%p1"}, kills={"%p1"}),
        Item("@%p1 bra $L0;", uses={"%p1"}, kind="bra", target="$L0", guarded=True),
        Item("ret;", kind="ret"),
    ]
    ref = Reference(items)
    assert ref.live_in(1) == {"%r2"}
    assert ref.live_in(2) == {"%r1", "%r2"}
    assert ref.live_out(5) == {"%r1", "%r2"}
    assert ref.range_live_in(2, 5) == {"%r1", "%r2"}
    assert ref.range_live_out(2, 5) == set()
    fa = _analysis(items)
    assert set(fa.live_in_at(2)) == {"%r1", "%r2"}
    assert fa.reaching_defs(3, "%r1") == [1, 3]


def _plain(regs) -> set:
    return {r for r in regs if ":" not in r}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
@pytest.mark.slow
def test_wide_shapes_match_path_search(data):
    """The same properties over programs that also hold carry chains, call blocks, `!%p`,
    octal literals, unknown opcodes, mma and brx.idx: statement sets include the
    pseudo-registers, range lists leave them out."""
    items = data.draw(program(widen=True))
    fa = _analysis(items)
    ref = Reference(items)
    n = len(items)
    for i in range(1, n + 1):
        assert set(fa.live_in_at(i)) == ref.live_in(i), (i, to_ptx(items))
        assert set(fa.live_out_at(i)) == ref.live_out(i), (i, to_ptx(items))
    for _ in range(3):
        a = data.draw(st.integers(1, n))
        b = data.draw(st.integers(a, n))
        rng = StatementRange(a, b)
        assert set(fa.range_live_in(rng)) == _plain(ref.range_live_in(a, b)), (a, b, to_ptx(items))
        assert set(fa.range_live_out(rng)) == _plain(ref.range_live_out(a, b)), \
            (a, b, to_ptx(items))
        assert set(fa.range_live_out(rng, pseudo=True)) == ref.range_live_out(a, b), \
            (a, b, to_ptx(items))
        assert fa.range_entries(rng) == ref.entries(a, b)
        i = data.draw(st.integers(1, n))
        for r in ref.regs:
            assert fa.reaching_defs(i, r) == ref.reaching_defs(i, r), (i, r, to_ptx(items))
