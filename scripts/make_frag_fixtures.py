#!/usr/bin/env python3
"""Generate the fragment-identity fixtures and their ground truth.

Compiles each corpus_fixtures/src/frag_*.cu with `nvcc -arch=sm_89 -ptx -O3 -std=c++17`
and the tile counts of the table below (-DMT/-DNT/-DKS), writing corpus_fixtures/frag/
<stem>.ptx, and writes <stem>.truth.json beside it from the same table and the sources' own
indexing (src/frag_common.cuh): the true geometry, the program order of the mma as
(m-tile, n-tile, k-slice) -- the loop nesting of the source; every mma is `asm volatile`, so
nvcc keeps their order --, where each operand's bytes live (byte = base + row*row_stride +
col*col_stride, rows and columns of the phase's A (m, k), B (k, n) and C (m, n)), and which
parameter holds the weights. Nothing here runs rrsplice.

    python3 scripts/make_frag_fixtures.py            # regenerate (needs nvcc)
    python3 scripts/make_frag_fixtures.py --check    # exit 1 if a file would change
    python3 scripts/make_frag_fixtures.py --truth    # rewrite only the .truth.json files

Deterministic: nvcc runs from the repository root on relative paths without -lineinfo.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = Path("corpus_fixtures/src")
OUT = Path("corpus_fixtures/frag")
FLAGS = ["-arch=sm_89", "-ptx", "-O3", "-std=c++17"]

# stem, (MT, NT, KS), loop order of the mma (outer to inner), parameters (name suffix or
# struct field -> role), the weight field, what the shape exercises
KERNELS = [
    dict(stem="frag_breload", tiles=(3, 16, 4), order=("mt", "nt", "ks"),
         params=[("param_0", 8, "A"), ("param_1", 8, "B"), ("param_2", 8, "bias"),
                 ("param_3", 8, "out")],
         weight=("param_1", 0),
         what="B reloaded for every m-tile (same address, new register); 48x128x128"),
    dict(stem="frag_areload", tiles=(2, 8, 2), order=("nt", "mt", "ks"),
         params=[("param_0", 8, "A"), ("param_1", 8, "B"), ("param_2", 8, "bias"),
                 ("param_3", 8, "out")],
         weight=("param_1", 0),
         what="A reloaded for every n-tile (same address, new register); 32x64x64"),
    dict(stem="frag_struct", tiles=(1, 4, 2), order=("mt", "nt", "ks"),
         struct=[(0, 8, "A"), (8, 8, "bias"), (16, 8, "out"), (24, 8, "B"), (32, 4, "n"),
                 (36, 4, "flags")], struct_size=40,
         weight=("param_0", 24),
         what="weights behind a 40-byte struct parameter at +24 (not +40); 16x32x64"),
    dict(stem="frag_triton", tiles=(2, 4, 2), order=("nt", "mt", "ks"),
         params=[("param_0", 8, "A"), ("param_1", 8, "B"), ("param_2", 8, "bias"),
                 ("param_3", 8, "out")],
         weight=None, shared=True,
         what="Triton-style: A, B staged in .extern .shared, bar.sync, A by ldmatrix.x4, "
              "B by ld.shared, next k-slice prefetched; A reloaded per n-tile; 32x32x64"),
]


def truth(k: dict) -> dict:
    """The ground truth of one kernel, from the table and src/frag_common.cuh's layout."""
    mt, nt, ks = k["tiles"]
    M, N, K = 16 * mt, 8 * nt, 32 * ks
    stem = k["stem"]
    ranges = {"mt": range(mt), "nt": range(nt), "ks": range(ks)}
    order = []
    o0, o1, o2 = k["order"]
    for a in ranges[o0]:
        for b in ranges[o1]:
            for c in ranges[o2]:
                v = {o0: a, o1: b, o2: c}
                order.append([v["mt"], v["nt"], v["ks"]])
    if "struct" in k:
        params = [{"name": f"{stem}_param_0", "size": k["struct_size"],
                   "fields": [{"offset": o, "size": s, "role": r} for o, s, r in k["struct"]]}]
        field = {r: (f"{stem}_param_0", o) for o, _, r in k["struct"]}
    else:
        params = [{"name": f"{stem}_{n}", "size": s,
                   "fields": [{"offset": 0, "size": s, "role": r}]} for n, s, r in k["params"]]
        field = {r: (f"{stem}_{n}", 0) for n, _, r in k["params"]}

    def at(role):
        name, off = field[role]
        return {"param": name, "offset": off}

    if k.get("shared"):
        operands = {
            "A": {"space": "shared", "symbol": "frag_smem", "base": 0, "row_stride": K,
                  "col_stride": 1, "elem_bytes": 1, "load": "ldmatrix.x4",
                  "filled_from": at("A")},
            "B": {"space": "shared", "symbol": "frag_smem", "base": M * K, "row_stride": 1,
                  "col_stride": K, "elem_bytes": 1, "load": "ld.shared", "filled_from": at("B")},
        }
        dyn_shared = M * K + N * K
    else:
        operands = {
            "A": {"space": "global", **at("A"), "base": 0, "row_stride": K, "col_stride": 1,
                  "elem_bytes": 1},
            "B": {"space": "global", **at("B"), "base": 0, "row_stride": 1, "col_stride": K,
                  "elem_bytes": 1},
        }
        dyn_shared = 0
    operands["C"] = {"space": "global", **at("bias"), "base": 0, "row_stride": 0,
                     "col_stride": 2, "elem_bytes": 2}
    w = k["weight"]
    return {
        "entry": stem, "source": f"{SRC}/{stem}.cu", "what": k["what"],
        "nvcc": " ".join(["nvcc", *FLAGS, *defines(k), "-o", f"{OUT}/{stem}.ptx",
                          f"{SRC}/{stem}.cu"]),
        "shape": "m16n8k32", "types": "f16.e4m3.e4m3.f16",
        "phases": 1, "geometry": f"{M}x{N}x{K}", "M": M, "N": N, "K": K,
        "m_tiles": mt, "n_tiles": nt, "k_slices": ks, "dense": True,
        "mma_order": order,
        "operands": operands,
        "weight_param": None if w is None else {"param": f"{stem}_{w[0]}", "offset": w[1]},
        "bias_param": at("bias"),
        "params": params,
        "launch": {"block": [32, 1, 1], "grid": [1, 1, 1], "dynamic_shared_bytes": dyn_shared},
    }


def defines(k: dict) -> list:
    mt, nt, ks = k["tiles"]
    return [f"-DMT={mt}", f"-DNT={nt}", f"-DKS={ks}"]


def build(k: dict, dest: Path) -> None:
    src = SRC / f"{k['stem']}.cu"
    subprocess.run(["nvcc", *FLAGS, *defines(k), "-o", str(dest), str(src)], cwd=ROOT,
                   check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    ap.add_argument("--truth", action="store_true", help="rewrite only the .truth.json files")
    args = ap.parse_args(argv)
    changed = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in KERNELS:
            stem = k["stem"]
            files = {f"{stem}.truth.json": (json.dumps(truth(k), indent=1) + "\n").encode()}
            if not args.truth:
                out = Path(tmp) / f"{stem}.ptx"
                build(k, out)
                files[f"{stem}.ptx"] = out.read_bytes()
            for name, data in files.items():
                path = ROOT / OUT / name
                if path.exists() and path.read_bytes() == data:
                    continue
                changed.append(name)
                if not args.check:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
    for name in changed:
        print(("would change " if args.check else "wrote ") + f"{OUT}/{name}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
