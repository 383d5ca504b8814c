"""The region oracle for a native body: a recipe's region run by the reference PTX
interpreter, against the recipe's call text run by the same interpreter with its `call`
executed by the body on the warp harness, on the same block, inputs and shared memory.
Every register the code after the region reads back (RET_REGS) must come back bit for bit,
in every thread, and the body must not touch a shared byte outside the recipe's scratch
array.

    plan = splice_plan(recipe)                       # the region, the call text, the ABI
    with build([Body(path, plan.callee, plan.params, "hip")], tmp) as h:
        bad = run_case(plan, h, 0, (32, 1, 4), np.random.default_rng(1), "normal")
        assert not bad, bad[:5]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from block_interp import block_machines, run_block

from rrsplice.ptx.model import ParenList, Reg

_ELEM = {".b8": 1, ".u8": 1, ".s8": 1, ".b16": 2, ".u16": 2, ".s16": 2, ".f16": 2,
         ".b32": 4, ".u32": 4, ".s32": 4, ".f32": 4, ".b64": 8, ".u64": 8, ".s64": 8,
         ".f64": 8}
CLASSES = ("normal", "sparse", "raw")


@dataclass
class SplicePlan:
    recipe: object
    region: list                  # the kernel's statements the call replaces
    call_text: list               # the call text's statements
    callee: str
    params: list                  # "u32" / "u64" per .extern parameter
    inputs: dict                  # register -> width: what the call text reads
    returns: list                 # registers read back after the call
    layout: dict                  # .shared symbol -> (offset in the arena, bytes)
    scratch: str
    arena_bytes: int
    notes: list = field(default_factory=list)


def _shared_decls(*decl_lists) -> list:
    seen, out = set(), []
    for decls in decl_lists:
        for d in decls:
            if d.space == ".shared" and d.name not in seen:
                seen.add(d.name)
                n = _ELEM.get(d.type, 4)
                for x in d.dims or ():
                    n *= x if x else 1024
                out.append((d.name, max(n, 4), d.align or 16))
    return out


def splice_plan(recipe, corpus=None) -> SplicePlan:
    from rrsplice.check import check_recipe
    rep = check_recipe(recipe, corpus, target="zluda")
    rec, sp, t = rep.recipe, rep.splice, rep.target
    fn, rng = t.fn, t.rng
    region = fn.statements[rng.first - 1:rng.last]
    (callee, decl), = sp.externs.items()
    params = ["u64" if (p.byte_size or 4) == 8 else "u32" for p in decl.params]
    types = rec.const("REG_TYPES") or {}
    inputs, written = {}, set()
    for st in sp.statements:
        if st.base == "call":
            break
        for op in st.operands[1:] if st.operands else ():
            for r in op.registers() if hasattr(op, "registers") else ():
                if not r.special and r.name not in written:
                    w = {".b64": 64, ".pred": 1, ".b16": 16}.get(types.get(r.name), 32)
                    inputs.setdefault(r.name, w)
        if st.operands and isinstance(st.operands[0], Reg) and st.base != "st":
            written.add(st.operands[0].name)
    if st.guard is not None:
        inputs.setdefault(st.guard.reg.name, 1)
    layout, off = {}, 256                 # window address 0 is never a symbol's
    for name, n, align in _shared_decls(t.module.decls, fn.decls(), sp.module.decls):
        off = (off + align - 1) // align * align
        layout[name] = (off, n)
        off += n
    returns = list(rec.const("RET_REGS") or [])
    return SplicePlan(rec, region, sp.statements, callee, params, inputs, returns, layout,
                      rep.facts.scratch.symbol if rep.facts.scratch else None,
                      (off + 4095) // 4096 * 4096)


def make_inputs(plan, threads: int, rng, cls: str) -> list:
    """Per thread {register: value}. "normal": every byte an e4m3 below 2 in magnitude (and
    every half an f16 below 2); "sparse": mostly zero bytes, some +-1.0 and +-0.5; "raw":
    uniform bits (NaN, infinities, overflow)."""
    names = sorted(plan.inputs)
    n = len(names)
    if cls == "normal":
        b = rng.integers(0, 256, (threads, n, 4), dtype=np.uint64) & 0xBF
    elif cls == "sparse":
        pick = rng.random((threads, n, 4))
        vals = rng.choice(np.array([0x38, 0xB8, 0x30, 0xB0], np.uint64), (threads, n, 4))
        b = np.where(pick < 0.15, vals, 0).astype(np.uint64)
    elif cls == "raw":
        b = rng.integers(0, 256, (threads, n, 4), dtype=np.uint64)
    else:
        raise ValueError(cls)
    words = b[..., 0] | (b[..., 1] << 8) | (b[..., 2] << 16) | (b[..., 3] << 24)
    out = []
    for i in range(threads):
        regs = {}
        for j, r in enumerate(names):
            w = plan.inputs[r]
            v = int(words[i, j])
            regs[r] = v & 1 if w == 1 else (v | (int(words[i, (j + 1) % n]) << 32)
                                            if w == 64 else v)
        out.append(regs)
    return out


def _words(data: bytes, base: int) -> dict:
    a = np.frombuffer(data, dtype="<u4")
    return {base + 4 * i: int(v) for i, v in enumerate(a)}


def _bytes(words: dict, base: int, size: int) -> bytes:
    a = np.zeros(size // 4, dtype="<u4")
    for k, v in words.items():
        if base <= k < base + size and (k - base) % 4 == 0:
            a[(k - base) // 4] = v & 0xFFFFFFFF
    return a.tobytes()


def run_case(plan: SplicePlan, harness, index, block, rng, cls: str = "normal") -> list:
    """Mismatches (strings) of one case: `block` threads, inputs of class `cls`. `index` is
    the body's index in the harness, or a list of indices (bodies of the same recipe, e.g.
    its CUDA and HIP variants: the region runs once, mismatches are prefixed by index)."""
    indices = [index] if isinstance(index, int) else list(index)
    if plan.arena_bytes > harness.shared_bytes:
        raise ValueError(f"the shared arena needs {plan.arena_bytes} bytes; the harness has "
                         f"{harness.shared_bytes}")
    bx, by, bz = block
    threads = bx * by * bz
    base = harness.shared_base
    symbols = {name: ("shared", base + off) for name, (off, _n) in plan.layout.items()}
    for st in plan.call_text:
        if st.base == "call":
            for item in st.operands[-1].items if isinstance(st.operands[-1], ParenList) else ():
                symbols[item.name] = ("param", 0)
    init = rng.integers(0, 256, harness.shared_bytes, dtype=np.uint8).tobytes()
    inputs = make_inputs(plan, threads, rng, cls)
    pattern = int(rng.integers(0, 256))

    ref = block_machines(block, inputs, _words(init, base), symbols)
    run_block(plan.region, ref)
    bad = []
    for idx in indices:
        where = "" if isinstance(index, int) else f"body {idx}: "
        bad += [where + x for x in _against(plan, harness, idx, block, inputs, init, pattern,
                                            symbols, ref)]
    return bad


def _against(plan, harness, index, block, inputs, init, pattern, symbols, ref) -> list:
    base = harness.shared_base
    shared = _words(init, base)
    after = {}

    def on_call(st, machines):
        names = [x.name for x in st.operands[-1].items]
        args = np.array([[m.mem["param"][(nm, 0)] for nm in names] for m in machines],
                        dtype=np.uint64)
        out, _g = harness.call(index, block, args, _bytes(shared, base, harness.shared_bytes),
                               pattern=pattern)
        after["shared"] = out
        shared.clear()
        shared.update(_words(out, base))

    got = block_machines(block, inputs, shared, symbols)
    run_block(plan.call_text, got, on_call)
    bad = []
    for i, (r_m, g_m) in enumerate(zip(ref, got, strict=False)):
        for r in plan.returns:
            want, have = r_m.regs.get(r), g_m.regs.get(r)
            if want != have:
                bad.append(f"thread {i} (lane {i & 31} of warp {i >> 5}), {r}: region "
                           f"{want if want is None else hex(want)}, body "
                           f"{have if have is None else hex(have)}")
    out = np.frombuffer(after["shared"], np.uint8)
    ini = np.frombuffer(init, np.uint8)
    keep = np.ones(len(out), bool)
    if plan.scratch in plan.layout:
        off, n = plan.layout[plan.scratch]
        keep[off:off + n] = False
    for at in np.flatnonzero((out != ini) & keep)[:8]:
        owner = next((s for s, (o, n) in plan.layout.items() if o <= at < o + n), "no symbol")
        bad.append(f"the body wrote shared byte {int(at)} ({owner}) outside {plan.scratch}")
    return bad
