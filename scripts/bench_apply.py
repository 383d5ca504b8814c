#!/usr/bin/env python3
"""Benchmark `rrsplice apply` end to end on the 37k-line dec2 module.

Runs the real command line (`rrsplice apply RECIPE -o OUT`) as a subprocess,
so interpreter start-up, imports, recipe loading, module resolution, every check, the
splice, the re-parse of the output and the atomic write are all counted:

  * cold: with an empty model cache (first apply of a module after it changed),
  * warm: the cache holds the module's model and analyses (the users' daily loop).

Usage: python scripts/bench_apply.py [--recipe recipes/swin_dec2.py] [--runs 7]
           [--budget 1.0]
Exit status 1 when the warm median exceeds the budget (seconds).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# what the `rrsplice` console script runs
_CLI = "import sys; sys.argv[0] = 'rrsplice'; from rrsplice.cli import main; main()"


def run_once(recipe: Path, out: Path, env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CLI, "apply", str(recipe), "-o", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"apply failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--recipe", default=str(ROOT / "recipes" / "swin_dec2.py"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--budget", type=float, default=1.0)
    args = ap.parse_args()
    recipe = Path(args.recipe).resolve()
    with tempfile.TemporaryDirectory(prefix="rrsplice-bench-") as tmp:
        tmp = Path(tmp)
        env = dict(os.environ, RRSPLICE_CACHE_DIR=str(tmp / "cache"))
        env.pop("RRSPLICE_NO_CACHE", None)
        cold = run_once(recipe, tmp / "out.ptx", env)
        warm = [run_once(recipe, tmp / "out.ptx", env) for _ in range(args.runs)]
        nocache_env = dict(env, RRSPLICE_NO_CACHE="1")
        nocache = run_once(recipe, tmp / "out.ptx", nocache_env)
        start = [0.0] * 3
        for i in range(3):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import rrsplice.cli"], cwd=ROOT, env=env,
                           check=True)
            start[i] = time.perf_counter() - t0
        lines = sum(1 for _ in open(ROOT / "corpus_fixtures" /
                                    "0021-PREPASS_ENTRYPOINT_NAME.ptx", "rb"))
    med = statistics.median(warm)
    print(f"recipe        {recipe.relative_to(ROOT) if recipe.is_relative_to(ROOT) else recipe}")
    print(f"module        0021-PREPASS_ENTRYPOINT_NAME.ptx ({lines} lines)")
    print(f"cold cache    {cold:.3f} s")
    print(f"no cache      {nocache:.3f} s")
    print(f"warm cache    median {med:.3f} s, min {min(warm):.3f} s, max {max(warm):.3f} s "
          f"({args.runs} runs)")
    print(f"start-up      {min(start):.3f} s (python -c 'import rrsplice.cli')")
    print(f"budget        {args.budget:.1f} s: {'ok' if med <= args.budget else 'EXCEEDED'}")
    return 0 if med <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
