#!/usr/bin/env python3
"""Record, or compare against a record, every output a refactor must leave byte-identical.

For each recipe under recipes/ and tests/recipes_bad/ it runs the command line (a fresh
process each, as a user would) and keeps stdout, stderr, exit status and written files of

* `rrsplice outline RECIPE -o BODY --json` and the same with `--no-check`,
* `rrsplice check RECIPE --json`, `check RECIPE` (text) and `check RECIPE --target zluda --json`,
* `rrsplice apply RECIPE -o OUT --json`,

plus `apply recipes/tiny_family.py --all corpus_fixtures`, and the builders' outputs
(`recipe new`, `recipe port`, `stages new`: the files they write, their --json, their
refusals) on fixtures copied into the scratch directory where the recipe names its module by
a relative path. Paths of the scratch output
directory are replaced by `<OUT>` and of the checkout by `<ROOT>`, so records made in
different directories compare, and the wall-clock figures `apply --json` reports
(`"seconds": ...`) by `<S>`; a traceback compares by its exception line only. Usage:

    python scripts/golden_outputs.py record DIR      # before the change
    python scripts/golden_outputs.py compare DIR     # after: exit 1 on any difference
    python scripts/golden_outputs.py --only builders. record DIR   # a subset (name regex)
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
    return jobs + _builder_jobs()


_NEW = ["recipe", "new"]
_PORT = ["recipe", "port", "recipes/tiny_family.py", "--to"]
_TINY = "corpus_fixtures/swin_tiny_sm89.ptx"


def _builder_jobs() -> list[tuple]:
    """`recipe new` / `recipe port` / `stages new` runs: (name, arguments, files it writes,
    files copied into the scratch dir first as (source, name))."""
    small = [("corpus_fixtures/small/scopes.ptx", "scopes.ptx")]
    loops = [("corpus_fixtures/loops/loops_sm90.ptx", "loops_sm90.ptx")]
    div = [("corpus_fixtures/edge/divergent_call_sm89.ptx", "div.ptx")]
    dyn = [("corpus_fixtures/edge/dynamic_smem_sm89.ptx", "dyn.ptx"),
           ("corpus_fixtures/edge/dynamic_smem.launch.json", "dyn.launch.json")]
    new = [
        ("scopes-scratch", ["sc", "--module", "{out}/scopes.ptx", "--range", "s6-s7"], small),
        ("scopes-param", ["sc", "--module", "{out}/scopes.ptx", "--range", "s4-s7",
                          "--abi", "param"], small),
        ("tiny-p1-own", ["t_p1", "--module", _TINY, "--range", "s342-s405"], []),
        ("tiny-p2", ["t_p2", "--module", _TINY, "--range", "s556-s563"], []),
        ("tiny-whole", ["swin_tiny_sm89", "--module", _TINY, "--range", "s342-s2656",
                        "--callee", "tiny_body"], []),
        ("tiny-badscratch", ["t", "--module", _TINY, "--range", "s342-s405", "--scratch",
                             "nope"], []),
        ("small-param", ["p4", "--module", "corpus_fixtures/swin_small_sm89.ptx", "--range",
                         "s486-s2519", "--abi", "param"], []),
        ("loops-search", ["search_scratch", "--module", "{out}/loops_sm90.ptx", "--range",
                          "s17-s42", "--entry", "search"], loops),
        ("loops-search-param", ["sp", "--module", "{out}/loops_sm90.ptx", "--range",
                                "s17-s42", "--entry", "search", "--abi", "param"], loops),
        ("div-lane", ["lg", "--module", "{out}/div.ptx", "--range", "s15-s18", "--entry",
                      "lane_guarded", "--abi", "param"], div),
        ("div-early", ["er", "--module", "{out}/div.ptx", "--range", "s15-s18", "--entry",
                       "early_return", "--abi", "param"], div),
        ("div-block", ["bg", "--module", "{out}/div.ptx", "--range", "s25-s28", "--entry",
                       "block_guarded"], div),
        ("dyn-launch", ["dyn", "--module", "{out}/dyn.ptx", "--range", "s117-s180",
                        "--launch", "{out}/dyn.launch.json"], dyn),
        ("dyn-smem", ["dyn2", "--module", "{out}/dyn.ptx", "--range", "s117-s180",
                      "--dynamic-smem", "70000"], dyn),
        ("bad-name", ["not-a-name", "--module", _TINY, "--range", "s342-s405"], []),
        ("bad-callee", ["t", "--module", _TINY, "--range", "s342-s405", "--callee", "a-b"],
         []),
        ("bad-range", ["t", "--module", _TINY, "--range", "s342-s99999"], []),
    ]
    jobs: list[tuple] = []
    for name, args, setup in new:
        for fmt in ("json", "text"):
            jobs.append((f"builders.new.{name}.{fmt}",
                         _NEW + args + ["-o", "{out}/r.py"] + (["--json"] if fmt == "json"
                                                                else []),
                         ["r.py"], setup))
    variant = "corpus_fixtures/swin_tiny_{v}_sm89.ptx:rrswin_tiny_{v}_kernel"
    for v in ("mvhi_ldr", "mvlo_hdr", "mvhi_ldr_folded"):
        jobs.append((f"builders.port.{v}", _PORT + [variant.format(v=v), "-o", "{out}/p.py",
                                                     "--json"], ["p.py"], []))
    jobs.append(("builders.port.text", _PORT + [variant.format(v="mvlo_ldr"), "-o",
                                                  "{out}/p.py"], ["p.py"], []))
    jobs.append(("builders.port.loops", ["recipe", "port", "{out}/loops_search.py", "--to",
                                         "{out}/loops_sm90.ptx:search", "-o", "{out}/p.py",
                                         "--json"], ["p.py"],
                 loops + [("recipes/loops_search.py", "loops_search.py")]))
    tiny = [("recipes/swin_tiny_sm89.py", "t.py")]
    stages = [
        ("phase", ["--phase", "2", "--json"]),
        ("at", ["--at", "s400", "--regs", "%r1018, %r1019", "--name", "probe", "--json"]),
        ("line", ["--line", "1198", "--regs", "%r1018"]),
        ("undefined", ["--at", "s400", "--regs", "%f1, %f2", "--json"]),
        ("no-statement", ["--line", "1200", "--regs", "%r5"]),
        ("phase-text", ["--phase", "1"]),
        ("bad-point", ["--line", "1", "--regs", "%r5"]),
        ("bad-layer", ["--phase", "2", "--name", "other.x"]),
        ("none", ["--regs", "%r5"]),
    ]
    for name, args in stages:
        jobs.append((f"builders.stages.{name}", ["stages", "new", "{out}/t.py", *args],
                     ["t.py"], tiny))
    # into an existing table, then a clash with the stage just added
    jobs.append(("builders.stages.second", [["stages", "new", "{out}/t.py", "--phase", "2"],
                                            ["stages", "new", "{out}/t.py", "--at", "s400",
                                             "--regs", "%r1018"],
                                            ["stages", "new", "{out}/t.py", "--phase", "2"]],
                 ["t.py"], tiny))
    return jobs


def _run(job) -> dict[str, bytes]:
    name, args, files, *setup = job
    work = Path(tempfile.mkdtemp(prefix="golden-"))
    try:
        for src, dest in (setup[0] if setup else []):
            shutil.copyfile(ROOT / src, work / dest)
        env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
        norm = lambda b: b.replace(str(work).encode(), b"<OUT>") \
            .replace(str(ROOT).encode(), b"<ROOT>")  # noqa: E731
        rec = {}
        steps = args if args and isinstance(args[0], list) else [args]    # one command or several
        for k, step in enumerate(steps):
            argv = [a.replace("{out}", str(work)) for a in step]
            p = subprocess.run([sys.executable, "-m", "rrsplice", *argv], cwd=ROOT, env=env,
                               capture_output=True, timeout=600)
            at = name if len(steps) == 1 else f"{name}.{k}"
            rec.update({f"{at}.stdout": norm(p.stdout), f"{at}.stderr": norm(p.stderr),
                        f"{at}.rc": str(p.returncode).encode()})
        for pattern in files:
            for f in sorted(work.rglob(pattern)):
                if f.is_file():
                    rec[f"{name}.file.{f.relative_to(work)}".replace("/", "__")] = f.read_bytes()
        return rec
    finally:
        shutil.rmtree(work, ignore_errors=True)


def collect(jobs_n: int, only: str | None = None) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    jobs = [j for j in _jobs() if only is None or re.search(only, j[0])]
    with ThreadPoolExecutor(jobs_n) as ex:
        for rec in ex.map(_run, jobs):
            out.update(rec)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["record", "compare"])
    ap.add_argument("dir", type=Path)
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--only", metavar="REGEX", default=None,
                    help="only the jobs whose record name matches (e.g. builders\\.)")
    args = ap.parse_args()
    got = collect(args.jobs, args.only)
    if args.mode == "record":
        args.dir.mkdir(parents=True, exist_ok=True)
        for k, v in got.items():
            (args.dir / k).write_bytes(v)
        print(f"recorded {len(got)} outputs in {args.dir}")
        return 0
    want = {p.name: _timeless(p.read_bytes()) for p in args.dir.iterdir()
            if args.only is None or re.search(args.only, p.name)}
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
