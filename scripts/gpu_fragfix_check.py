#!/usr/bin/env python3
"""Run the fragment-identity fixtures' map check `scripts/gpu_fragfix_prepare.py` built, on an
NVIDIA GPU, and compare bytes (numpy + CuPy + the driver API through `scripts/gpu_diff.py`;
no rrsplice).

    python3 scripts/gpu_fragfix_check.py build/gpufragfix/manifest.json --out results.json

Exit status 0 when, for every fixture, the kernel's own output equals A @ B + bias, the
dumped registers placed through the map equal A, B, bias and A @ B + bias with every cell
covered, and both negative controls mismatch.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import struct
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def f16_bits(values) -> np.ndarray:
    return np.asarray(values, np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


def e4m3_codes(values) -> np.ndarray:
    code = {0: 0x00, 1: 0x38, 2: 0x40, -1: 0xB8, -2: 0xC0}
    return np.vectorize(code.__getitem__)(np.asarray(values)).astype(np.uint32)


def place(dump: np.ndarray, rows, shape: tuple, bits: int) -> dict:
    """The matrix the map's rows (slot, lane, elem, row, col) build from one warp's dump
    (lanes x slots of u32), with how many writers each cell has, whether the writers of a
    cell agree, and how many rows point outside the matrix."""
    el = np.array(rows, np.int64).reshape(-1, 5)
    slot, lane, e, row, col = el.T
    inside = (row >= 0) & (row < shape[0]) & (col >= 0) & (col < shape[1])
    vals = (dump[lane, slot] >> (e.astype(np.uint32) * bits)) & ((1 << bits) - 1)
    mat = np.zeros(shape, np.uint32)
    cnt = np.zeros(shape, np.int32)
    r, c, v = row[inside], col[inside], vals[inside]
    mat[r, c] = v
    np.add.at(cnt, (r, c), 1)
    agree = bool((mat[r, c] == v).all())
    return {"mat": mat, "cnt": cnt, "agree": agree, "outside": int((~inside).sum())}


def compare_dump(fx: dict, dump: np.ndarray, rows: dict) -> dict:
    """Mismatching bytes of A, B, C, D placed through `rows` against the inputs."""
    M, N, K = fx["M"], fx["N"], fx["K"]
    want = {"A": (e4m3_codes(fx["A_values"]), (M, K), 8),
            "B": (e4m3_codes(fx["B_values"]), (K, N), 8),
            "C": (np.tile(f16_bits(fx["bias_values"]), (M, 1)), (M, N), 16),
            "D": (f16_bits(fx["D_values"]), (M, N), 16)}
    res = {"bytes": 0, "mismatches": 0, "covered": True}
    for name, (w, shape, bits) in want.items():
        if name == "C" and not rows["C"]:
            continue
        got = place(dump, rows[name], shape, bits)
        nb = bits // 8
        bad = int(np.count_nonzero(got["mat"] != w)) * nb + got["outside"] * nb
        if not got["agree"]:
            bad += nb
        covered = bool((got["cnt"] >= 1).all()) if name != "C" else True
        res[name] = {"bytes": int(w.size) * nb, "mismatches": bad, "covered": covered,
                     "rows_outside": got["outside"]}
        res["bytes"] += int(w.size) * nb
        res["mismatches"] += bad
        res["covered"] &= covered
    return res


def compare_output(fx: dict, out: np.ndarray) -> dict:
    """The kernel's own D (src/frag_common.cuh: f16 D row-major M x N) against A @ B + bias."""
    M, N = fx["M"], fx["N"]
    got = out[:M * N * 2].view(np.uint16).reshape(M, N).astype(np.uint32)
    want = f16_bits(fx["D_values"])
    return {"bytes": M * N * 2, "mismatches": 2 * int(np.count_nonzero(got != want))}


def check_fixture(fx: dict, out: np.ndarray) -> dict:
    """Everything compared from the output buffer of the original run (`orig`) and of the
    dump run (`dump`: the kernel's D, then the dump at dump_base)."""
    n = len(fx["regs"])
    res = {"fixture": fx["fixture"], "geometry": fx["geometry"]}
    res["kernel_output"] = compare_output(fx, out["orig"])
    res["kernel_output_dump_build"] = compare_output(fx, out["dump"])
    raw = out["dump"][fx["dump_base"]:fx["dump_base"] + 32 * 4 * n]
    dump = raw.view(np.uint32).reshape(32, n)
    res["map"] = compare_dump(fx, dump, fx["map"])
    swap = dict(fx["map"], B=fx["control_b_swap"]["B"])
    res["control_b_swap"] = {"regs": fx["control_b_swap"]["regs"],
                             "mismatches": compare_dump(fx, dump, swap)["mismatches"]}
    old = fx["control_register_identity"]
    res["control_register_identity"] = {"geometry": old["geometry"],
                                        "mismatches": compare_dump(fx, dump, old)["mismatches"]}
    res["ok"] = (res["kernel_output"]["mismatches"] == 0
                 and res["kernel_output_dump_build"]["mismatches"] == 0
                 and res["map"]["mismatches"] == 0 and res["map"]["covered"]
                 and res["control_b_swap"]["mismatches"] > 0)
    # the register-identity map is wrong only where a fragment is reloaded
    res["register_identity_differs"] = res["control_register_identity"]["mismatches"] > 0
    return res


def run_fixture(cp, drv, stage: Path, fx: dict) -> dict:
    M, N, K = fx["M"], fx["N"], fx["K"]
    bufs = {"A": cp.asarray(np.frombuffer(bytes.fromhex(fx["A_hex"]), np.uint8)),
            "B": cp.asarray(np.frombuffer(bytes.fromhex(fx["B_hex"]), np.uint8)),
            "bias": cp.asarray(f16_bits(fx["bias_values"]).astype(np.uint16))}
    out_size = fx["dump_base"] + 32 * 4 * len(fx["regs"])
    outs = {}
    for kind in ("orig", "dump"):
        bufs["out"] = cp.full(out_size, 0xA5, np.uint8)
        block = bytearray(fx["params"]["bytes"])
        for off, _size, role in fx["params"]["fields"]:
            if role == "int":
                continue
            struct.pack_into("<Q", block, off, bufs[role].data.ptr)
        holders = [ctypes.create_string_buffer(bytes(block[o:o + s]), s)
                   for o, s in fx["params"]["blocks"]]
        argv = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(h, ctypes.c_void_p) for h in holders])
        mod, fn = drv.load(stage / fx["cubins"][kind], fx["kernel"])
        try:
            L = fx["launch"]
            rc = drv.lib.cuLaunchKernel(fn, *[ctypes.c_uint(x) for x in L["grid"]],
                                        *[ctypes.c_uint(x) for x in L["block"]],
                                        ctypes.c_uint(L["dynamic_shared_bytes"]),
                                        ctypes.c_void_p(0), argv, ctypes.c_void_p(0))
            drv.check(rc, "cuLaunchKernel")
            drv.sync()
            outs[kind] = cp.asnumpy(bufs["out"])
        finally:
            drv.unload(mod)
    del M, N, K
    return check_fixture(fx, outs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import cupy as cp
    import gpu_diff as gd
    man = json.loads(Path(args.manifest).read_text())
    stage = Path(args.manifest).parent
    drv = gd.Driver()
    cp.zeros(1)                     # a context
    drv.ensure_context()
    t0 = time.perf_counter()
    results = [run_fixture(cp, drv, stage, fx) for fx in man["fixtures"]]
    info = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "driver": cp.cuda.runtime.driverGetVersion(), "cupy": cp.__version__,
            "seed": man["seed"], "arch": man["arch"],
            "seconds": round(time.perf_counter() - t0, 2)}
    for r in results:
        print(f"{r['fixture']:14} {r['geometry']:11} kernel D {r['kernel_output']['mismatches']}"
              f"/{r['kernel_output']['bytes']}  map {r['map']['mismatches']}/"
              f"{r['map']['bytes']} covered={r['map']['covered']}  B-swap control "
              f"{r['control_b_swap']['mismatches']}  register-identity map "
              f"({r['control_register_identity']['geometry']}) "
              f"{r['control_register_identity']['mismatches']}  "
              + ("ok" if r["ok"] else "FAILED"))
    if args.out:
        Path(args.out).write_text(json.dumps({"info": info, "fixtures": results}, indent=1)
                                  + "\n")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
