#!/usr/bin/env python3
"""Run the fragment-map check `scripts/gpu_frag_prepare.py` built, on an NVIDIA GPU, and
compare bytes (numpy + CuPy + the driver API through `scripts/gpu_diff.py`; no rrsplice).

    python3 scripts/gpu_frag_check.py build/gpufrag/manifest.json --out results.json

Exit status 0 when every layout test and every phase of every fixture matches with 0
mismatching bytes and every negative control mismatches.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gpu_diff as gd  # noqa: E402


def e4m3_table() -> np.ndarray:
    out = np.zeros(256, np.float64)
    for c in range(256):
        s = -1.0 if c & 0x80 else 1.0
        e, m = (c >> 3) & 0xF, c & 7
        out[c] = np.nan if (e == 0xF and m == 7) else \
            s * (m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7))
    return out


E4M3 = e4m3_table()


def install_fills(stage: Path) -> None:
    orig = gd.fill

    def fill(rng, kind, nbytes):
        if kind.startswith("file:"):
            data = np.fromfile(stage / kind[5:], np.uint8)
            assert data.size == nbytes, (kind, data.size, nbytes)
            return data
        if kind == "f32_one":
            return np.ones(nbytes // 4, np.float32).view(np.uint8)
        if kind == "guide_1002":
            return np.tile(np.array([1, 0, 0, 2], np.float32), nbytes // 16).view(np.uint8)
        return orig(rng, kind, nbytes)

    gd.fill = fill


# ---------------------------------------------------------------- part 1

def layout_test(cp, drv, stage: Path, t: dict) -> dict:
    if "skipped" in t:
        return {"name": t["name"], "skipped": t["skipped"]}
    mod, fn = drv.load(stage / t["cubin"], t["name"])
    res = {"name": t["name"], "shape": t["shape"], "types": t["types"],
           "layouts": t["layouts"], "sections": t["sections"]}
    try:
        for key, words in (("match", t["words_in"]), ("control", t["words_control"])):
            din = cp.asarray(np.array(words, np.uint32))
            dout = cp.zeros(32 * t["n_out"], np.uint32)
            launch_two(drv, fn, din.data.ptr, dout.data.ptr)
            drv.sync()
            got = cp.asnumpy(dout).view(np.uint8)
            want = np.array(t["expected_out"], np.uint32).view(np.uint8)
            res[f"{key}_bytes"] = int(want.size)
            res[f"{key}_mismatches"] = int(np.count_nonzero(got != want))
    finally:
        drv.unload(mod)
    res["ok"] = res["match_mismatches"] == 0 and res["control_mismatches"] > 0
    return res


def launch_two(drv, fn, p_in: int, p_out: int) -> None:
    import ctypes
    a, b = ctypes.c_uint64(p_in), ctypes.c_uint64(p_out)
    argv = (ctypes.c_void_p * 2)(ctypes.cast(ctypes.pointer(a), ctypes.c_void_p),
                                 ctypes.cast(ctypes.pointer(b), ctypes.c_void_p))
    rc = drv.lib.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, ctypes.c_void_p(0), argv,
                                ctypes.c_void_p(0))
    drv.check(rc, "cuLaunchKernel")


# ---------------------------------------------------------------- part 2

def place(dump: np.ndarray, elems: np.ndarray, shape: tuple, bits: int) -> tuple:
    """Matrix from the dumped registers of one warp through map rows (slot, lane, elem, row,
    col); also how many times each cell was written."""
    slot, lane, e, row, col = elems.T
    words = dump[lane, slot]
    vals = (words >> (e.astype(np.uint32) * bits)) & ((1 << bits) - 1)
    mat = np.zeros(shape, np.uint32)
    cnt = np.zeros(shape, np.int32)
    mat[row, col] = vals
    np.add.at(cnt, (row, col), 1)
    return mat, cnt


def expected_c(weights: np.ndarray, st: dict, z: int) -> np.ndarray:
    M, N = st["M"], st["N"]
    out = np.zeros((M, N), np.uint32)
    for nt, off in enumerate(st["bias_offsets"]):
        o = off + z * st["bias_warp_stride"]
        lo = int(weights[o]) | int(weights[o + 1]) << 8
        hi = int(weights[o + 2]) | int(weights[o + 3]) << 8
        out[:, 8 * nt:8 * nt + 8:2] = lo
        out[:, 8 * nt + 1:8 * nt + 8:2] = hi
    return out


def check_stage(dumpw: np.ndarray, weights: np.ndarray, st: dict, a1=None,
                a_elems=None, c_elems=None) -> dict:
    M, N, K = st["M"], st["N"], st["K"]
    A_el = np.array(a_elems if a_elems is not None else st["A"], np.int64)
    C_el = np.array(c_elems if c_elems is not None else st["C"], np.int64)
    D_el = np.array(st["D"], np.int64)
    sel = np.array(st["sel"])
    r = {"phase": st["phase"], "geometry": st["geometry"], "bytes": 0, "mismatches": 0,
         "A_bytes": 0, "A_mismatches": 0, "C_bytes": 0, "C_mismatches": 0,
         "D_bytes": 0, "D_mismatches": 0, "coverage_ok": True}
    for z in range(4):
        dump = dumpw[z]
        A, ca = place(dump, A_el, (M, K), 8)
        C, cc = place(dump, C_el, (M, N), 16)
        D, cd = place(dump, D_el, (M, N), 16)
        r["coverage_ok"] &= bool((ca == 1).all() and (cc == 1).all() and (cd == 1).all())
        if a1 is not None:
            want = np.frombuffer(bytes.fromhex(a1[z]), np.uint8).reshape(M, K)
            r["A_bytes"] += want.size
            r["A_mismatches"] += int(np.count_nonzero(A.astype(np.uint8) != want))
        wc = expected_c(weights, st, z)
        r["C_bytes"] += 2 * wc.size
        r["C_mismatches"] += 2 * int(np.count_nonzero(C != wc))
        cval = wc.astype(np.uint16).view(np.float16).astype(np.float64)
        aval = E4M3[A[:, sel].astype(np.int64)]
        wd = (aval + cval).astype(np.float16).view(np.uint16).astype(np.uint32)
        r["D_bytes"] += 2 * wd.size
        r["D_mismatches"] += 2 * int(np.count_nonzero(D != wd))
    r["bytes"] = r["A_bytes"] + r["C_bytes"] + r["D_bytes"]
    r["mismatches"] = r["A_mismatches"] + r["C_mismatches"] + r["D_mismatches"]
    return r


def fixture(cp, drv, stage: Path, fx: dict, plane_bytes: int) -> dict:
    desc = fx["launch"]
    inp = gd.Inputs(cp, desc, seed=0)
    mod, fn = drv.load(stage / fx["cubin"], fx["kernel"])
    try:
        inp.poison(0xA5)
        drv.launch(fn, desc["grid"], desc["block"], bytes(inp.block),
                   desc.get("dynamic_shared_bytes", 0))
        drv.sync()
        out = inp.read()["plane_out"]
    finally:
        drv.unload(mod)
    weights = np.fromfile(stage / f"{fx['fixture']}_weights.bin", np.uint8)
    res = {"fixture": fx["fixture"], "phases": [], "bytes": 0, "mismatches": 0}
    dumps = {}
    for st in fx["stages"]:
        n = len(st["regs"])
        raw = out[st["base"]:st["base"] + 128 * 4 * n].view(np.uint32).reshape(4, 32, n)
        dumps[st["phase"]] = raw
        r = check_stage(raw, weights, st, fx["phase1_expected_A"] if st["phase"] == 1 else None)
        res["phases"].append(r)
        res["bytes"] += r["bytes"]
        res["mismatches"] += r["mismatches"]
    # negative controls on phase 1: two A registers' map entries swapped; one C register's
    # halves swapped
    st = fx["stages"][0]
    A = [list(x) for x in st["A"]]
    s0, s1 = A[0][0], next(x[0] for x in A if x[0] != A[0][0])
    for x in A:
        x[0] = s1 if x[0] == s0 else (s0 if x[0] == s1 else x[0])
    ca = check_stage(dumps[1], weights, st, fx["phase1_expected_A"], a_elems=A)
    C = [list(x) for x in st["C"]]
    c0 = C[0][0]
    for x in C:
        if x[0] == c0:
            x[2] = 1 - x[2]
    cc = check_stage(dumps[1], weights, st, fx["phase1_expected_A"], c_elems=C)
    res["control_a_swap"] = {"regs": [st["regs"][s0], st["regs"][s1]],
                             "A_mismatches": ca["A_mismatches"],
                             "D_mismatches": ca["D_mismatches"]}
    res["control_c_halves"] = {"reg": st["regs"][c0], "C_mismatches": cc["C_mismatches"]}
    res["ok"] = (res["mismatches"] == 0 and all(p["coverage_ok"] for p in res["phases"])
                 and ca["A_mismatches"] > 0 and cc["C_mismatches"] > 0)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    man_path = Path(args.manifest)
    stage = man_path.parent
    man = json.loads(man_path.read_text())
    install_fills(stage)
    import cupy as cp
    cp.zeros(1)
    drv = gd.Driver()
    drv.ensure_context()
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    info = {"gpu": name, "cupy": cp.__version__, "driver": cp.cuda.runtime.driverGetVersion(),
            "arch": man["arch"], "seed": man["seed"]}
    t0 = time.perf_counter()
    layouts, fixtures = [], []
    for t in man["layout_tests"]:
        try:
            r = layout_test(cp, drv, stage, t)
        except Exception as exc:  # noqa: BLE001 - report and go on
            r = {"name": t["name"], "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        layouts.append(r)
        print(json.dumps(r), flush=True)
    for fx in man["fixtures"]:
        try:
            r = fixture(cp, drv, stage, fx, man["plane_bytes"])
        except Exception as exc:  # noqa: BLE001
            r = {"fixture": fx["fixture"], "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        fixtures.append(r)
        print(json.dumps({k: v for k, v in r.items() if k != "phases"}), flush=True)
        for p in r.get("phases", []):
            print("  " + json.dumps(p), flush=True)
    info["seconds"] = round(time.perf_counter() - t0, 2)
    result = {"info": info, "layouts": layouts, "fixtures": fixtures}
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))
    ok = all(r.get("ok") for r in layouts if "skipped" not in r) and \
        all(r.get("ok") for r in fixtures)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
