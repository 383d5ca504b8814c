#!/usr/bin/env python3
"""Budgets of the whole-region lifter (`rrsplice body new --staging ...`).

    python scripts/bench_lift.py [RECIPE ...] [--repeat N] [--skip-hip] [--baseline REV]
                                 [--staging registers|image] [--timeout S] [--json FILE]

For each RECIPE (default: recipes/swin_{tiny,small,big}_sm89.py), times: `body new` in a
fresh process (wall, best of N); `nvcc -O3 -arch=sm_89 -rdc=true -c` of the body against
`ptxas -O3 -arch=sm_89 -c` of the original module (the ratio); the gfx1201 build of the
same body as a user links it, `clang-19 -x hip --offload-arch=gfx1201 --cuda-device-only
-nogpulib -nogpuinc -fgpu-rdc -O2 -emit-llvm -c` then `llc-19 -mtriple=amdgcn-amd-amdhsa
-mcpu=gfx1201 -O2`. Every compile is reported as wall seconds and CPU seconds (user + system
of the process and its children): on a shared machine the CPU figure is the stable one.

`--baseline REV` runs the same measures with the generator of git revision REV (exported
to a temporary directory), in the same run, so that both sets of figures share the machine's
load. A compile that runs past `--timeout` is stopped and reported as `> S`.

Budgets: issue 21: body new <= 5 s, nvcc <= 3x ptxas, clang-19 -O2 <= 120 s; issue 22: the
big fixture's HIP body, clang-19 and llc-19 together, <= 120 s. Prints a Markdown table and
writes one JSON object (--json).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = [f"recipes/swin_{s}_sm89.py" for s in ("tiny", "small", "big")]
CLANG = ["clang-19", "-x", "hip", "--offload-arch=gfx1201", "--cuda-device-only", "-nogpulib",
         "-nogpuinc", "-fgpu-rdc", "-O2", "-emit-llvm", "-c"]
LLC = ["llc-19", "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx1201", "-O2"]


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, cwd=None, env=None, timeout=None) -> dict:
    """{"wall": s, "cpu": s} of one run, or {"timeout": s} when it ran past `timeout`."""
    c, t = _cpu(), time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"timeout": timeout}
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n"
                         f"{err.decode(errors='replace')[-2000:]}")
    return {"wall": round(time.perf_counter() - t, 2), "cpu": round(_cpu() - c, 2)}


def best(runs: list) -> dict:
    ok = [r for r in runs if "timeout" not in r]
    return min(ok, key=lambda r: r["cpu"]) if ok else runs[0]


def checkout(rev: str, into: Path) -> Path:
    """The tree of git revision `rev`, exported (no work tree needed)."""
    into.mkdir(parents=True, exist_ok=True)
    arch = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "rrsplice"],
                          check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=arch, check=True)
    return into


def region_statements(recipe: Path, src: Path) -> int:
    """PTX statements of the recipe's cut (`cut_call` = [first line, end line))."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); "
            "from rrsplice.lift.region import lift_region; "
            "b = lift_region(sys.argv[2], sys.argv[3]); print(b.region[1] - b.region[0] + 1)")
    out = subprocess.run([sys.executable, "-c", code, str(src), str(recipe), "registers"],
                         check=True, capture_output=True, text=True, cwd=src).stdout
    return int(out.split()[-1])


def bench_one(recipe: Path, src: Path, work: Path, a) -> dict:
    """Every measure of one recipe with the generator in `src`."""
    env = dict(os.environ, PYTHONPATH=str(src), RRSPLICE_NO_CACHE="1")
    work.mkdir(parents=True, exist_ok=True)
    res: dict = {"statements": region_statements(recipe, src)}
    body = work / "body.cu"
    # run from `work`: `python -m` puts the working directory first on the path
    runs = [timed([sys.executable, "-m", "rrsplice", "body", "new", str(recipe), "--staging",
                   a.staging, "-o", str(body)], cwd=work, env=env) for _ in range(a.repeat)]
    res["body_new_wall_s"] = min(r["wall"] for r in runs)
    res["cxx_lines"] = body.read_text().count("\n")
    res["out_of_line"] = "RR_LIFT_OL" in (work / "rr_lift.h").read_text()
    res["nvcc"] = best([timed(["nvcc", "-O3", "-arch=sm_89", "-rdc=true", "-c", "body.cu", "-o",
                               "b.o"], cwd=work, timeout=a.timeout) for _ in range(a.repeat)])
    if not a.skip_hip:
        res["clang"] = timed([*CLANG, "body.cu", "-o", "b.bc"], cwd=work, timeout=a.timeout)
        res["llc"] = (timed([*LLC, "b.bc", "-o", "b.s"], cwd=work, timeout=a.timeout)
                      if "timeout" not in res["clang"] else {"timeout": None})
    return res


def ptxas_original(recipe: Path, a) -> dict:
    sys.path.insert(0, str(ROOT))
    from rrsplice.workflow.recipe import load_recipe, resolve_module
    module, _ = resolve_module(load_recipe(recipe), None)
    with tempfile.TemporaryDirectory() as d:
        return best([timed(["ptxas", "-O3", "-arch=sm_89", "-c", str(module), "-o",
                            str(Path(d) / "orig.o")]) for _ in range(a.repeat)])


def fmt(m: dict | None, key: str = "cpu") -> str:
    if not m:
        return "-"
    if "timeout" in m:
        return f"> {m['timeout']}" if m["timeout"] else "not run"
    return f"{m[key]:.2f}"


def ratio(n: dict, p: dict, key: str) -> str:
    if "timeout" in n:
        return "-"
    return f"{n[key] / p[key]:.2f}x"


def hip_sum(r: dict, key: str) -> str:
    c, ll = r.get("clang"), r.get("llc")
    if not c or not ll:
        return "-"
    if "timeout" in c or "timeout" in ll:
        return "> " + str(c.get("timeout") or ll.get("timeout"))
    return f"{c[key] + ll[key]:.1f}"


def table(results: dict) -> str:
    head = ("| fixture | generator | statements | C++ lines | body new s | nvcc CPU s (wall) | "
            "ptxas CPU s (wall) | nvcc/ptxas CPU (wall) | clang-19 CPU s (wall) | "
            "llc-19 CPU s (wall) | clang+llc CPU s (wall) |")
    out = [head, "|" + " --- |" * (head.count("|") - 1)]
    for name, per in results.items():
        p = per["ptxas"]
        for gen in ("baseline", "current"):
            r = per.get(gen)
            if r is None:
                continue
            n = r["nvcc"]
            out.append(
                f"| {name} | {gen} | {r['statements']:,} | {r['cxx_lines']:,} | "
                f"{r['body_new_wall_s']:.2f} | {fmt(n)} ({fmt(n, 'wall')}) | "
                f"{fmt(p)} ({fmt(p, 'wall')}) | {ratio(n, p, 'cpu')} ({ratio(n, p, 'wall')}) | "
                f"{fmt(r.get('clang'))} ({fmt(r.get('clang'), 'wall')}) | "
                f"{fmt(r.get('llc'))} ({fmt(r.get('llc'), 'wall')}) | "
                f"{hip_sum(r, 'cpu')} ({hip_sum(r, 'wall')}) |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("recipes", nargs="*", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--staging", default="registers", choices=("registers", "image"))
    ap.add_argument("--skip-hip", action="store_true")
    ap.add_argument("--baseline", default=None, help="git revision to compare against")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench_lift_") as tmp:
        base = checkout(a.baseline, Path(tmp) / "base") if a.baseline else None
        for rec in a.recipes:
            recipe = (ROOT / rec).resolve()
            name = recipe.stem
            per: dict = {"ptxas": ptxas_original(recipe, a)}
            if base is not None:
                per["baseline"] = bench_one(recipe, base, Path(tmp) / name / "base", a)
            per["current"] = bench_one(recipe, ROOT, Path(tmp) / name / "cur", a)
            results[name] = per
            print(f"{name}: {json.dumps(per)}", file=sys.stderr, flush=True)
    print(table(results))
    if a.json:
        Path(a.json).write_text(json.dumps({"baseline": a.baseline, "staging": a.staging,
                                            "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
