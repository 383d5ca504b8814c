#!/usr/bin/env python3
"""GPU check of the statement rewrites (run where scripts/gpu_rewrite_prepare.py's output
was copied; needs CuPy and the CUDA driver).

1. Surface stores: `rrsurf_round_kernel` original vs rewritten (sust helpers linked as PTX
   bodies doing the original store), on random inputs; every byte of the four surfaces and
   of the rounded-values buffer is compared, each output poisoned with a different byte
   before each launch (so a texel one kernel leaves unwritten shows as a mismatch).
2. Round: `rrround_all_kernel` original (copysign, add.rz.ftz, cvt.rzi) vs rewritten, on
   every float bit pattern 0 .. 2^32-1, in chunks of 2^30; mismatching outputs counted.
3. Ported recipes: scripts/gpu_diff.py over manifest.json (original vs outlined identity
   body, per variant).

    python3 scripts/gpu_rewrite_check.py --out results.json
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_diff import Driver  # noqa: E402

W, H = 509, 251                    # odd sizes: partial blocks, the .zero edge texel


def launch(drv, fn, grid, block, args: list) -> None:
    """cuLaunchKernel with one packed value per kernel parameter (gpu_diff's launch passes
    a single by-value parameter block)."""
    import ctypes
    bufs = [ctypes.create_string_buffer(a, len(a)) for a in args]
    argv = (ctypes.c_void_p * len(bufs))(*[ctypes.cast(b, ctypes.c_void_p) for b in bufs])
    rc = drv.lib.cuLaunchKernel(fn, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]),
                                ctypes.c_uint(grid[2]), ctypes.c_uint(block[0]),
                                ctypes.c_uint(block[1]), ctypes.c_uint(block[2]),
                                ctypes.c_uint(0), ctypes.c_void_p(0), argv, ctypes.c_void_p(0))
    drv.check(rc, "cuLaunchKernel")


def surfaces(cp):
    from cupy.cuda import runtime as rt
    from cupy.cuda import texture as tx
    U, F = rt.cudaChannelFormatKindUnsigned, rt.cudaChannelFormatKindFloat
    shapes = [("v2b16", (16, 16, 0, 0, U), np.uint16, 2),
              ("v4b16", (16, 16, 16, 16, U), np.uint16, 4),
              ("b32", (32, 0, 0, 0, U), np.uint32, 1),
              ("p_v4b32", (32, 32, 32, 32, F), np.float32, 4)]
    out = []
    for name, desc, dtype, nch in shapes:
        arr = tx.CUDAarray(tx.ChannelFormatDescriptor(*desc), W, H, 0,
                           rt.cudaArraySurfaceLoadStore)
        res = tx.ResourceDescriptor(rt.cudaResourceTypeArray, cuArr=arr)
        obj = tx.SurfaceObject(res)
        out.append((name, arr, res, obj, dtype, (H, W * nch)))
    return out


def surface_check(cp, drv, trials: int) -> dict:
    mod_a, fa = drv.load(ROOT / "surface" / "original.cubin", "rrsurf_round_kernel")
    mod_b, fb = drv.load(ROOT / "surface" / "rewritten.cubin", "rrsurf_round_kernel")
    surf = surfaces(cp)
    result = {"bytes_compared": 0, "mismatches": 0, "unwritten": 0, "trials": []}
    grid = ((W + 1 + 31) // 32, (H + 1 + 3) // 4, 1)
    for t in range(trials):
        seed = 1000 + t
        rng = np.random.default_rng(seed)
        host = rng.uniform(-400, 400, W * H * 4).astype(np.float32)
        host[::7] = np.round(host[::7]) + 0.5          # exact halves: the round's edge
        inp = cp.asarray(host)
        rounded = cp.zeros(W * H * 4, np.float32)
        params = [struct.pack("<Q", s[3].ptr) for s in surf] + [
            struct.pack("<Q", inp.data.ptr), struct.pack("<Q", rounded.data.ptr),
            struct.pack("<i", W), struct.pack("<i", H), struct.pack("<f", 1.75)]

        def run(fn, byte, rounded=rounded, params=params):
            for _n, arr, _r, _o, dtype, shape in surf:
                arr.copy_from(np.full(shape[0] * shape[1] * np.dtype(dtype).itemsize, byte,
                                      np.uint8).view(dtype).reshape(shape))
            rounded.view(np.uint8).fill(byte)
            launch(drv, fn, grid, (32, 4, 1), params)
            drv.sync()
            got = {}
            for n, arr, _r, _o, dtype, shape in surf:
                h = np.empty(shape, dtype)
                arr.copy_to(h)
                got[n] = h.view(np.uint8).reshape(-1).copy()
            got["rounded"] = cp.asnumpy(rounded).view(np.uint8).copy()
            return got
        a = run(fa, 0xA5)
        a2 = run(fa, 0x3C)
        b = run(fb, 0x5A)
        per = {}
        for n in a:
            per[n] = {"bytes": int(a[n].size), "mismatches": int(np.count_nonzero(a[n] != b[n])),
                      "original_repeat_mismatches": int(np.count_nonzero(a[n] != a2[n])),
                      "unwritten_original": int(np.count_nonzero((a[n] == 0xA5)
                                                                 & (a2[n] == 0x3C)))}
            result["bytes_compared"] += int(a[n].size)
            result["mismatches"] += per[n]["mismatches"]
            result["unwritten"] += per[n]["unwritten_original"]
        result["trials"].append({"seed": seed, "outputs": per})
    drv.unload(mod_a)
    drv.unload(mod_b)
    result["ok"] = result["mismatches"] == 0 and all(
        o["original_repeat_mismatches"] == 0 for t in result["trials"]
        for o in t["outputs"].values())
    return result


def round_check(cp, drv) -> dict:
    mod_a, fa = drv.load(ROOT / "surface" / "original.cubin", "rrround_all_kernel")
    mod_b, fb = drv.load(ROOT / "surface" / "rewritten.cubin", "rrround_all_kernel")
    chunk = 1 << 30
    a = cp.empty(chunk, np.uint32)
    b = cp.empty(chunk, np.uint32)
    mism = 0
    first = []
    t0 = time.perf_counter()
    for c in range(4):
        base = c * chunk
        for fn, buf, poison in ((fa, a, 0xA5), (fb, b, 0x5A)):
            buf.view(np.uint8).fill(poison)
            launch(drv, fn, (chunk // 256, 1, 1), (256, 1, 1),
                   [struct.pack("<I", base), struct.pack("<Q", buf.data.ptr)])
        drv.sync()
        ne = a != b
        n = int(cp.count_nonzero(ne))
        mism += n
        if n and len(first) < 8:
            idx = cp.nonzero(ne)[0][:8 - len(first)].get()
            first += [[hex(base + int(i)), hex(int(a[int(i)])), hex(int(b[int(i)]))]
                      for i in idx]
    drv.unload(mod_a)
    drv.unload(mod_b)
    return {"inputs": 1 << 32, "mismatches": mism, "first": first,
            "seconds": round(time.perf_counter() - t0, 2), "ok": mism == 0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    import cupy as cp
    cp.zeros(1)
    drv = Driver()
    drv.ensure_context()
    props = cp.cuda.runtime.getDeviceProperties(0)
    res = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"]}
    for name, fn in (("surface", lambda: surface_check(cp, drv, args.trials)),
                     ("round", lambda: round_check(cp, drv))):
        try:
            res[name] = fn()
        except Exception as exc:  # noqa: BLE001 - report and go on
            res[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(name, json.dumps({k: v for k, v in res[name].items() if k != "trials"}),
              flush=True)
    diff_out = Path(args.out).with_name("ported.json") if args.out else None
    cmd = [sys.executable, str(ROOT / "scripts" / "gpu_diff.py"), str(ROOT / "manifest.json"),
           "--trials", "2", "--timing", "0"]
    if diff_out:
        cmd += ["--out", str(diff_out)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print(p.stdout[-6000:], p.stderr[-3000:], flush=True)
    res["ported"] = {"exit": p.returncode,
                     "results": json.loads(diff_out.read_text())["results"]
                     if diff_out and diff_out.exists() else None}
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    ok = res["surface"].get("ok") and res["round"].get("ok") and p.returncode == 0
    print("ALL OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
