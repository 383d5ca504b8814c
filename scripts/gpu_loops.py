#!/usr/bin/env python3
"""GPU proof of loop cuts whose exits leave the region: the original nvcc kernels of
`corpus_fixtures/loops/` against the spliced ones (patched kernel + outlined body, linked),
bit for bit, and both against a Python model of the CUDA source.

Two steps, on two machines:

    python scripts/gpu_loops.py prepare [--out build/gpu_loops]   # here: ptxas, nvlink
    python3 gpu_loops.py run manifest.json --out results.json      # on the GPU machine

`prepare` (needs rrsplice, ptxas, nvlink) builds, for sm_90 and optimised: the original
module's cubin; one linked cubin per recipe `recipes/loops_*.py` (`rrsplice verify --keep`);
and a negative control, the `loops_search` body with exit indices 1 and 2 swapped (the
splice then continues at the wrong label: the comparison must find it); and the same cuts
with the body lifted to C++ (`rrsplice body new --staging registers`, nvcc -O3), with the
same control on the lifted loops_search body. It copies this
script next to its `manifest.json`.

`run` (needs numpy and cupy only) launches every kernel on the same random rows, from a new
seed per trial: each output buffer is poisoned with a different byte before each launch,
so a word one kernel leaves unwritten shows; it compares the spliced output to the
original's, word for word, and the original's to the Python model; and it counts how each
row left its loop (so a run that never takes an exit proves nothing about it).
Exit status 0 when every cut matches, every control differs and the model agrees.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECIPES = ("loops_early_break", "loops_nested", "loops_search")
ARCH = "sm_90"
THREADS, BLOCKS, N = 128, 48, 41


# ---------------------------------------------------------------- prepare (no GPU)

def prepare(out: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from rrsplice.infra.tools import nvlink, ptxas
    from rrsplice.workflow.verify import verify
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ptx = ROOT / "corpus_fixtures" / "loops" / "loops_sm90.ptx"
    res = ptxas(ptx, ARCH, out=out / "original.cubin", relocatable=False, optimize=True)
    if not res.ok:
        raise SystemExit(res.log)
    runs = []
    for name in RECIPES:
        keep = out / name
        v = verify(ROOT / "recipes" / f"{name}.py", ARCH, optimize=True, keep=keep,
                   original=False)
        if not v.ok:
            raise SystemExit(json.dumps(v.to_json(), indent=1)[:4000])
        shutil.copy(v.files["linked_cubin"], out / f"{name}.cubin")
        kernel = _entry(ROOT / "recipes" / f"{name}.py")
        runs.append({"cut": name, "kernel": kernel, "region": v.region, "lines": list(v.lines),
                     "cubin": f"{name}.cubin", "expect_match": True,
                     "passed": len(v.outline.passed), "returned": len(v.outline.returned)})
        if name == "loops_search":
            body = keep / f"{name}.body.ptx"
            text = body.read_text()
            a, b = "mov.u32 %rrsx, 1;", "mov.u32 %rrsx, 2;"
            if a not in text or b not in text:
                raise SystemExit(f"{body}: no exit indices 1 and 2 to swap")
            swapped = keep / f"{name}.swapped.body.ptx"
            swapped.write_text(text.replace(a, "@@").replace(b, a).replace("@@", b))
            obj = keep / f"{name}.swapped.body.o"
            r = ptxas(swapped, ARCH, out=obj, relocatable=True, optimize=True)
            if not r.ok:
                raise SystemExit(r.log)
            ok, log = nvlink([keep / f"{name}.patched.{ARCH}.o", obj], ARCH,
                             out / f"{name}_swapped.cubin")
            if not ok:
                raise SystemExit(log)
            runs.append({"cut": name + "_swapped", "kernel": kernel, "region": v.region,
                         "lines": list(v.lines), "cubin": f"{name}_swapped.cubin",
                         "expect_match": False, "what": "exit indices 1 and 2 swapped in "
                         "the body (negative control)"})
        runs += _lifted(name, keep, kernel, v, out)
        for f in keep.iterdir():
            if f.suffix in (".o", ".cubin"):
                f.unlink()
    manifest = {"arch": ARCH, "original": "original.cubin", "runs": runs,
                "threads": THREADS, "blocks": BLOCKS, "n": N}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    shutil.copy(Path(__file__), out / "gpu_loops.py")
    print(f"wrote {out}/manifest.json: {len(runs)} runs")
    return 0


def _lifted(name: str, keep: Path, kernel: str, v, out: Path) -> list:
    """The same cut with its body lifted to C++ (`rrsplice body new --staging registers`,
    nvcc -O3 -rdc) and linked with the patched kernel; for loops_search also the lifted
    body with exit indices 1 and 2 swapped (negative control)."""
    import subprocess

    from rrsplice.infra.tools import nvlink
    src = keep / f"{name}.lifted.cu"
    subprocess.run([sys.executable, "-m", "rrsplice", "body", "new", str(ROOT / "recipes" / f"{name}.py"),
                    "--staging", "registers", "-o", str(src)], check=True, cwd=ROOT,
                   capture_output=True, text=True)
    bodies = [(f"{name}_lifted", src, True, "body lifted to C++ (nvcc -O3)")]
    if name == "loops_search":
        text = src.read_text()
        a, b = "v_rrsx = (rr_u32)0x1u;", "v_rrsx = (rr_u32)0x2u;"
        if a not in text or b not in text:
            raise SystemExit(f"{src}: no exit indices 1 and 2 to swap")
        bad = keep / f"{name}.lifted_swapped.cu"
        bad.write_text(text.replace(a, "@@").replace(b, a).replace("@@", b))
        bodies.append((f"{name}_lifted_swapped", bad, False,
                       "lifted body with exit indices 1 and 2 swapped (negative control)"))
    runs = []
    for cut, body, expect, what in bodies:
        obj = body.with_suffix(".o")
        subprocess.run(["nvcc", "-rdc=true", "-c", f"-arch={ARCH}", "-O3", str(body), "-o", str(obj)],
                       check=True, cwd=keep, capture_output=True, text=True)
        ok, log = nvlink([keep / f"{name}.patched.{ARCH}.o", obj], ARCH, out / f"{cut}.cubin")
        if not ok:
            raise SystemExit(log)
        runs.append({"cut": cut, "kernel": kernel, "region": v.region, "lines": list(v.lines),
                     "cubin": f"{cut}.cubin", "expect_match": expect, "what": what})
    return runs


def _entry(recipe: Path) -> str:
    for line in recipe.read_text().splitlines():
        if line.startswith("ENTRY = "):
            return line.split("=", 1)[1].strip().strip("'\"")
    raise SystemExit(f"{recipe}: no ENTRY")


# ---------------------------------------------------------------- the model of loops.cu

def _w(x: int) -> int:
    """Wrap to int32, as the compiled arithmetic does."""
    return (x + 2 ** 31) % 2 ** 32 - 2 ** 31


def model(kernel: str, row: list, n: int) -> tuple:
    """(out[2t], out[2t+1], how the loop ended) for one thread's row."""
    if kernel == "early_break":
        acc, i = 0, 0
        while i < n:
            v = row[i]
            if v < 0:
                break
            acc = _w(acc * 3 + v)
            i += 1
        return acc, i, "break" if i < n else "end"
    if kernel == "nested":
        acc = 0
        for i in range(n):
            m = row[i] & 7
            for j in range(m):
                acc = _w(acc + (row[(i + j) % n] ^ j) + i)
            acc ^= acc >> 3
        return acc, n, f"inner<={max((r & 7) for r in row)}"
    acc, i = 1, 0
    while i < n:
        v = row[i]
        if v == 0x7777:
            return _w(acc + i), 1, "found"
        if not v & 1:
            acc = _w(acc + (v >> 2)) if v > 1000 else _w(acc * 5 - v)
            if acc > (1 << 28):
                return _w(acc - i), 12, "budget"
        i += 1
    return acc, -1, "end"


def inputs(kernel: str, rng, rows: int, n: int):
    import numpy as np
    a = rng.integers(-300, 3000, size=(rows, n), dtype=np.int64)
    kind = rng.integers(0, 10, size=rows)
    if kernel == "early_break":
        a[kind < 4] = np.abs(a[kind < 4])                  # rows that run to the end
    elif kernel == "search":
        a[kind == 0] = 0                                   # even, small: the budget exit
        a[kind == 1] = rng.integers(0, 8, size=(int((kind == 1).sum()), n)) * 2
        hit = (kind >= 2) & (kind < 5)                     # the sentinel somewhere
        a[hit, rng.integers(0, n, size=int(hit.sum()))] = 0x7777
    return a.astype(np.int32)


# ---------------------------------------------------------------- run (on the GPU)

def run(manifest_path: Path, out_path: Path, trials: int) -> int:
    import cupy as cp
    import numpy as np
    man = json.loads(manifest_path.read_text())
    here = manifest_path.parent
    threads, blocks, n = man["threads"], man["blocks"], man["n"]
    rows = threads * blocks
    original = cp.RawModule(path=str(here / man["original"]))
    dev = cp.cuda.runtime.getDeviceProperties(0)
    results = {"device": dev["name"].decode(), "arch": man["arch"], "rows": rows, "n": n,
               "runs": []}
    ok_all = True
    for r in man["runs"]:
        spliced = cp.RawModule(path=str(here / r["cubin"]))
        kernel = r["kernel"]
        f_orig, f_new = original.get_function(kernel), spliced.get_function(kernel)
        entry = {k: r[k] for k in ("cut", "kernel", "region", "expect_match")}
        entry.update(trials=[], words=0, mismatched_words=0)
        model_bad = 0
        hows: dict = {}
        for t in range(trials):
            seed = int(np.random.SeedSequence().entropy % 2 ** 63)
            a = inputs(kernel, np.random.default_rng(seed), rows, n)
            d_a = cp.asarray(a.reshape(-1))
            outs = []
            for f, poison in ((f_orig, 0xAB), (f_new, 0xCD)):
                d_out = cp.full(2 * rows * 4, poison, dtype=cp.uint8)
                f((blocks,), (threads,), (d_a, d_out, np.int32(n)))
                cp.cuda.Device().synchronize()
                outs.append(cp.asnumpy(d_out).view(np.int32))
            diff = int((outs[0] != outs[1]).sum())
            entry["words"] += outs[0].size
            entry["mismatched_words"] += diff
            entry["trials"].append({"seed": seed, "mismatched_words": diff})
            if t == 0:
                for k in range(rows):
                    want = model(kernel, a[k].tolist(), n)
                    hows[want[2]] = hows.get(want[2], 0) + 1
                    if (int(outs[0][2 * k]), int(outs[0][2 * k + 1])) != want[:2]:
                        model_bad += 1
        entry["model_mismatched_rows"] = model_bad
        entry["exits_taken"] = dict(sorted(hows.items()))
        entry["match"] = entry["mismatched_words"] == 0
        good = (entry["match"] == r["expect_match"]) and model_bad == 0
        entry["ok"] = good
        ok_all &= good
        results["runs"].append(entry)
        print(f"{r['cut']:24} {kernel:12} {r['region']:10} words={entry['words']} "
              f"mismatched={entry['mismatched_words']} model_bad={model_bad} "
              f"exits={entry['exits_taken']} {'ok' if good else 'FAILED'}", flush=True)
    results["ok"] = ok_all
    out_path.write_text(json.dumps(results, indent=1))
    return 0 if ok_all else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=str(ROOT / "build" / "gpu_loops"))
    q = sub.add_parser("run")
    q.add_argument("manifest")
    q.add_argument("--out", default="gpu_loops_results.json")
    q.add_argument("--trials", type=int, default=3)
    args = ap.parse_args()
    if args.cmd == "prepare":
        return prepare(Path(args.out).resolve())
    return run(Path(args.manifest), Path(args.out), args.trials)


if __name__ == "__main__":
    sys.exit(main())
