#!/usr/bin/env python3
"""Build the GPU check of the fragment maps, on a machine without a GPU.

Two parts, both compared **byte for byte** on the GPU by `scripts/gpu_frag_check.py`:

1. **The layout table against the hardware.** For every `mma.sync` shape and type the table
   (rrsplice.fragments.layout) covers and ptxas accepts for sm_90, a one-mma kernel (PTX written
   here) loads each lane's A, B and C registers from a buffer and stores its D registers.
   The buffer is made here by placing random small-integer matrices A, B, C through the
   table; the expected D registers are A @ B + C (exact in every type used), placed through
   the table's D layout. A wrong table entry changes D. Negative control: the same kernel
   with one A entry of the table swapped while placing.
2. **The per-phase maps of every real-compiler fixture** (`swin_{tiny,small,big}_sm89.ptx`,
   assembled for sm_90). After each phase's last mma a debug stage (rrsplice's built-in
   block) stores every A, bias-seed (C) and D register of that phase to a buffer. The
   inputs are chosen so the expected values follow from the kernel's own inputs:
   - the plane arena holds f16 values that are exact e4m3 numbers and the textures and
     guide plane make the prologue's scales exactly 1, so phase 1's A bytes are the arena's
     e4m3 codes: expected A[16*mt + r][32*ks + c] comes from the fixture's layout
     (`a[(mt*KS + ks)*4 + j]` = lane slice halves 4*that..+3, launch.json / swin_common.cuh)
     and the ISA placement;
   - every phase's B (written into the weight image through the map's weight bytes) is a
     selection matrix: B[k][n] = 1 exactly when k = sel(n), so D[r][n] = RN_f16(A[r][sel(n)]
     + C[r][n]) exactly, whatever the epilogues did to A;
   - bias seeds are nonzero small integers (two distinct halves), so expected C[r][8nt + c]
     is half (c % 2) of the seed at the generator's offset (`fragment_truth`).
   The check places the dumped registers through the map (A, C, D of each phase, every
   warp) and compares bytes: phase 1's A with the arena, every phase's C with the weight
   image, every phase's D with RN_f16(A[r][sel(n)] + C[r][n]). Negative controls: phase 1's
   map with two A registers' entries swapped, and one C register's two halves swapped.

    python3 scripts/gpu_frag_prepare.py [--out build/gpufrag] [--fixtures tiny small big]

Writes OUT/manifest.json, cubins and the arena/weight images; copy OUT and
scripts/gpu_frag_check.py + scripts/gpu_diff.py to the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import struct
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrsplice.analysis.mma import phases  # noqa: E402
from rrsplice.check.debug import builtin_debug_block  # noqa: E402
from rrsplice.fragments.fragmap import phase_maps  # noqa: E402
from rrsplice.fragments.layout import layout  # noqa: E402
from rrsplice.infra import cache  # noqa: E402
from rrsplice.infra.tools import ptxas  # noqa: E402
from rrsplice.ptx.select import select_function  # noqa: E402

ARCH = "sm_90"
PLANE_BYTES = 32 * 4 * 16          # plane_out of a 32x4 launch; the dump follows it


# ---------------------------------------------------------------- element codes

def e4m3_value(code: int) -> float:
    s = -1.0 if code & 0x80 else 1.0
    e, m = (code >> 3) & 0xF, code & 7
    if e == 0xF and m == 7:
        return float("nan")
    return s * (m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))


E4M3 = {e4m3_value(c): c for c in range(256) if c not in (0x7F, 0xFF, 0x80)}


def f16_bits(v: float) -> int:
    return struct.unpack("<H", struct.pack("<e", v))[0]


def f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


ENCODE = {   # type -> (bits, value -> code)
    "e4m3": (8, lambda v: E4M3[float(v)]),
    "e5m2": (8, lambda v: f16_bits(v) >> 8),
    "s8": (8, lambda v: v & 0xFF), "u8": (8, lambda v: v & 0xFF),
    "f16": (16, f16_bits), "bf16": (16, lambda v: f32_bits(v) >> 16),
    "tf32": (32, f32_bits), "f32": (32, f32_bits), "s32": (32, lambda v: v & 0xFFFFFFFF),
}
RANGE = {"e4m3": (-3, 3), "e5m2": (-3, 3), "s8": (-4, 4), "u8": (0, 6), "f16": (-3, 3),
         "bf16": (-3, 3), "tf32": (-3, 3), "f32": (-8, 8), "s32": (-8, 8)}


# ---------------------------------------------------------------- part 1: the table

LAYOUT_TESTS = [  # shape, A/B layouts, d, a, b, c
    ("m16n8k32", "row", "col", "f32", "e4m3", "e4m3", "f32"),
    ("m16n8k32", "row", "col", "f16", "e5m2", "e5m2", "f16"),
    ("m16n8k32", "row", "col", "f32", "e5m2", "e4m3", "f32"),
    ("m16n8k32", "row", "col", "s32", "s8", "s8", "s32"),
    ("m16n8k32", "row", "col", "s32", "u8", "u8", "s32"),
    ("m16n8k16", "row", "col", "f32", "f16", "f16", "f32"),
    ("m16n8k16", "row", "col", "f16", "f16", "f16", "f16"),
    ("m16n8k16", "row", "col", "f32", "bf16", "bf16", "f32"),
    ("m16n8k16", "row", "col", "s32", "s8", "s8", "s32"),
    ("m16n8k8", "row", "col", "f32", "tf32", "tf32", "f32"),
    ("m16n8k8", "row", "col", "f32", "f16", "f16", "f32"),
    ("m8n8k16", "row", "col", "s32", "s8", "s8", "s32"),
    ("m8n8k4", "row", "col", "f32", "f16", "f16", "f32"),
    ("m8n8k4", "col", "row", "f16", "f16", "f16", "f16"),
]


def _words(lay, values: dict, dtype: str, swap=None) -> list:
    """Per lane, the lay.regs register words holding `values[(instance, row, col)]`; `swap`
    exchanges the matrix positions of two (lane, reg, elem) slots (the negative control)."""
    bits, enc = ENCODE[dtype]
    pos = {(s.lane, s.reg, s.elem): (s.instance, s.row, s.col) for s in lay.slots}
    if swap:
        a, b = swap
        pos[a], pos[b] = pos[b], pos[a]
    out = []
    for lane in range(32):
        for reg in range(lay.regs):
            w = 0
            for e in range(lay.per_reg):
                w |= enc(values[pos[(lane, reg, e)]]) << (e * bits)
            out.append(w & 0xFFFFFFFF)
    return out


def _mma_ptx(name, shape, la, lb, d, a, b, c, nA, nB, nC, nD) -> str:
    nin = nA + nB + nC
    regs = [f"%r{i}" for i in range(nin)]
    out_regs = [f"%r{nin + i}" for i in range(nD)]
    ptx = [".version 9.0", f".target {ARCH}", ".address_size 64", "",
           f".visible .entry {name}(.param .u64 pin, .param .u64 pout)", "{",
           f".reg .b32 %r<{nin + nD + 2}>;", ".reg .f32 %f<40>;", ".reg .b64 %rd<8>;",
           "ld.param.u64 %rd1, [pin];", "ld.param.u64 %rd2, [pout];",
           "cvta.to.global.u64 %rd1, %rd1;", "cvta.to.global.u64 %rd2, %rd2;",
           f"mov.u32 %r{nin + nD}, %tid.x;",
           f"mul.wide.u32 %rd3, %r{nin + nD}, {4 * nin};", "add.s64 %rd3, %rd1, %rd3;",
           f"mul.wide.u32 %rd4, %r{nin + nD}, {4 * nD};", "add.s64 %rd4, %rd2, %rd4;"]
    ptx += [f"ld.global.u32 {r}, [%rd3+{4 * i}];" for i, r in enumerate(regs)]
    A, B, C = regs[:nA], regs[nA:nA + nB], regs[nA + nB:]
    if c == "f32":
        ptx += [f"mov.b32 %f{i}, {r};" for i, r in enumerate(C)]
        C = [f"%f{i}" for i in range(nC)]
    D = out_regs
    if d == "f32":
        D = [f"%f{20 + i}" for i in range(nD)]
    ptx.append(f"mma.sync.aligned.{shape}.{la}.{lb}.{d}.{a}.{b}.{c} "
               f"{{{', '.join(D)}}}, {{{', '.join(A)}}}, {{{', '.join(B)}}}, "
               f"{{{', '.join(C)}}};")
    if d == "f32":
        ptx += [f"mov.b32 {r}, {f};" for r, f in zip(out_regs, D, strict=False)]
    ptx += [f"st.global.u32 [%rd4+{4 * i}], {r};" for i, r in enumerate(out_regs)]
    ptx += ["ret;", "}", ""]
    return "\n".join(ptx)


def layout_tests(out: Path, rng: random.Random) -> list:
    tests = []
    for shape, la, lb, d, a, b, c in LAYOUT_TESTS:
        LA, LB = layout(shape, "A", a, la), layout(shape, "B", b, lb)
        LC, LD = layout(shape, "C", c, operand_type=a), layout(shape, "D", d, operand_type=a)
        q = LA.instances
        m_, k_, n_ = LA.rows, LA.cols, LB.cols
        lo, hi = RANGE[a]
        A = {(i, r, k): rng.randint(lo, hi) for i in range(q) for r in range(m_) for k in range(k_)}
        lo, hi = RANGE[b]
        B = {(i, k, n): rng.randint(lo, hi) for i in range(q) for k in range(k_) for n in range(n_)}
        C = {(i, r, n): rng.randint(-8, 8) for i in range(q) for r in range(m_) for n in range(n_)}
        D = {(i, r, n): C[(i, r, n)] + sum(A[(i, r, k)] * B[(i, k, n)] for k in range(k_))
             for i in range(q) for r in range(m_) for n in range(n_)}
        name = f"t_{shape}_{la}_{lb}_{d}_{a}_{b}_{c}"
        ptx = out / f"{name}.ptx"
        ptx.write_text(_mma_ptx(name, shape, la, lb, d, a, b, c, LA.regs, LB.regs, LC.regs,
                                LD.regs))
        cub = out / f"{name}.cubin"
        res = ptxas(ptx, ARCH, out=cub, relocatable=False, optimize=True, verbose=False)
        entry = {"name": name, "shape": shape, "types": f"{d}.{a}.{b}.{c}",
                 "layouts": f"{la}.{lb}", "sections": sorted({LA.section, LC.section}),
                 "regs": [LA.regs, LB.regs, LC.regs, LD.regs]}
        if not res.ok:
            entry["skipped"] = "ptxas: " + res.log.strip().splitlines()[-1][:200]
            tests.append(entry)
            print(f"layout {name}: skipped ({entry['skipped']})", flush=True)
            continue
        words = []
        wa, wb, wc = _words(LA, A, a), _words(LB, B, b), _words(LC, C, c)
        for lane in range(32):
            words += wa[lane * LA.regs:(lane + 1) * LA.regs]
            words += wb[lane * LB.regs:(lane + 1) * LB.regs]
            words += wc[lane * LC.regs:(lane + 1) * LC.regs]
        # negative control: two A slots holding different values swap places
        s0 = LA.slots[0]
        s1 = next(s for s in LA.slots
                  if A[(s.instance, s.row, s.col)] != A[(s0.instance, s0.row, s0.col)])
        wa2 = _words(LA, A, a, swap=((s0.lane, s0.reg, s0.elem), (s1.lane, s1.reg, s1.elem)))
        control = []
        for lane in range(32):
            control += wa2[lane * LA.regs:(lane + 1) * LA.regs]
            control += wb[lane * LB.regs:(lane + 1) * LB.regs]
            control += wc[lane * LC.regs:(lane + 1) * LC.regs]
        entry.update(cubin=cub.name, words_in=words, words_control=control,
                     expected_out=_words(LD, D, d), n_in=LA.regs + LB.regs + LC.regs,
                     n_out=LD.regs, swapped=[[s0.lane, s0.reg, s0.elem],
                                             [s1.lane, s1.reg, s1.elem]])
        tests.append(entry)
        ptx.unlink()
        print(f"layout {name}: {LA.regs}+{LB.regs}+{LC.regs} -> {LD.regs} registers",
              flush=True)
    return tests


# ---------------------------------------------------------------- part 2: fixtures

def _dump_block(fn, regs: list, base: int, stage: str) -> str:
    mod = SimpleNamespace(DEBUG_PARAM_OFFSET=16, DEBUG_BASE=base)
    rec = SimpleNamespace(module=mod, path=Path(stage))
    return builtin_debug_block(rec, fn, regs, stage)


def _elements(frags: list, slot_of: dict) -> list:
    return [[slot_of[f.reg], lane, e, row, col]
            for f in frags for lane, e, row, col, _w in f.elements()]


def fixture(fx: str, out: Path, rng: random.Random) -> dict:
    t0 = time.perf_counter()
    ptx = ROOT / "corpus_fixtures" / f"swin_{fx}_sm89.ptx"
    truth = json.loads((ROOT / "corpus_fixtures" / f"swin_{fx}.launch.json").read_text())
    m = cache.load_module(ptx)
    fn, _ = select_function(m, None)
    fa = cache.load_analysis(m, fn)
    ps = phases(fn, fa)
    maps = phase_maps(fn, fa, ps)
    lines = m.data.decode().split("\n")
    stages, inserts, base = [], [], PLANE_BYTES
    wbytes = truth["weight_layout"][-1]["bias_offset"] + truth["weight_layout"][-1]["bias_bytes"]
    image = bytearray(wbytes)
    for pm, ft in zip(maps, truth["fragment_truth"], strict=False):
        p = pm.phase
        regs, slot_of = [], {}
        for f in pm.a + pm.c + pm.d:
            if f.reg not in slot_of:
                slot_of[f.reg] = len(regs)
                regs.append(f.reg)
        # the dump point is after the phase's last mma: every register must still hold the
        # value its mma read (A, C) or wrote (D) -- true when no definition intervenes
        stale = [f.reg for f in pm.a + pm.c
                 if fa.reaching_defs(p.last + 1, f.reg) != fa.reaching_defs(f.mma, f.reg)]
        stale += [f.reg for f in pm.d if fa.reaching_defs(p.last + 1, f.reg) != [f.mma]]
        if stale:
            raise SystemExit(f"{fx} phase {p.index}: redefined before the dump: {stale[:4]}")
        K, N = p.k, p.n
        sel = [(n * 5 + p.index) % K for n in range(N)]
        # B: the selection matrix, written through the map's weight bytes (every warp)
        for f in pm.b:
            for _lane, _e, row, col, wb in f.elements():
                for z in range(4):
                    image[wb + z * f.source.addr.coef("%tid.z")] = \
                        0x38 if sel[col] == row else 0x00
        # bias seeds: distinct nonzero small integers per half, per warp
        seeds = {}
        for f in pm.c:
            off0 = f.source.offset(0)
            if off0 in seeds:
                continue
            for z in range(4):
                lo = rng.choice([v for v in range(-8, 9) if v])
                hi = rng.choice([v for v in range(-8, 9) if v and v != lo])
                struct.pack_into("<HH", image, off0 + z * f.source.addr.coef("%tid.z"),
                                 f16_bits(lo), f16_bits(hi))
            seeds[off0] = True
        block = _dump_block(fn, regs, base, f"p{p.index}")
        inserts.append((p.last_line, block))
        stages.append({"phase": p.index, "geometry": p.geometry, "M": p.m, "N": N, "K": K,
                       "base": base, "regs": regs, "sel": sel,
                       "A": _elements(pm.a, slot_of), "C": _elements(pm.c, slot_of),
                       "D": _elements(pm.d, slot_of),
                       "bias_offsets": ft["bias_seed_offset_by_ntile"],
                       "bias_warp_stride": ft["bias_warp_stride"],
                       "a_regs": len(pm.a), "c_regs": len(pm.c), "d_regs": len(pm.d)})
        base += 128 * 4 * len(regs)
    for line, block in sorted(inserts, reverse=True):
        lines[line:line] = block.split("\n")
    dptx = out / f"{fx}_dump.ptx"
    dptx.write_text("\n".join(lines))
    cub = out / f"{fx}_dump.cubin"
    res = ptxas(dptx, ARCH, out=cub, relocatable=False, optimize=True, verbose=False)
    if not res.ok:
        raise SystemExit(res.log[-3000:])
    dptx.unlink()
    # the arena: lane slices of 2*A0 f16 halves, each an exact e4m3 value (never -0 or NaN)
    p1 = truth["phases"][0]
    a0 = p1["m_tiles"] * p1["k_slices"] * 4
    arena_bytes = (4 * 32 - 1) * a0 * 4 + (a0 // 2) * 16
    codes = [c for c in range(256) if c not in (0x7F, 0xFF, 0x80, 0x00)]
    halves = [rng.choice(codes) for _ in range(arena_bytes // 2)]
    arena = b"".join(struct.pack("<H", f16_bits(e4m3_value(c))) for c in halves)
    # expected phase-1 A per warp: a[(mt*KS + ks)*4 + j] byte e = code of half 4*that + e
    LA = maps[0].layouts["A"]
    ks_n = p1["k_slices"]
    a1 = []
    for z in range(4):
        mat = [[None] * p1["k"] for _ in range(p1["m"])]
        for lane in range(32):
            sl = (z * 32 + lane) * a0 * 2
            for mt in range(p1["m_tiles"]):
                for ks in range(ks_n):
                    for j in range(4):
                        r = (mt * ks_n + ks) * 4 + j
                        for e in range(4):
                            row, col = LA.coord(lane, j, e)
                            mat[16 * mt + row][32 * ks + col] = halves[sl + 4 * r + e]
        a1.append(bytes(v for row in mat for v in row).hex())
    (out / f"{fx}_arena.bin").write_bytes(arena)
    (out / f"{fx}_weights.bin").write_bytes(bytes(image))
    desc = truth
    for f in desc["param_block"]["fields"]:
        if f["name"] == "arena":
            f.update(bytes=len(arena), fill=f"file:{fx}_arena.bin")
        elif f["name"] == "weights":
            f.update(bytes=len(image), fill=f"file:{fx}_weights.bin")
        elif f["name"] == "plane_in":
            f.update(bytes=32 * 4 * 16, fill="f32_one")
        elif f["name"] == "plane_out":
            f.update(bytes=base, fill="zero")
        elif f["name"] == "tex_guide":
            f.update(width=32, height=4, fill="guide_1002")
        elif f["kind"] in ("texture", "surface"):
            f.update(width=32, height=4, fill="zero")
        elif f["name"] in ("width", "height"):
            f["value"] = 32 if f["name"] == "width" else 4
    desc["grid"] = [1, 1, 1]
    print(f"{fx}: {len(stages)} phases, {sum(len(s['regs']) for s in stages)} registers "
          f"dumped, {time.perf_counter() - t0:.1f}s", flush=True)
    return {"fixture": fx, "kernel": truth["kernel"], "cubin": cub.name, "launch": desc,
            "a0": a0, "phase1_expected_A": a1, "stages": stages,
            "dump_bytes": base - PLANE_BYTES}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "gpufrag"))
    ap.add_argument("--fixtures", nargs="+", default=["tiny", "small", "big"])
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    rng = random.Random(args.seed)
    man = {"arch": ARCH, "seed": args.seed, "plane_bytes": PLANE_BYTES,
           "layout_tests": layout_tests(out, rng),
           "fixtures": [fixture(fx, out, rng) for fx in args.fixtures]}
    (out / "manifest.json").write_text(json.dumps(man))
    total = sum(f.stat().st_size for f in out.iterdir())
    print(f"wrote {out}/manifest.json; {total / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
