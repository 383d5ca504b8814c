"""How long the test suite takes and how much memory its biggest process needs.

    python3 scripts/bench_tests.py            # quick subset and full suite (xdist, -n auto)
    python3 scripts/bench_tests.py --baseline # also the full suite in one process (-n 0)

Each run is a fresh `python -m pytest -q` with a fresh cache directory (nothing carried over
from an earlier run), started from a helper process that reports, after pytest exits, the
wall time, the CPU time of pytest and all its workers (user + system: less sensitive to
other load on the machine than wall time), and the peak resident set size of the largest
single process (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, which covers every descendant).
The baseline is the suite as it ran before this loop existed: one process, no xdist.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_MEASURE = r"""
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
print(json.dumps({"rc": proc.returncode, "wall": wall, "cpu": ru.ru_utime + ru.ru_stime,
                  "peak_mb": ru.ru_maxrss / 1024, "summary": tail[0]}))
"""


def measure(label: str, args: list) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="rrsplice-bench-cache-") as cache:
        env["RRSPLICE_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "pytest",
                              "-q", "-p", "no:cacheprovider", *args],
                             cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)
    res["label"] = label
    res["args"] = " ".join(["pytest -q", *args])
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", action="store_true",
                    help="also run the full suite in one process (-n 0), the old way")
    opts = ap.parse_args()
    runs = [("quick subset", ["-m", "not slow"]), ("full suite", [])]
    if opts.baseline:
        runs.append(("baseline: full suite, one process", ["-n", "0"]))
    print(f"{os.cpu_count()} CPU(s); load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'run':36} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}  result", flush=True)
    results = []
    for label, args in runs:
        r = measure(label, args)
        results.append(r)
        print(f"{r['label']:36} {r['wall']:8.1f} {r['cpu']:8.1f} {r['peak_mb']:8.0f}  "
              f"{r['summary']}  ({r['args']})", flush=True)
    if opts.baseline:
        base, full = results[-1], results[1]
        print(f"full suite vs baseline: {base['wall'] / full['wall']:.2f}x faster wall, "
              f"peak process {full['peak_mb']:.0f} MB vs {base['peak_mb']:.0f} MB")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    if any(r["rc"] != 0 for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
