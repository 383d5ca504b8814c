#!/usr/bin/env python3
"""Build the GPU check of the fragment maps of the fragment-identity fixtures (corpus_fixtures/
frag: B reloaded per m-tile, A reloaded per n-tile, weights in a struct parameter, the
Triton-style ldmatrix / ld.shared kernel), on a machine without a GPU.

For each fixture a debug stage (rrsplice's built-in block, storing through the pointer
rrsplice.analysis.paramroles picks: the output the kernel only writes) is inserted after the last mma
and stores every A, B, C and D register of the phase. The inputs are small integers (e4m3
codes of 0, +-1, +-2; f16 bias -8..8), so every D is exact in f16: D = A @ B + bias. The
matrices come from the generator's ground truth (<stem>.truth.json: where each operand's
bytes live), not from rrsplice; rrsplice only supplies the map under test.
`scripts/gpu_fragfix_check.py` (on the GPU) then compares byte for byte:

  * the kernel's own output (the original cubin) with A @ B + bias: the truth is right
    about the hardware;
  * the dumped registers placed through rrsplice's map: A, B with the input matrices, C with
    the bias, D with A @ B + bias, and every matrix cell written at least once, all writers
    agreeing;
  * negative controls: the map with two B fragments' tiles exchanged, and the map rrsplice
    made before fragments were identified by value (register identity: on the reloaded
    fixtures it puts m-tiles 1.. in columns past N).

    python3 scripts/gpu_fragfix_prepare.py [--out build/gpufragfix] [--seed 12]

Writes OUT/manifest.json and the cubins (ptxas -arch=sm_90); copy OUT and
scripts/gpu_fragfix_check.py + scripts/gpu_diff.py to the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrsplice.analysis import fragvalue  # noqa: E402
from rrsplice.analysis.mma import phases  # noqa: E402
from rrsplice.analysis.paramroles import write_only_pointer  # noqa: E402
from rrsplice.check.debug import builtin_debug_block  # noqa: E402
from rrsplice.fragments.fragmap import phase_map  # noqa: E402
from rrsplice.infra import cache
from rrsplice.infra.tools import ptxas  # noqa: E402
from rrsplice.ptx.select import select_function  # noqa: E402

FRAG = ROOT / "corpus_fixtures" / "frag"
STEMS = ["frag_breload", "frag_areload", "frag_struct", "frag_triton"]
ARCH = "sm_90"
E4M3 = {0: 0x00, 1: 0x38, 2: 0x40, -1: 0xB8, -2: 0xC0}


def _elements(frags: list, slot_of: dict) -> list:
    return [[slot_of[f.reg], lane, e, row, col]
            for f in frags for lane, e, row, col, _w in f.elements()]


def _map_rows(pm, slot_of: dict) -> dict:
    return {"A": _elements(pm.a, slot_of), "B": _elements(pm.b, slot_of),
            "C": _elements(pm.c, slot_of), "D": _elements(pm.d, slot_of)}


def _register_identity_map(fn, fa, slot_of: dict) -> dict:
    """The map as rrsplice made it when a fragment was its register and definition."""
    def old_key(fa_, index, reg):
        return ("defs", reg, tuple(fa_.reaching_defs(index, reg)))
    with mock.patch.object(fragvalue, "value_key", old_key), \
            mock.patch("rrsplice.fragments.fragmap.value_key", old_key):
        ph = phases(fn, fa)[0]
        pm = phase_map(fn, fa, ph)
        return {"geometry": ph.geometry, **_map_rows(pm, slot_of)}


def _inputs(truth: dict, rng: random.Random) -> dict:
    M, N, K = truth["M"], truth["N"], truth["K"]
    a = [[rng.choice(list(E4M3)) for _ in range(K)] for _ in range(M)]
    b = [[rng.choice(list(E4M3)) for _ in range(N)] for _ in range(K)]
    bias = [rng.randint(-8, 8) for _ in range(N)]
    A_buf, B_buf = bytearray(M * K), bytearray(N * K)
    ta, tb = truth["operands"]["A"], truth["operands"]["B"]
    for r in range(M):
        for k in range(K):
            A_buf[r * ta["row_stride"] + k * ta["col_stride"]] = E4M3[a[r][k]]
    for k in range(K):
        for n in range(N):
            B_buf[k * tb["row_stride"] + n * tb["col_stride"]] = E4M3[b[k][n]]
    d = [[sum(a[r][k] * b[k][n] for k in range(K)) + bias[n] for n in range(N)]
         for r in range(M)]
    return {"A_values": a, "B_values": b, "bias_values": bias, "D_values": d,
            "A_hex": A_buf.hex(), "B_hex": B_buf.hex()}


def _params(truth: dict) -> dict:
    """The kernel parameters as one host buffer: `blocks` [(offset, size)] of each
    parameter (cuLaunchKernel gets one pointer per parameter, into the buffer), `fields`
    [(offset, size, role)] with role A / B / bias / out (a device pointer) or int (0)."""
    fields, blocks, base = [], [], 0
    for p in truth["params"]:
        blocks.append([base, p["size"]])
        for f in p["fields"]:
            role = f["role"] if f["role"] in ("A", "B", "bias", "out") else "int"
            fields.append([base + f["offset"], f["size"], role])
        base += (p["size"] + 7) // 8 * 8
    return {"blocks": blocks, "fields": fields, "bytes": base}


def fixture(stem: str, out: Path, rng: random.Random) -> dict:
    truth = json.loads((FRAG / f"{stem}.truth.json").read_text())
    ptx = FRAG / f"{stem}.ptx"
    m = cache.load_module(ptx)
    fn, _ = select_function(m, None)
    fa = cache.load_analysis(m, fn)
    ph = phases(fn, fa)[0]
    pm = phase_map(fn, fa, ph)
    regs, slot_of = [], {}
    for f in pm.a + pm.b + pm.c + pm.d:
        if f.reg not in slot_of:
            slot_of[f.reg] = len(regs)
            regs.append(f.reg)
    stale = [f.reg for f in pm.a + pm.b + pm.c
             if fa.reaching_defs(ph.last + 1, f.reg) != fa.reaching_defs(f.mma, f.reg)]
    stale += [f.reg for f in pm.d if fa.reaching_defs(ph.last + 1, f.reg) != [f.mma]]
    if stale:
        raise SystemExit(f"{stem}: redefined before the dump: {stale[:4]}")
    out_bytes = truth["M"] * truth["N"] * 2
    base = (out_bytes + 4095) // 4096 * 4096        # the dump lies past the kernel's own D
    dbg = write_only_pointer(fa)
    rec = SimpleNamespace(module=SimpleNamespace(DEBUG_PARAM=str(dbg), DEBUG_BASE=base),
                          path=Path(stem), constants={})
    block = builtin_debug_block(rec, fn, regs, "dump")
    lines = m.data.decode().split("\n")
    lines[ph.last_line:ph.last_line] = block.split("\n")
    cubins = {}
    for kind, text in (("orig", m.data.decode()), ("dump", "\n".join(lines))):
        src = out / f"{stem}_{kind}.ptx"
        src.write_text(text)
        cub = out / f"{stem}_{kind}.cubin"
        res = ptxas(src, ARCH, out=cub, relocatable=False, optimize=True, verbose=False)
        if not res.ok:
            raise SystemExit(f"{stem} {kind}: {res.log[-3000:]}")
        src.unlink()
        cubins[kind] = cub.name
    rows = _map_rows(pm, slot_of)
    # negative control 1: the first two B fragments of different tiles exchange tiles
    b = [list(x) for x in rows["B"]]
    t0 = next(f for f in pm.b)
    t1 = next(f for f in pm.b if f.tile != t0.tile and f.index == t0.index)
    s0, s1 = slot_of[t0.reg], slot_of[t1.reg]
    for x in b:
        x[0] = s1 if x[0] == s0 else (s0 if x[0] == s1 else x[0])
    print(f"{stem}: {ph.geometry}, {len(regs)} registers dumped through {dbg}, "
          f"{len(ph.mmas)} mma", flush=True)
    return {"fixture": stem, "kernel": fn.name, "cubins": cubins, "geometry": ph.geometry,
            "M": truth["M"], "N": truth["N"], "K": truth["K"], "launch": truth["launch"],
            "params": _params(truth), "out_bytes": out_bytes, "dump_base": base,
            "regs": regs, "map": rows, "control_b_swap": {"B": b, "regs": [t0.reg, t1.reg]},
            "control_register_identity": _register_identity_map(fn, fa, slot_of),
            **_inputs(truth, rng)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="build/gpufragfix")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--fixtures", nargs="*", default=STEMS)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    man = {"arch": ARCH, "seed": args.seed,
           "fixtures": [fixture(s, out, rng) for s in args.fixtures]}
    (out / "manifest.json").write_text(json.dumps(man) + "\n")
    print(f"wrote {out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
