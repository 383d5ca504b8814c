#!/usr/bin/env python3
"""Budgets of the whole-region lifter (`rrsplice body new --staging ...`).

    python scripts/bench_lift.py [RECIPE] [--repeat N] [--skip-hip] [--out DIR]

Times, for RECIPE (default recipes/swin_big_sm89.py): `body new` in a fresh process
(wall, best of N, both staging modes); `nvcc -O3 -arch=sm_89 -rdc=true -c` of the registers
body against `ptxas -O3 -arch=sm_89 -c` of the original module; `clang-19 -x hip
--offload-arch=gfx1201 -fgpu-rdc -O2 -c` of the registers body. Budgets (issue 21): body new
<= 5 s, nvcc <= 3x ptxas, clang-19 <= 120 s. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _timed(cmd, cwd=None, env=None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("recipe", nargs="?", default=str(ROOT / "recipes" / "swin_big_sm89.py"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-hip", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix="bench_lift_"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res: dict = {"recipe": a.recipe}
    for staging in ("registers", "image"):
        d = out / staging
        d.mkdir(parents=True, exist_ok=True)
        times = [_timed([sys.executable, "-m", "rrsplice", "body", "new", a.recipe,
                         "--staging", staging, "-o", str(d / "body.cu")], env=env)
                 for _ in range(a.repeat)]
        res[f"body_new_{staging}_s"] = round(min(times), 3)
    sys.path.insert(0, str(ROOT))
    from rrsplice.workflow.recipe import load_recipe, resolve_module
    module, _ = resolve_module(load_recipe(a.recipe), None)
    d = out / "registers"
    res["nvcc_O3_s"] = round(min(_timed(["nvcc", "-O3", "-arch=sm_89", "-rdc=true", "-c",
                                         "body.cu", "-o", "b.o"], cwd=d)
                                 for _ in range(a.repeat)), 2)
    res["ptxas_O3_s"] = round(min(_timed(["ptxas", "-O3", "-arch=sm_89", "-c", str(module),
                                          "-o", str(d / "orig.o")]) for _ in range(a.repeat)), 2)
    res["nvcc_over_ptxas"] = round(res["nvcc_O3_s"] / res["ptxas_O3_s"], 2)
    if not a.skip_hip:
        res["clang19_gfx1201_O2_s"] = round(_timed(
            ["clang-19", "-x", "hip", "--offload-arch=gfx1201", "-nogpuinc", "-nogpulib",
             "-fgpu-rdc", "-O2", "-c", "body.cu", "-o", "b_hip.o"], cwd=d), 1)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
