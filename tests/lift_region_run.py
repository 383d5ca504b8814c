"""Any straight-line recipe's whole region, lifted and run on the host, against the same
region on the lock-step warp interpreter (tests/lift_warp_interp.py), from the same inputs:
warp 0 of block 0 of the kernel's launch description.

Inputs are built the way the GPU harness builds them (scripts/gpu_diff.py's fills): every
buffer of the launch description's parameter block filled by its `fill`, laid out one
after another in one host buffer; the kernel's own prologue statements that compute the
values the call passes are run on the interpreter (their backward slice; texture fetches
give random texels in [0, 1)), and the rest of the passed values are random words whose
bytes are neither e4m3 NaNs nor the high byte of an f16 infinity.

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

import numpy as np
from conftest import ROOT
from lift_host import build, run
from lift_warp_interp import _lane, run_warp
from ptx_interp import Machine

from rrsplice import parse
from rrsplice.lift import lift_region
from rrsplice.workflow.recipe import load_recipe, resolve_module

SHARED_BASE = 0x100
PROBE = 0x40000          # probe k of lane l at PROBE + (k * 32 + l) * 4
BASE = 0x100000          # the interpreter's address of the host buffer's first byte
ALIGN = 256


@dataclass
class Outcome:
    names: list            # the probed registers, without '%'
    checked: int           # (register, lane) values compared
    bad: list              # (register, lane, host, interpreter) that differ
    lanes: list            # the interpreter's machines, lane by lane
    smem: bytes            # the host's .shared after the run
    region: tuple
    statements: int        # statements in the region


def probe_all(names: list):
    """A body transform: before the body returns, every lifted register of every lane
    stored to .shared at PROBE + (k * 32 + lane) * 4 (k: its index in `names`)."""
    def transform(text: str) -> str:
        names[:] = sorted(set(re.findall(r"\bv_((?:r|f|rs)\d+)\b", text)))
        i = text.rindex("\n    return;\n}")
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


def _memory(launch: dict, seed: int) -> tuple:
    """(host words, {param-block offset: value}, total words): the launch's buffers one
    after another from BASE, each filled by its `fill`; scalars by their value."""
    rng = np.random.default_rng(seed)
    pb = launch["param_block"]
    chunks, values, off = [], {}, 0
    for f in pb["fields"]:
        kind = f["kind"]
        if kind == "buffer":
            n = -(-f["bytes"] // ALIGN) * ALIGN
            data = np.zeros(n, np.uint8)
            data[:f["bytes"]] = _fill(rng, f.get("fill", "zero"), f["bytes"])
            chunks.append(data)
            values[f["offset"]] = (BASE + off, 8)
            off += n
        elif kind in ("texture", "surface"):
            values[f["offset"]] = (0, 8)
        elif kind == "f32":
            values[f["offset"]] = (struct.unpack("<I", struct.pack("<f", f["value"]))[0], 4)
        elif kind in ("i32", "u32"):
            values[f["offset"]] = (int(f["value"]) & 0xFFFFFFFF, 4)
        elif kind == "u64":
            values[f["offset"]] = (int(f["value"]), 8)
        else:
            raise ValueError(f"unknown field kind {kind!r}")
    data = np.concatenate(chunks + [np.zeros(ALIGN, np.uint8)])
    return data.view("<u4").tolist(), values


class _Words(dict):
    """Global memory of the interpreter: the host's words, read on demand."""

    def __init__(self, words):
        super().__init__()
        self.words = words

    def __contains__(self, key):
        return dict.__contains__(self, key) or 0 <= key - BASE < 4 * len(self.words)

    def __missing__(self, key):
        return self.words[(key - BASE) // 4]


def _machine(lane, fn, launch, values, words, shared_syms) -> Machine:
    m = Machine()
    bx, by, bz = launch["block"]
    gx, gy, gz = launch["grid"]
    m.special = {"%tid.x": lane, "%tid.y": 0, "%tid.z": 0, "%ntid.x": bx, "%ntid.y": by,
                 "%ntid.z": bz, "%laneid": lane, "%ctaid.x": 0, "%ctaid.y": 0, "%ctaid.z": 0,
                 "%nctaid.x": gx, "%nctaid.y": gy, "%nctaid.z": gz, "%warpid": 0}
    for sym, addr in shared_syms.items():
        m.symbols[sym] = ("shared", addr)
    pname = fn.params[0].name
    m.symbols[pname] = ("param", 0)
    for off, (v, _size) in values.items():
        m.mem["param"][(pname, off)] = v
    m.mem["global"] = _Words(words)
    return m


def prologue_slice(fn, first: int, regs: list) -> list:
    """The statements before the region that compute `regs` (their backward slice, in
    program order; the prologue is straight-line code). Texture fetches are left out:
    what they define is given random values."""
    from rrsplice.analysis.semantics import def_use
    before = fn.statements[:first - 1]
    assert not any(st.base in ("bra", "brx") for st in before)
    du = {st.index: def_use(st) for st in before}

    def last_def(reg, at):
        return next((j for j in range(at - 1, 0, -1) if reg in du[j].defs), None)
    chosen: set = set()
    work = [(r, first) for r in regs]
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


def _shared_symbols(module, rec) -> dict:
    """An address for every .shared array of the module and the recipe's scratch:
    consecutive 256-byte aligned windows from SHARED_BASE, below PROBE."""
    out, at = {}, SHARED_BASE
    size = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "f16": 2, "b32": 4, "u32": 4,
            "f32": 4, "s32": 4, "b64": 8, "u64": 8, "f64": 8}
    for m in re.finditer(r"\.shared\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+([\w$]+)\[(\d+)\]",
                         module.text):
        out[m.group(2)] = at
        at += -(-size[m.group(1)] * int(m.group(3)) // ALIGN) * ALIGN
    scratch = rec.const("SCRATCH")
    if scratch and scratch not in out:
        out[scratch] = at
        at += 1 << 14
    assert at <= PROBE, at
    return out


def _reference(fn, rec, launch, words, values, shared_syms, params, first, last, seed):
    """The region on the warp interpreter: (the 32 lanes after it, each lane's values
    before it)."""
    from rrsplice.analysis.semantics import def_use
    read = {u for st in fn.statements[first - 1:last] for u in def_use(st).uses}
    prologue = prologue_slice(fn, first, sorted(read | {r for _, r, _ in params}))
    rng = random.Random(seed)
    lane_live = []
    for lane in range(32):
        m = _machine(lane, fn, launch, values, words, shared_syms)
        for st in fn.statements[:first - 1]:      # texture fetches: random texels in [0, 1)
            if st.base == "tex":
                for r in st.operands[0].items:
                    m.regs[r.name] = struct.unpack("<I", struct.pack("<f", rng.random()))[0]
        for st in prologue:
            _lane(st, m)
        live = dict(m.regs)                      # what the kernel's prologue computed
        for _, reg, _ty in params:
            if not reg.startswith("%rrs"):
                live[reg] = m.regs[reg] if reg in m.regs else _safe_word(rng)
        lane_live.append(live)
    lanes = []
    block_shared = {a: 0 for a in range(SHARED_BASE, PROBE, 4)}
    for lane in range(32):
        m = _machine(lane, fn, launch, values, words, shared_syms)
        m.regs.update(lane_live[lane])
        m.mem["shared"] = block_shared          # one .shared window for the whole warp
        lanes.append(m)
    run_warp(fn, lanes, first, last)
    return lanes, lane_live


_REFERENCE: dict = {}

# The WMMA builtin's host stand-in for an image-mode HIP body with WMMA phases: every lane's
# operand registers seen at once, D = A x B + C with exact float64 products and sums (not
# the hardware's rounding: a placement check; per m16n8k32 step the body rounds to f16, as
# the interpreter's mma does), the operands read in the RDNA4 layout written out here:
# A[m][k] is byte k & 7 of lane m + 16 (k >> 3)'s operand, B[k][n] likewise with n,
# accumulator v of lane l is (row v + 8 (l >> 4), column l & 15).
WMMA_STANDIN = r"""
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
               edit=None, seed: int = 11, mma=None, edit_mma=None) -> Outcome:
    """Lift `recipe`'s region, run it on the host and on the warp interpreter from the
    same inputs, and compare every probed register of every lane. `edit(body, header)`
    returns an edited (body, header) before the probes are added (negative controls). The interpreter's run is
    kept per (recipe, launch, seed): both staging modes and the controls compare with it.
    `mma="wmma"`: the image body's WMMA phases (the HIP body) with the WMMA builtin replaced
    by WMMA_STANDIN; the intermediate D registers they do not compute are not compared.
    `edit_mma(header)` may edit rr_mma.h (negative controls of the WMMA path)."""
    body = lift_region(recipe, staging, mma=mma)
    names: list = []
    probe = probe_all(names)
    text, header = edit(body.text, body.header) if edit else (body.text, body.header)
    text = probe(text)
    if body.mma_header:
        (tmp_path / "rr_mma.h").write_text(edit_mma(body.mma_header) if edit_mma
                                           else body.mma_header)
    rec = load_recipe(recipe)
    mpath, _ = resolve_module(rec, None)
    module = parse(mpath)
    fn = module.function(rec.const("ENTRY"))
    launch = json.loads(launch_path.read_text())
    words, values = _memory(launch, seed)
    shared_syms = _shared_symbols(module, rec)
    bmod = parse(body.outlined_ptx, filename="body.ptx")
    bfn = next(f for f in bmod.functions if f.has_body)
    loads = {st.operands[1].base.name: st.operands[0].name for st in bfn.statements
             if st.opcode and st.opcode.startswith("ld.param")}
    params = [(p.name, loads[p.name], p.type) for p in bfn.params]
    shared_bytes = PROBE + 4 * 32 * (len(names) + 1)
    exe = build(tmp_path, text, header, body.callee,
                ["rr_u64" if t == ".b64" else "rr_u32" for _, _, t in params], 0, 32,
                len(words), shared=shared_bytes, opt="-O0",
                prelude=WMMA_STANDIN if mma == "wmma" else "")
    first, last = body.region
    key = (str(recipe), str(launch_path), seed, body.region)
    if key not in _REFERENCE:
        _REFERENCE[key] = _reference(fn, rec, launch, words, values, shared_syms, params,
                                     first, last, seed)
    lanes, lane_live = _REFERENCE[key]
    scratch = shared_syms.get(rec.const("SCRATCH"), SHARED_BASE)
    args = []
    for lane in range(32):
        row = []
        for _, reg, ty in params:
            if reg.startswith("%rrs"):
                row.append((scratch, False))
            elif ty == ".b64" and 0 <= lane_live[lane][reg] - BASE < 4 * len(words):
                row.append((lane_live[lane][reg] - BASE, True))     # a pointer
            else:
                row.append((lane_live[lane][reg], False))
        args.append(row)
    _, after, smem = run(exe, words, args, shared=True)
    assert after == words               # the region only reads global memory
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
            off = PROBE + (k * 32 + lane) * 4
            got = int.from_bytes(smem[off:off + w], "little")
            checked += 1
            if got != want:
                bad.append(("%" + r, lane, hex(got), hex(want)))
    return Outcome(names, checked, bad, lanes, smem, body.region, last - first + 1)
