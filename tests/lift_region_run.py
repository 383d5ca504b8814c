"""Any straight-line recipe's whole region, lifted and run on the warp harness
(tests/warp_harness, the body's `lift` branch), against the same region on the lock-step
warp interpreter (tests/lift_warp_interp.py), from the same inputs: warp 0 of block 0 of
the kernel's launch description.

Memory is laid out the way the GPU harness builds it (scripts/gpu_diff.py's fills), in
the harness's global arena: the kernel's parameter block first (its generic address is
what `cvta.param` gives), then every buffer of the launch description filled by its
`fill`. The kernel's own prologue statements that compute the values the call passes, and
its stores to `.shared` (what the region may read there), are run on the interpreter
(their backward slice, in lock step; texture fetches give random texels in [0, 1)); the
rest of the passed values are random words whose bytes are neither e4m3 NaNs nor the high
byte of an f16 infinity. `.shared` is the harness's arena: a symbol's window address is
its host address, and the interpreter's generic windows are the two arenas.

The body is probed before it returns: every lifted `.b32`, `.f32` and `.b16` register of
every lane is stored to .shared, and each is compared with the interpreter's value.
"""

from __future__ import annotations

import json
import random
import re
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from conftest import ROOT
from lift_warp_interp import _COLLECTIVE, _lane, run_warp
from ptx_interp import ByteMemory, Machine

sys.path.insert(0, str(Path(__file__).resolve().parent / "warp_harness"))
from warp_harness import GLOBAL_ADDR, SHARED_ADDR, Body, build

from rrsplice import parse
from rrsplice.lift import lift_region
from rrsplice.workflow.recipe import load_recipe, resolve_module

SHARED_BASE = SHARED_ADDR + 0x100      # the first .shared symbol's window address
PROBE = SHARED_ADDR + 0x40000          # probe k of lane l at PROBE + (k * 32 + l) * 4
BASE = GLOBAL_ADDR                     # the parameter block, then the buffers
ALIGN = 256
STACK = 16 << 20                       # a whole-region body at -O0 keeps every local


@dataclass
class Outcome:
    names: list            # the probed registers, without '%'
    checked: int           # (register, lane) values compared
    bad: list              # (register, lane, host, interpreter) that differ
    lanes: list            # the interpreter's machines, lane by lane
    smem: bytes            # the host's .shared arena after the run
    region: tuple
    statements: int        # statements in the region


def probe_all(names: list):
    """A body transform: before the body returns, every lifted register of every lane
    stored to .shared at PROBE + (k * 32 + lane) * 4 (k: its index in `names`)."""
    def transform(text: str) -> str:
        names[:] = sorted(set(re.findall(r"\bv_((?:r|f|rs)\d+)\b", text)))
        i = text.rindex("\n    return")
        ty = {"f": "float", "rs": "rr_u16"}
        probes = [f"    RR_ST(SHARED, {ty.get(re.match(r'[a-z]+', r).group(), 'rr_u32')}, "
                  f"{PROBE:#x}u + ({k}u * 32u + rr_sreg_laneid()) * 4u, v_{r});"
                  for k, r in enumerate(names)]
        return text[:i] + "\n" + "\n".join(probes) + text[i:]
    return transform


def _fill(rng, kind: str, nbytes: int) -> np.ndarray:
    sys.path.insert(0, str(ROOT / "scripts"))
    from gpu_diff import fill
    return fill(rng, kind, nbytes)


def _fields(launch: dict, fn) -> tuple:
    """(parameter block bytes, [(param symbol, offset in the block)], fields with offsets):
    one by-value block (`param_block`), or one 8-byte value per kernel parameter
    (`params`, in the kernel's order)."""
    if "param_block" in launch:
        pb = launch["param_block"]
        return pb["size"], [(fn.params[0].name, 0)], pb["fields"]
    fields = [dict(f, offset=8 * i) for i, f in enumerate(launch["params"])]
    return 8 * len(fields), [(p.name, 8 * i) for i, p in enumerate(fn.params)], fields


def _memory(launch: dict, fn, seed: int) -> tuple:
    """(global arena bytes from BASE, {param symbol: its address}): the parameter block,
    then the launch's buffers one after another, each filled by its `fill`."""
    rng = np.random.default_rng(seed)
    size, syms, fields = _fields(launch, fn)
    block = bytearray(-(-size // ALIGN) * ALIGN)
    chunks, off = [], len(block)
    for f in fields:
        kind, at = f["kind"], f["offset"]
        if kind == "buffer":
            n = -(-f["bytes"] // ALIGN) * ALIGN
            data = np.zeros(n, np.uint8)
            data[:f["bytes"]] = _fill(rng, f.get("fill", "zero"), f["bytes"])
            chunks.append(data)
            block[at:at + 8] = struct.pack("<Q", BASE + off)
            off += n
        elif kind in ("texture", "surface"):
            block[at:at + 8] = bytes(8)
        elif kind == "f32":
            block[at:at + 4] = struct.pack("<f", f["value"])
        elif kind in ("i32", "u32"):
            block[at:at + 4] = struct.pack("<I", int(f["value"]) & 0xFFFFFFFF)
        elif kind == "u64":
            block[at:at + 8] = struct.pack("<Q", int(f["value"]))
        else:
            raise ValueError(f"unknown field kind {kind!r}")
    data = np.concatenate([np.frombuffer(bytes(block), np.uint8)] + chunks
                          + [np.zeros(ALIGN, np.uint8)])
    return data.tobytes(), {name: BASE + at for name, at in syms}


def _machine(lane, launch, params, memory, shared, shared_syms) -> Machine:
    m = Machine()
    bx, by, bz = launch["block"]
    gx, gy, gz = launch["grid"]
    m.special = {"%tid.x": lane, "%tid.y": 0, "%tid.z": 0, "%ntid.x": bx, "%ntid.y": by,
                 "%ntid.z": bz, "%laneid": lane, "%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0,
                 "%nctaid.x": gx, "%nctaid.y": gy, "%nctaid.z": gz, "%warpid": 0}
    for sym, addr in shared_syms.items():
        m.symbols[sym] = ("shared", addr)
    for sym, addr in params.items():       # the parameter block lies in global memory
        m.symbols[sym] = ("global", addr)
    m.mem["global"] = memory
    m.mem["shared"] = shared
    m.windows = {"shared": (SHARED_ADDR, len(shared.data)),
                 "global": (GLOBAL_ADDR, len(memory.data))}
    return m


def prologue_slice(fn, first: int, regs: list, stores: bool = False) -> list:
    """The statements before the region that compute `regs` (their backward slice, in
    program order; the prologue is straight-line code), with `stores` also every store to
    .shared and what it needs. Texture fetches are left out: what they define is given
    random values."""
    from rrsplice.analysis.semantics import def_use
    before = fn.statements[:first - 1]
    assert not any(st.base in ("bra", "brx") for st in before)
    du = {st.index: def_use(st) for st in before}

    def last_def(reg, at):
        return next((j for j in range(at - 1, 0, -1) if reg in du[j].defs), None)
    chosen: set = set()
    work = [(r, first) for r in regs]
    if stores:
        for st in before:
            if st.base == "st" and "shared" in {x.split("::")[0] for x in st.modifiers}:
                chosen.add(st.index)
                work += [(u, st.index) for u in du[st.index].uses]
    while work:
        reg, at = work.pop()
        i = last_def(reg, at)
        if i is None or i in chosen or fn.statements[i - 1].base == "tex":
            continue
        chosen.add(i)
        work += [(u, i) for u in du[i].uses]
    return [fn.statements[i - 1] for i in sorted(chosen)]


def _safe_word(rng) -> int:
    def byte():
        while True:
            b = rng.randrange(256)
            if (b & 0x7F) < 0x7C:
                return b
    return int.from_bytes(bytes(byte() for _ in range(4)), "little")


def _shared_symbols(module, rec, launch) -> dict:
    """A window address for every .shared array of the module (an extern one gets the
    launch's dynamic shared bytes) and the recipe's scratch: consecutive 256-byte aligned
    windows from SHARED_BASE, below PROBE."""
    out, at = {}, SHARED_BASE
    size = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "f16": 2, "b32": 4, "u32": 4,
            "f32": 4, "s32": 4, "b64": 8, "u64": 8, "f64": 8}
    for m in re.finditer(r"\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$]+)\[(\d*)\]",
                         module.text):
        n = int(m.group(3)) if m.group(3) else launch.get("dynamic_shared_bytes", 0)
        out[m.group(2)] = at
        at += -(-size[m.group(1)] * max(n, 1) // ALIGN) * ALIGN
    scratch = rec.const("SCRATCH")
    if scratch and scratch not in out:
        out[scratch] = at
        at += 1 << 14
    assert at <= PROBE, at
    return out


def _run_stmts(stmts, lanes) -> None:
    """Straight-line statements on every lane in lock step (collectives once per warp)."""
    for st in stmts:
        if st.is_label or st.base in ("bar", "barrier"):
            continue
        active = [m for m in lanes if st.guard is None or
                  m.pred(st.guard.reg) != st.guard.negated]
        if st.base in _COLLECTIVE:
            _COLLECTIVE[st.base](st, lanes)
            continue
        for m in active:
            _lane(st, m)


def _scratch_regs(rec) -> set:
    """The call text's registers that hold the scratch array's address (`mov.u32 R,
    SCRATCH`): the body gets the array's window address there."""
    sym = rec.const("SCRATCH")
    if not sym:
        return set()
    return set(re.findall(r"mov\.u32\s+(%[\w$]+)\s*,\s*" + re.escape(sym) + r"\s*;",
                          rec.call or ""))


def _reference(rec, fn, launch, memory, param_syms, shared_syms, params, first, last, seed,
               shared_bytes):
    """The region on the warp interpreter: (the 32 lanes after it, each lane's values
    before it, .shared before it)."""
    from rrsplice.analysis.semantics import def_use
    read = {u for st in fn.statements[first - 1:last] for u in def_use(st).uses}
    prologue = prologue_slice(fn, first, sorted(read | {r for _, r, _ in params}),
                              stores=True)
    rng = random.Random(seed)
    shared = ByteMemory(bytes(shared_bytes), SHARED_ADDR)
    lanes = []
    scratch_regs = _scratch_regs(rec)
    for lane in range(32):
        m = _machine(lane, launch, param_syms, memory, shared, shared_syms)
        for st in fn.statements[:first - 1]:      # texture fetches: random texels in [0, 1)
            if st.base == "tex":
                for r in st.operands[0].items:
                    m.regs[r.name] = struct.unpack("<I", struct.pack("<f", rng.random()))[0]
        lanes.append(m)
    _run_stmts(prologue, lanes)
    lane_live = []
    for m in lanes:
        live = dict(m.regs)                      # what the kernel's prologue computed
        for _, reg, _ty in params:
            if reg not in scratch_regs:
                live[reg] = m.regs[reg] if reg in m.regs else _safe_word(rng)
        m.regs = dict(live)
        lane_live.append(live)
    before = bytes(shared.data)
    run_warp(fn, lanes, first, last)
    return lanes, lane_live, before


_REFERENCE: dict = {}


# The WMMA builtin's host stand-in for an image-mode HIP body with WMMA phases: every lane's
# operand registers seen at once, D = A x B + C with exact float64 products and sums (not
# the hardware's rounding: a placement check; per m16n8k32 step the body rounds to f16, as
# the interpreter's mma does), the operands read in the RDNA4 layout written out here:
# A[m][k] is byte k & 7 of lane m + 16 (k >> 3)'s operand, B[k][n] likewise with n,
# accumulator v of lane l is (row v + 8 (l >> 4), column l & 15). It goes before the body
# (after rr_lift.h, whose host branch declares the lanes and the barrier it uses).
WMMA_STANDIN = r"""
#include <cstdlib>
#include "rr_lift.h"
#define RR_HOST_WAVE 1
#include "rr_mma.h"
static rr_u64 rr_sa[32], rr_sb[32];
static double rr_sbyte(rr_u64 v, int k) { return rr_e4m3_to_f64((rr_u32)(v >> (8 * (k & 7))) & 0xffu); }
rr_acc8 rr_host_wmma_fp8(rr_u64 a, rr_u64 b, rr_acc8 c, int lane)
{
    if (lane != (int)rr_sreg_laneid()) abort();
    rr_sa[lane] = a; rr_sb[lane] = b;
    rr_host_barrier();
    rr_acc8 d;
    for (int v = 0; v < 8; ++v) {
        const int m = v + 8 * (lane >> 4), n = lane & 15;
        double s = c[v];
        for (int k = 0; k < 16; ++k)
            s += rr_sbyte(rr_sa[m + 16 * (k >> 3)], k) * rr_sbyte(rr_sb[n + 16 * (k >> 3)], k);
        d[v] = s;
    }
    rr_host_barrier();
    return d;
}
"""


def run_region(tmp_path, recipe, staging: str = "registers", launch_path=None,
               edit=None, seed: int = 11, body=None, mma=None, edit_mma=None) -> Outcome:
    """Lift `recipe`'s region (or take `body`, its lift), run it on the warp harness and
    on the warp interpreter from the same inputs, and compare every probed register of
    every lane. `edit(body, header)` returns an edited (body, header) before the probes
    are added (negative controls). The interpreter's run is kept per (recipe, launch,
    seed): both staging modes and the controls compare with it.
    `mma="wmma"`: the image body's WMMA phases (the HIP body) with the WMMA builtin replaced
    by WMMA_STANDIN; the intermediate D registers they do not compute are not compared.
    `edit_mma(header)` may edit rr_mma.h (negative controls of the WMMA path)."""
    body = body or lift_region(recipe, staging, mma=mma)
    names: list = []
    text, header = edit(body.text, body.header) if edit else (body.text, body.header)
    text = probe_all(names)(text)
    if mma == "wmma":
        # the stand-in includes rr_lift.h first: a body flushing .ftz through the mode
        # register must have its macro seen there
        mode = "#  define RR_LIFT_FTZ_BY_MODE 1"
        text = ("#define RR_LIFT_FTZ_BY_MODE 1\n" if mode in text else "") + WMMA_STANDIN + text
    tmp_path = Path(tmp_path)
    (tmp_path / "body.cu").write_text(text)
    (tmp_path / "rr_lift.h").write_text(header)
    if body.mma_header:
        (tmp_path / "rr_mma.h").write_text(edit_mma(body.mma_header) if edit_mma
                                           else body.mma_header)
    rec = load_recipe(recipe)
    mpath, _ = resolve_module(rec, None)
    module = parse(mpath)
    fn = module.function(rec.entry) if rec.entry else \
        next(f for f in module.functions if f.has_body)
    launch = json.loads(Path(launch_path).read_text())
    data, param_syms = _memory(launch, fn, seed)
    shared_syms = _shared_symbols(module, rec, launch)
    bmod = parse(body.outlined_ptx, filename="body.ptx")
    bfn = next(f for f in bmod.functions if f.has_body)
    loads = {st.operands[1].base.name: st.operands[0].name for st in bfn.statements
             if st.opcode and st.opcode.startswith("ld.param")}
    params = [(p.name, loads[p.name], p.type) for p in bfn.params]
    scratch_regs = _scratch_regs(rec)
    shared_bytes = -(-(PROBE - SHARED_ADDR + 4 * 32 * (len(names) + 1)) // 4096) * 4096
    first, last = body.region
    key = (str(recipe), str(launch_path), seed, body.region)
    if key not in _REFERENCE:
        _REFERENCE[key] = _reference(rec, fn, launch, ByteMemory(data, BASE), param_syms,
                                     shared_syms, params, first, last, seed,
                                     PROBE - SHARED_ADDR)
    lanes, lane_live, before = _REFERENCE[key]
    scratch = shared_syms.get(rec.const("SCRATCH"), SHARED_BASE)
    args = [[scratch if reg in scratch_regs else lane_live[lane][reg]
             for _, reg, _ty in params] for lane in range(32)]
    with build([Body(tmp_path / "body.cu", body.callee,
                     ["u64" if t == ".b64" else "u32" for _, _, t in params], "lift")],
               tmp_path / "harness", shared_bytes=shared_bytes, global_bytes=len(data),
               stack_bytes=STACK) as h:
        assert (h.shared_base, h.global_base) == (SHARED_ADDR, GLOBAL_ADDR)
        smem, after = h.call(0, (32, 1, 1), args,
                             before + bytes(shared_bytes - len(before)), data)
    assert after == data, "the region only reads global memory"
    checked, bad = 0, []
    unset = set(body.unset)
    for k, r in enumerate(names):
        if "%" + r in unset:
            continue
        w = 2 if r.startswith("rs") else 4
        for lane, m in enumerate(lanes):
            want = m.regs.get("%" + r)
            if want is None:
                continue
            off = PROBE - SHARED_ADDR + (k * 32 + lane) * 4
            got = int.from_bytes(smem[off:off + w], "little")
            checked += 1
            if got != want:
                bad.append(("%" + r, lane, hex(got), hex(want)))
    return Outcome(names, checked, bad, lanes, smem, body.region, last - first + 1)


class host_loop_run:
    """A lifted body with a `.param` return on the warp harness, one input per call (the
    loop regions): `with host_loop_run(d, body, ctypes) as run: rets, words_after =
    run(words, args)` runs a warp whose 32 threads all get `args` (the global arena starts
    as `words` from `run.base`) and checks they return the same bytes."""

    def __init__(self, tmp_path, body, ctypes, words: int = 1024):
        tmp_path = Path(tmp_path)
        (tmp_path / "body.cu").write_text(body.text)
        (tmp_path / "rr_lift.h").write_text(body.header)
        self.words = words
        self.base = GLOBAL_ADDR
        self.h = build([Body(tmp_path / "body.cu", body.callee,
                             ["u64" if t in ("rr_u64", ".b64") else "u32" for t in ctypes],
                             "lift")], tmp_path / "harness", global_bytes=4 * words,
                       opt="-O1")

    def __enter__(self):
        self.h.__enter__()
        return self

    def __exit__(self, *exc):
        self.h.__exit__(*exc)

    def __call__(self, words: list, args: list) -> tuple:
        data = np.zeros(self.words, "<u4")
        data[:len(words)] = words
        _, after = self.h.call(0, (32, 1, 1), [list(args)] * 32, bytes(self.h.shared_bytes),
                               data.tobytes())
        rets = self.h.returns
        assert all(r == rets[0] for r in rets), "the threads of one input disagree"
        return rets[0], np.frombuffer(after, "<u4")[:len(words)].tolist()
