#!/usr/bin/env python3
"""Record, or compare against a record, every output a refactor must leave byte-identical.

For each recipe under recipes/ and tests/recipes_bad/ it runs the command line (a fresh
process each, as a user would) and keeps stdout, stderr, exit status and written files of

* `rrsplice outline RECIPE -o BODY --json` and the same with `--no-check`,
* `rrsplice check RECIPE --json`, `check RECIPE` (text) and `check RECIPE --target zluda --json`,
* `rrsplice apply RECIPE -o OUT --json`,

plus `apply recipes/tiny_family.py --all corpus_fixtures`. Paths of the scratch output
directory are replaced by `<OUT>` and of the checkout by `<ROOT>`, so records made in
different directories compare, and the wall-clock figures `apply --json` reports
(`"seconds": ...`) by `<S>`; a traceback compares by its exception line only. Usage:

    python scripts/golden_outputs.py record DIR      # before the change
    python scripts/golden_outputs.py compare DIR     # after: exit 1 on any difference
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _recipes() -> list[Path]:
    out = sorted((ROOT / "recipes").glob("*.py"))
    out += sorted((ROOT / "tests" / "recipes_bad").glob("*.py"))
    return out


def _jobs() -> list[tuple[str, list[str], list[str]]]:
    """(record name, rrsplice arguments with {out} for the scratch dir, files it writes)."""
    jobs = []
    for r in _recipes():
        rel = str(r.relative_to(ROOT))
        key = rel.replace("/", "__")
        jobs.append((key + ".outline", ["outline", rel, "-o", "{out}/body.ptx", "--json"],
                     ["body.ptx"]))
        jobs.append((key + ".outline-nocheck",
                     ["outline", rel, "-o", "{out}/body.ptx", "--json", "--no-check"],
                     ["body.ptx"]))
        jobs.append((key + ".check-json", ["check", rel, "--json"], []))
        jobs.append((key + ".check-text", ["check", rel], []))
        jobs.append((key + ".check-zluda", ["check", rel, "--target", "zluda", "--json"], []))
        jobs.append((key + ".apply", ["apply", rel, "-o", "{out}/patched.ptx", "--json"],
                     ["patched.ptx"]))
    jobs.append(("family.apply-all", ["apply", "recipes/tiny_family.py", "--all",
                                      "corpus_fixtures", "-o", "{out}", "-j", "1", "--json"],
                 ["*"]))
    return jobs


def _run(job) -> dict[str, bytes]:
    name, args, files = job
    work = Path(tempfile.mkdtemp(prefix="golden-"))
    try:
        argv = [a.replace("{out}", str(work)) for a in args]
        env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
        p = subprocess.run([sys.executable, "-m", "rrsplice", *argv], cwd=ROOT, env=env,
                           capture_output=True, timeout=600)
        norm = lambda b: b.replace(str(work).encode(), b"<OUT>") \
            .replace(str(ROOT).encode(), b"<ROOT>")  # noqa: E731
        rec = {f"{name}.stdout": norm(p.stdout), f"{name}.stderr": norm(p.stderr),
               f"{name}.rc": str(p.returncode).encode()}
        for pattern in files:
            for f in sorted(work.rglob(pattern)):
                if f.is_file():
                    rec[f"{name}.file.{f.relative_to(work)}".replace("/", "__")] = f.read_bytes()
        return rec
    finally:
        shutil.rmtree(work, ignore_errors=True)


def collect(jobs_n: int) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with ThreadPoolExecutor(jobs_n) as ex:
        for rec in ex.map(_run, _jobs()):
            out.update(rec)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["record", "compare"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    args = ap.parse_args()
    got = collect(args.jobs)
    if args.mode == "record":
        args.dir.mkdir(parents=True, exist_ok=True)
        for k, v in got.items():
            (args.dir / k).write_bytes(v)
        print(f"recorded {len(got)} outputs in {args.dir}")
        return 0
    want = {p.name: _timeless(p.read_bytes()) for p in args.dir.iterdir()}
    got = {k: _timeless(v) for k, v in got.items()}
    bad = 0
    for k in sorted(set(want) | set(got)):
        if want.get(k) != got.get(k):
            bad += 1
            print(f"DIFFERS: {k} (recorded {_digest(want.get(k))}, now {_digest(got.get(k))})")
    bodies = sum(1 for k in want if k.endswith(".file.body.ptx"))
    print(f"compared {len(set(want) | set(got))} outputs ({bodies} outlined bodies): "
          f"{'all identical' if not bad else f'{bad} differ'}")
    return 1 if bad else 0


def _timeless(b: bytes) -> bytes:
    """Without wall-clock figures, and with a Python traceback's frames (which name the
    code's own lines, so any refactor moves them) cut down to its final exception line."""
    b = re.sub(rb'"seconds": [0-9.e+-]+', b'"seconds": <S>', b)
    return re.sub(rb"Traceback \(most recent call last\):\n(?:[ \t].*\n)*",
                  b"Traceback <frames>\n", b)


def _digest(b) -> str:
    return "missing" if b is None else f"{len(b)} bytes sha256 {hashlib.sha256(b).hexdigest()[:12]}"


if __name__ == "__main__":
    sys.exit(main())
