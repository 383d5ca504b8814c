#!/usr/bin/env python3
"""Benchmark a family application: `rrsplice apply RECIPE --all DIR` over the swin_tiny
variant family (one kernel applied as written, three ported on the fly, one refused),
serial (`-j 1`, the baseline) against parallel (`-j N`), plus one `recipe port` alone.

Runs the real command line as a subprocess (interpreter start-up, imports, recipe loading,
alignment, the re-check of every ported recipe, the splice, the atomic writes), each in a
fresh model cache directory so every run parses and analyses from scratch.

Usage: python scripts/bench_family.py [--runs 3] [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_CLI = "import sys; sys.argv[0] = 'rrsplice'; from rrsplice.cli import main; main()"
VARIANTS = ["mvhi_hdr", "mvhi_ldr", "mvlo_hdr", "mvlo_ldr", "mvhi_ldr_folded"]


def timed(args: list, env: dict, ok=(0, 1)) -> float:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", _CLI, *args], cwd=ROOT, env=env,
                       capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode not in ok:
        sys.exit(f"{args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args()
    recipe = ROOT / "recipes" / "tiny_family.py"
    with tempfile.TemporaryDirectory(prefix="rrsplice-bench-") as tmp:
        tmp = Path(tmp)
        corpus = tmp / "corpus"
        corpus.mkdir()
        for v in VARIANTS:
            shutil.copy(ROOT / "corpus_fixtures" / f"swin_tiny_{v}_sm89.ptx", corpus)
        res = {}
        for label, extra in (("serial (-j 1)", ["-j", "1"]),
                             (f"parallel (-j {args.jobs})", ["-j", str(args.jobs)]),
                             ("one recipe port", None)):
            times = []
            for i in range(args.runs):
                env = dict(os.environ, PYTHONPATH=str(ROOT),
                           RRSPLICE_CACHE_DIR=str(tmp / f"cache-{label[:3]}-{i}"))
                if extra is None:
                    times.append(timed(["recipe", "port", str(recipe), "--to",
                                        str(corpus / "swin_tiny_mvlo_ldr_sm89.ptx"), "-o",
                                        str(tmp / f"p{i}.py"), "--force"], env, ok=(0,)))
                else:
                    times.append(timed(["apply", str(recipe), "--all", str(corpus), "-o",
                                        str(tmp / f"out{i}"), *extra], env))
            res[label] = times
        base = statistics.median(res["serial (-j 1)"])
        print(f"{'what':28} {'best s':>8} {'median s':>9} {'vs serial':>10}")
        for label, times in res.items():
            med = statistics.median(times)
            ratio = f"{base / med:9.2f}x" if label != "one recipe port" else f"{'-':>10}"
            print(f"{label:28} {min(times):8.2f} {med:9.2f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
