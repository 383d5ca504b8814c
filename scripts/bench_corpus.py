#!/usr/bin/env python3
"""Benchmark the corpus table (`rrsplice descriptor --all DIR`) on the bundled corpus.

Runs the real command line as a subprocess, so interpreter start-up, imports, the walk, the
worker processes and the table are all counted:

  * cold, parallel: empty cache, worker processes (the default: one per core);
  * cold, one process (`--workers 1`): the baseline the parallel walk is measured against;
  * cached: every row served from the cache, no worker started.

Wall seconds and the CPU seconds of the command and its workers (RUSAGE_CHILDREN) are
printed for each; on a shared machine CPU seconds say what the walk costs, wall seconds what
it took under the load average printed beside them.

Usage: python scripts/bench_corpus.py [DIR] [--runs 3] [--budget 5] [--cached-budget 1]
Exit status 1 when the best cold parallel wall time or the best cached time exceeds its
budget (seconds).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_CLI = "import sys; sys.argv[0] = 'rrsplice'; from rrsplice.cli import main; main()"


def run_once(args: list, env: dict) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CLI, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}):\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("dir", nargs="?", default=str(ROOT / "corpus_fixtures"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget", type=float, default=5.0)
    ap.add_argument("--cached-budget", type=float, default=1.0)
    args = ap.parse_args()
    results = {}
    summary = ""
    for label, extra, fresh in (("cold, parallel", [], True),
                                ("cold, one process (baseline)", ["--workers", "1"], True),
                                ("cached", [], False)):
        runs = []
        with tempfile.TemporaryDirectory(prefix="rrsplice-bench-") as tmp:
            env = dict(os.environ, RRSPLICE_CACHE_DIR=str(Path(tmp) / "cache"))
            env.pop("RRSPLICE_NO_CACHE", None)
            if not fresh:
                run_once(["descriptor", "--all", args.dir], env)
            for i in range(args.runs):
                if fresh:
                    env["RRSPLICE_CACHE_DIR"] = str(Path(tmp) / f"cache{i}")
                wall, cpu, summary = run_once(["descriptor", "--all", args.dir, *extra], env)
                runs.append((wall, cpu, os.getloadavg()[0]))
        results[label] = runs
    print(f"corpus: {args.dir}; {summary}; nproc {os.cpu_count()}")
    print("| run | best wall s | median wall s | CPU s (best run) | load average |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, runs in results.items():
        walls = sorted(r[0] for r in runs)
        best = min(runs)
        print(f"| {label} | {walls[0]:.2f} | {walls[len(walls) // 2]:.2f} | {best[1]:.2f} "
              f"| {best[2]:.1f} |")
    base = min(results["cold, one process (baseline)"])[0]
    par = min(results["cold, parallel"])[0]
    print(f"parallel vs one process: {base / par:.2f}x")
    ok = par <= args.budget and min(results["cached"])[0] <= args.cached_budget
    print(f"budget: cold <= {args.budget} s, cached <= {args.cached_budget} s: "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
