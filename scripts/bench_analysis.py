#!/usr/bin/env python3
"""Time the analysis pipeline on one PTX module, stage by stage.

    python scripts/bench_analysis.py FILE [--entry NAME] [--range sA-sB] [--repeat N]

Stages (best of N runs, in one process, caches off): parse, CFG, def/use, liveness fixed
point, one range query (live-in + live-out), mma phases (`rrsplice.analysis.mma.phases`, when it
exists), and their total. Then a *cached re-query*: a fresh interpreter that loads the
module and the analysis from the on-disk cache (populated first, in a temporary cache
directory unless --cache-dir is given) and answers the same range query; its in-process
time and its wall time including interpreter start-up are both printed. Peak RSS is the
benchmark process's own (ru_maxrss).

Without --range the range is the function's mma region (first to last mma statement), or
the whole body when it has no mma.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rrsplice.analysis.cfg import build_cfg  # noqa: E402
from rrsplice.analysis.dataflow import FunctionAnalysis  # noqa: E402
from rrsplice.analysis.semantics import def_use  # noqa: E402
from rrsplice.ptx.parser import parse_bytes  # noqa: E402
from rrsplice.ptx.select import StatementRange, parse_statement_range, select_function  # noqa: E402

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from rrsplice.infra.cache import load_analysis, load_module
from rrsplice.ptx.select import StatementRange, select_function
t1 = time.perf_counter()
m = load_module(sys.argv[1])
t2 = time.perf_counter()
fn, _ = select_function(m, sys.argv[2] or None)
fa = load_analysis(m, fn)
t3 = time.perf_counter()
r = StatementRange(int(sys.argv[3]), int(sys.argv[4]))
li = fa.range_live_in(r)
lo = fa.range_live_out(r)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load_module": t2 - t1, "load_analysis": t3 - t2,
                  "query": t4 - t3, "total": t4 - t1, "live_in": len(li), "live_out": len(lo)}))
"""


def one_run(data: bytes, path: str, entry, range_text):
    times = {}
    t = time.perf_counter()
    m = parse_bytes(data, path, path=path)
    times["parse"] = time.perf_counter() - t
    fn, _ = select_function(m, entry)
    t = time.perf_counter()
    cfg = build_cfg(fn)
    times["cfg"] = time.perf_counter() - t
    t = time.perf_counter()
    du = [def_use(st) for st in fn.statements]
    times["def/use"] = time.perf_counter() - t
    t = time.perf_counter()
    fa = FunctionAnalysis(fn, du=du, cfg=cfg)
    times["liveness"] = time.perf_counter() - t
    if range_text:
        rng = parse_statement_range(range_text, fn)
    else:
        mma = [st.index for st in fn.statements if st.base == "mma"]
        rng = StatementRange(mma[0], mma[-1]) if mma else StatementRange(1, len(fn.statements))
    t = time.perf_counter()
    li = fa.range_live_in(rng)
    lo = fa.range_live_out(rng)
    times["range query"] = time.perf_counter() - t
    try:
        from rrsplice.analysis.mma import phases
    except ImportError:
        phases = None
    n_phases = None
    if phases is not None:
        t = time.perf_counter()
        n_phases = len(phases(fn, fa))
        times["phases"] = time.perf_counter() - t
    times["total"] = sum(times.values())
    info = {"function": fn.name, "statements": len(fn.statements), "lines": m.line_count,
            "blocks": len(cfg.blocks), "registers": len(fa.names), "range": str(rng),
            "live_in": len(li), "live_out": len(lo), "phases": n_phases,
            "fixpoint_rounds": fa.iterations}
    return times, info, fn.name


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--entry", default=None)
    ap.add_argument("--range", dest="range_text", default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    os.environ["RRSPLICE_NO_CACHE"] = "1"
    path = args.file
    data = Path(path).read_bytes()
    runs = []
    info = None
    for _ in range(max(1, args.repeat)):
        times, info, fname = one_run(data, path, args.entry, args.range_text)
        runs.append(times)
    best = {k: min(r[k] for r in runs) for k in runs[0]}
    median_total = statistics.median(r["total"] for r in runs)

    # cached re-query in a fresh interpreter
    os.environ.pop("RRSPLICE_NO_CACHE", None)
    tmp = None
    if args.cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="rrsplice-bench-")
        cache_dir = tmp.name
    else:
        cache_dir = args.cache_dir
    env = dict(os.environ, RRSPLICE_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent) + os.pathsep + env.get(
        "PYTHONPATH", "")
    first, last = info["range"][1:].split("-s")
    cmd = [sys.executable, "-c", CHILD, path, args.entry or "", first, last]
    subprocess.run(cmd, env=env, check=True, capture_output=True)        # populate
    cached = []
    for _ in range(max(1, args.repeat)):
        t = time.perf_counter()
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
        wall = time.perf_counter() - t
        c = json.loads(out.stdout)
        c["wall (with interpreter start-up)"] = wall
        cached.append(c)
    cbest = {k: min(c[k] for c in cached) for k in cached[0]
             if isinstance(cached[0][k], float)}
    if tmp is not None:
        tmp.cleanup()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    report = {"file": path, "python": platform.python_version(), "cpu": platform.processor()
              or platform.machine(), "repeat": args.repeat, **info,
              "stages_best_s": {k: round(v, 4) for k, v in best.items()},
              "total_median_s": round(median_total, 4),
              "cached_requery_best_s": {k: round(v, 4) for k, v in cbest.items()},
              "peak_rss_mb": round(peak_mb, 1)}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{path}: {info['lines']} lines, {fname}: {info['statements']} statements, "
          f"{info['blocks']} blocks, {info['registers']} registers")
    print(f"range {info['range']}: {info['live_in']} live-in, {info['live_out']} live-out; "
          f"{info['phases']} phases; best of {args.repeat}")
    for k, v in best.items():
        print(f"  {k:<12} {v:8.3f} s")
    print(f"  (median total {median_total:.3f} s)")
    print("cached re-query (fresh interpreter):")
    for k, v in cbest.items():
        print(f"  {k:<34} {v:8.3f} s")
    print(f"peak RSS {peak_mb:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
