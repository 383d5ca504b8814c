"""Whether other warps can race on the scratch array's return slots, and whether a
region names a .shared array the call does not pass."""

from __future__ import annotations

import re

from ..ptx.isa import INT_EVAL
from ..ptx.model import Address, Function, Reg, Statement, Symbol
from ..ptx.select import StatementRange
from .analysis import _analyze
from .report import Report
from .source import _short
from .text import SpliceText

# A return slot is written by the body and read by the call text of ONE thread, so the body's
# stores and that thread's reads need no barrier between them (program order). What needs
# one is everything OTHER warps do with the same array: the region and the code before it
# (staging, reductions) must be done in every warp before any body stores its returns, and
# every warp must have read its slot before the code after the call reuses the array. Both
# are one block barrier each: `bar.sync 0` at the start of the body's stores (the native
# body's job; `rrsplice outline` mirrors it) and `bar.sync 0` after the call text's reads.
# The check sees the call text only, so the barrier it looks for is the second one.

_SPECIAL_INDEX = {"%tid.x": 0, "%tid.y": 1, "%tid.z": 2, "%laneid": 3,
                  "%ntid.x": 4, "%ntid.y": 5, "%ntid.z": 6}


def _expr_builder(lookup, sym: str):
    """A function (statement, operand) -> closure(env) -> int | None that computes an
    integer operand per thread: immediates, %tid/%ntid/%laneid (env = (tid.x, tid.y, tid.z,
    laneid, ntid.x, ntid.y, ntid.z)), `sym` as 0 (offsets are relative to the array) and
    registers through `lookup(statement, reg)` (None: unknown)."""
    from ..ptx.model import Imm

    def operand(st, op):
        if isinstance(op, Reg):
            if op.special:
                k = _SPECIAL_INDEX.get(op.name)
                return None if k is None else (lambda e, k=k: e[k])
            return lookup(st, op.key)
        if isinstance(op, Imm) and isinstance(op.value, int):
            v = op.value
            return lambda e, v=v: v
        if isinstance(op, Symbol) and op.name == sym:
            return lambda e: 0
        return None

    def build(st):
        """The closure of the value `st` defines (None when unknown)."""
        ops = st.operands
        base = st.base
        if st.guard or base not in INT_EVAL or len(ops) < 2 or not isinstance(ops[0], Reg):
            return None
        if base in ("mul", "mad") and "hi" in st.modifiers:
            return None
        srcs = [operand(st, o) for o in ops[1:]]
        if any(f is None for f in srcs):
            return None

        evaluate = INT_EVAL[base]

        def f(e):
            vals = [g(e) for g in srcs]
            if any(v is None for v in vals):
                return None
            try:
                return evaluate(*vals)
            except (TypeError, ValueError):     # wrong arity for this form, bad shift
                return None
        return f
    return operand, build


def _mem_width(st: Statement) -> int:
    n = 1
    for mod in st.modifiers:
        if mod in ("v2", "v4", "v8"):
            n = int(mod[1:])
    w = next((t.bytes for t in st.view.types if t.bytes), 4)
    return w * n


def _block_shapes(fn: Function) -> list:
    """Block shapes (x, y, z) to analyse: `.reqntid` exactly; for `.maxntid`, the declared
    extents and the two one-warp-per-row shapes with the same thread count (a `.maxntid`
    bounds the product only: the fixtures declare 128, 1, 1 and launch 32 x 1 x 4)."""
    for d, v in fn.perf:
        if d == ".reqntid":
            nums = ([int(x) for x in re.findall(r"\d+", str(v))] + [1, 1])[:3]
            return [tuple(nums)]
    for d, v in fn.perf:
        if d == ".maxntid":
            nums = ([int(x) for x in re.findall(r"\d+", str(v))] + [1, 1])[:3]
            t = nums[0] * nums[1] * nums[2]
            out = [tuple(nums)]
            if t % 32 == 0:
                for sh in ((32, 1, t // 32), (32, t // 32, 1)):
                    if sh not in out:
                        out.append(sh)
            return out
    return []


def _scratch_overlap(fa, fn: Function, sp: SpliceText, sym: str, size: int, loads: list,
                     accesses: list, shape: tuple):
    """('overlap', witness) / ('clear', None) / ('unknown', why) for one block shape: does
    any access of `sym` by a thread touch bytes of a return slot that belongs to a thread of
    another warp? Slots are the bytes the call text's scratch reads cover, computed per
    thread from the call text's own address arithmetic."""
    # the call text is straight-line: its registers' closures, defined in order
    table: dict = {}
    _, build_sp = _expr_builder(lambda st, r: table.get(r), sym)
    slot_reads = []
    for st in sp.statements:
        if st.base == "ld" and "shared" in st.modifiers:
            addr = next((op for op in st.operands if isinstance(op, Address)), None)
            if addr is None:
                return "unknown", f"`{st.text.strip()}` has no address"
            b = addr.base
            f = (lambda e: 0) if isinstance(b, Symbol) and b.name == sym else (
                table.get(b.key) if isinstance(b, Reg) else None)
            if f is None:
                return "unknown", f"the address of `{st.text.strip()}` is not computed " \
                                  "from the thread index in the call text"
            slot_reads.append((f, addr.offset, _mem_width(st)))
        for r in (def_use_defs(st)):
            table[r] = build_sp(st) if len(def_use_defs(st)) == 1 else None
    nx, ny, nz = shape
    threads = nx * ny * nz
    envs = []
    for t in range(threads):
        x, y, z = t % nx, (t // nx) % ny, t // (nx * ny)
        envs.append((x, y, z, t % 32, nx, ny, nz))
    owner = [0] * size            # bit w: a slot byte of warp w
    owner_t = [-1] * size
    for t, e in enumerate(envs):
        bit = 1 << (t // 32)
        for f, off, w in slot_reads:
            a = f(e)
            if a is None:
                return "unknown", "a slot address is not computable"
            for byte in range(a + off, a + off + w):
                if 0 <= byte < size:
                    owner[byte] |= bit
                    owner_t[byte] = t
    # the kernel's accesses, grouped by address closure
    memo: dict = {}
    stmts = fn.statements

    def lookup(st, reg):
        defs = fa.reaching_defs(st.index, reg)
        if len(defs) != 1:
            return None
        key = (defs[0], reg)
        if key not in memo:
            memo[key] = None           # a cycle reads as unknown
            memo[key] = build(stmts[defs[0] - 1])
        return memo[key]
    _, build = _expr_builder(lookup, sym)
    unresolved = []
    for acc in accesses:
        st = stmts[acc.index - 1]
        if acc.kind not in ("read", "write", "atomic") or st.guard or \
                st.base not in ("ld", "st", "atom", "red"):
            unresolved.append(acc)
            continue
        addr = next((op for op in st.operands if isinstance(op, Address) and (
            (isinstance(op.base, Symbol) and op.base.name == sym)
            or (isinstance(op.base, Reg) and op.base.key == acc.via))), None)
        if addr is None:
            unresolved.append(acc)
            continue
        f = lookup(st, addr.base.key) if isinstance(addr.base, Reg) else (lambda e: 0)
        if f is None:
            unresolved.append(acc)
            continue
        w = _mem_width(st)
        for t, e in enumerate(envs):
            a = f(e)
            if a is None:
                unresolved.append(acc)
                break
            mine = ~(1 << (t // 32))
            for byte in range(a + addr.offset, a + addr.offset + w):
                if 0 <= byte < size and owner[byte] & mine:
                    return "overlap", (acc, t, owner_t[byte], byte)
    if unresolved:
        a = unresolved[0]
        return "unknown", (f"{len(unresolved)} access(es) with an address rrsplice cannot "
                           f"compute per thread, e.g. {a.sid} (line {a.line}) "
                           f"`{_short(a.text, 60)}`")
    return "clear", None


def def_use_defs(st: Statement) -> tuple:
    from ..analysis.semantics import def_use
    return tuple(def_use(st).defs)


def _check_scratch_race(rep: Report, fn: Function, rng: StatementRange, sp: SpliceText,
                        sym: str, decl, loads: list, per_thread: bool,
                        threads: int | None) -> None:
    from ..analysis.provenance import symbol_uses
    from ..analysis.semantics import is_block_barrier
    if not loads or (threads is not None and threads <= 32):
        return
    fa = _analyze(rep, fn)
    uses = symbol_uses(fa, sym)
    accesses = [a for a in uses.accesses if a.kind != "address"]
    facts = rep.facts.scratch_for(sym)
    if not accesses:
        facts.race = "none: the kernel does not use the array"
        return
    last_read = max(sp.statements.index(st) for st in loads)
    barrier = next((st for st in sp.statements[last_read + 1:] if is_block_barrier(st)), None)
    if barrier is not None:
        facts.race = "guarded: " + barrier.text.strip()
        rep.add("info", "scratch-race", f"`{barrier.text.strip()}` after the scratch reads "
                f"keeps the warps apart in {sym} (the native body must execute a block "
                "barrier before it stores its returns; `rrsplice outline` mirrors this one)")
        return
    inside = [a for a in accesses if rng.first <= a.index <= rng.last]
    after = [a for a in accesses if a.index > rng.last]
    before = [a for a in accesses if a.index < rng.first]
    where = ", ".join(f"{n} {w}" for n, w in ((len(before), "before the region"),
                                              (len(inside), "inside it"),
                                              (len(after), "after it")) if n)
    who = f"{fn.name} may run " + (f"{threads} threads" if threads else "more than one warp") \
        + " per block"
    fix = ("add `bar.sync 0;` after the scratch reads (the native body must then execute a "
           "block barrier, `bar.sync 0` / `__syncthreads()`, before it stores its returns; "
           "`rrsplice outline` mirrors the barrier there), or return through `.param` "
           "(`rrsplice recipe new --abi param`)")
    if not per_thread:
        facts.race = "per-lane slots, no barrier"
        rep.add("warning", "scratch-race", f"{who} and uses {sym} itself ({where} "
                f"accesses); the return slots are per lane, so every warp's body stores to "
                f"the same 32 slots and the call text has no block barrier after its reads: "
                f"whether warps clobber each other's returns depends on what the native body "
                f"does, which rrsplice cannot see. Warning, not error: this is the seed "
                f"recipe's convention, which the users' build applies today. To make it safe: "
                f"index the slots by the thread's linear index and {fix}", line=decl.line)
        return
    shapes = _block_shapes(fn)
    size = decl.byte_size
    results = []
    if shapes and size:
        for shape in shapes:
            results.append((shape, *_scratch_overlap(fa, fn, sp, sym, size, loads, accesses,
                                                     shape)))
    over = [r for r in results if r[1] == "overlap"]
    base_msg = (f"{who}, the return slots in {sym} are per thread, the kernel also uses the "
                f"array ({where} accesses), and the call text has no block barrier after its "
                f"scratch reads")
    if over:
        shape, _, (acc, t, owner, byte) = over[0]
        kind = {"read": "reads", "write": "writes", "atomic": "updates"}.get(acc.kind, "uses")
        side = ("before the region" if acc.index < rng.first else
                "inside the region" if acc.index <= rng.last else "after the region")
        shp = "x".join(str(n) for n in shape)
        wit = (f"with a {shp} block, {acc.sid} (line {acc.line}, {side}) `{_short(acc.text, 60)}` "
               f"of thread {t} (warp {t // 32}) {kind} byte {byte}, which is in the return slot "
               f"of thread {owner} (warp {owner // 32})")
        facts.race = f"overlap ({shp})"
        if len(over) == len(results):
            rep.add("error", "scratch-race", f"{base_msg}: the slots overlap what other warps "
                    f"access in the array, so one warp's body can overwrite bytes another warp "
                    f"still uses, and another warp's code can overwrite a slot before its "
                    f"owner has read it back ({wit}); {fix}", st=fn.statements[acc.index - 1])
            return
        clear = ", ".join("x".join(map(str, r[0])) for r in results if r[1] != "overlap")
        rep.add("warning", "scratch-race", f"{base_msg}: {wit}; not for every block shape the "
                f"entry allows ({clear}: no overlap proven); {fix}",
                st=fn.statements[acc.index - 1])
        return
    if results and all(r[1] == "clear" for r in results):
        facts.race = "slots disjoint from every other access"
        rep.add("info", "scratch-race", f"{sym}: no warp's accesses touch another warp's "
                f"return slots (block shapes " + ", ".join("x".join(map(str, r[0]))
                                                          for r in results) + ")")
        return
    why = next((r[2] for r in results if r[1] == "unknown"), None) or (
        "the entry declares no .maxntid/.reqntid" if not shapes else
        f"the size of {sym} is not known")
    facts.race = "unknown"
    rep.add("warning", "scratch-race", f"{base_msg}; rrsplice cannot prove whether the slots "
            f"overlap other warps' accesses ({why}); {fix}", line=decl.line)


def _check_shared_base(rep: Report, fn: Function, rng: StatementRange,
                       sp: SpliceText) -> None:
    """A region that names a .shared array needs its address passed: the body is a separate
    .func, which cannot name the entry's (or the kernel module's) array."""
    from ..analysis.semantics import def_use
    shared = {d.name for d in fn.decls() if d.space == ".shared"}
    shared |= {d.name for d in rep.target.module.decls if d.space == ".shared"}
    if not shared:
        return
    named: dict = {}
    for i in range(rng.first, rng.last + 1):
        st = fn.statements[i - 1]
        if st.is_label:
            continue
        for op in st.operands:
            name = op.name if isinstance(op, Symbol) else (
                op.base.name if isinstance(op, Address) and isinstance(op.base, Symbol)
                else None)
            if name in shared and name not in named:
                named[name] = st
    if not named:
        return
    # passed: `mov.u32 %x, SYM` in the call text before the call, %x stored to a .param
    calls = sp.calls
    first_call = sp.statements.index(calls[0]) if calls else len(sp.statements)
    pre = sp.statements[:first_call]
    stored: set[str] = set()
    for st in pre:
        if st.base == "st" and "param" in st.modifiers:
            stored.update(def_use(st).uses)
    passed = set()
    for st in pre:
        if st.base == "mov" and len(st.operands) == 2 and isinstance(st.operands[1], Symbol) \
                and isinstance(st.operands[0], Reg) and st.operands[0].key in stored:
            passed.add(st.operands[1].name)
    for sym, st in sorted(named.items()):
        if sym in passed:
            continue
        rep.add("error", "shared-base", f"{st.sid} (line {st.line}) inside the region names the "
                f".shared array {sym} (`{_short(st.text, 60)}`), but the call does not pass "
                f"its address: the body, a separate .func, cannot name the entry's array; pass "
                f"it (`mov.u32 %r, {_short(sym, 40)};` then a `.param .b32` argument)", st=st)
