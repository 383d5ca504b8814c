#!/usr/bin/env python3
"""Mutation testing: does the suite notice a plausible bug?

Each mutation in `scripts/mutations.py` is a single-point change to one module of
`rrsplice/` (an operator flipped, a condition dropped, a table entry changed), named by the
exact code text it replaces, so a refactor that moves code around does not silently mutate
the wrong place: a mutation whose text no longer occurs exactly once is reported as
"not applicable" instead of being applied somewhere else.

Every mutation is applied to a scratch copy of the checkout (the working tree is never
touched), the tests that cover its module are run there (`-x`, no cache, no bytecode), and
the outcome recorded: "killed" when a test fails, "timeout" when the tests run past the
limit (counted as killed: the bug made something hang), "survived" when they pass.
Survivors a spec marks `equivalent=` (no observable behaviour differs) are listed with the
reason and left out of the score's denominator.

    python scripts/mutate.py                 # all mutations, table into docs/tests.md
    python scripts/mutate.py -k outline      # mutations whose id contains 'outline'
    python scripts/mutate.py --list          # the mutations and their test subsets
    python scripts/mutate.py -j 2 --out /tmp/m.md

The table is written between the `<!-- mutation table -->` markers of the output file
(the rest of the file is kept), atomically.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = "<!-- mutation table -->"
END = "<!-- end of mutation table -->"


def load_specs():
    spec = importlib.util.spec_from_file_location("_mutations", ROOT / "scripts" / "mutations.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_mutations"] = mod
    spec.loader.exec_module(mod)
    return mod.MUTATIONS, mod.TESTS


def tests_for(m, tests_map) -> list:
    """The test files (and -k expressions) a mutation runs: its own, else its module's."""
    if m.tests:
        return list(m.tests)
    for prefix, tests in tests_map:
        if m.path.startswith(prefix):
            return list(tests)
    raise SystemExit(f"no tests for {m.path} (mutation {m.id}): add them to TESTS")


def make_scratch() -> Path:
    """A copy of what the tests need: package, tests, scripts, fixtures, recipes, docs."""
    tmp = Path(tempfile.mkdtemp(prefix="rrsplice-mutate-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")
    for name in ("rrsplice", "tests", "scripts", "corpus_fixtures", "recipes", "docs"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp / name, ignore=ignore, symlinks=True)
    for name in ("pyproject.toml", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, tmp / name)
    # bytecode validated by source hash: a mutated module never runs from a stale .pyc,
    # and the unchanged ones are not compiled again for every run
    subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode",
                    "checked-hash", str(tmp / "rrsplice"), str(tmp / "tests")],
                   capture_output=True)
    return tmp


def run_tests(where: Path, tests: list, timeout: float) -> tuple:
    """(status, seconds, last line of output) of the tests run in `where`."""
    env = dict(os.environ)
    env.update(PYTHONPATH=str(where), PYTHONDONTWRITEBYTECODE="1", RRSPLICE_NO_CACHE="1",
               RRSPLICE_CACHE_DIR=str(where / ".cache"))
    env.pop("PYTEST_ADDOPTS", None)
    # a subset may name a test file a later change adds (run_tests skips what is not there)
    files = [t for t in tests if not t.startswith("-") and (where / t.split("::")[0]).exists()]
    opts = [t for t in tests if t.startswith("-")]
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-p", "no:randomly", "--hypothesis-seed=0", *opts, *files]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - t0, f"ran past {timeout:.0f} s"
    dt = time.monotonic() - t0
    lines = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
    tail = lines[-1] if lines else ""
    if p.returncode == 0:
        return "survived", dt, tail
    if p.returncode == 5:
        return "error", dt, "no tests collected: " + tail
    failed = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    return "killed", dt, (failed[0] if failed else tail)


def applies(m, root: Path = ROOT) -> bool:
    """Whether `m`'s target text occurs as the spec expects in the checkout (or copy)."""
    path = root / m.path
    if not path.exists():
        return False
    n = path.read_text().count(m.find)
    return n == 1 if m.occurrence is None else m.occurrence < n


def apply_mutation(scratch: Path, m) -> str | None:
    """Write the mutated module into `scratch`; None when the target text is not found
    exactly `m.count` times (the code changed since the spec was written)."""
    path = scratch / m.path
    if not applies(m, scratch):
        return None
    orig = path.read_text()
    if m.occurrence is None:
        new = orig.replace(m.find, m.replace, 1)
    else:
        pos = -1
        for _ in range(m.occurrence + 1):
            pos = orig.find(m.find, pos + 1)
        new = orig[:pos] + m.replace + orig[pos + len(m.find):]
    path.write_text(new)
    return orig


def one(m, tests_map, timeout, pool_dirs) -> dict:
    scratch = pool_dirs.get()
    try:
        tests = tests_for(m, tests_map)
        orig = apply_mutation(scratch, m)
        if orig is None:
            return dict(m=m, status="not applicable", secs=0.0, detail="target text not found "
                        "exactly once", tests=tests)
        try:
            # the module's own targeted test file first (fast); the rest of the subset
            # only when that one does not notice the mutation
            files = [t for t in tests if not t.startswith("-")]
            opts = [t for t in tests if t.startswith("-")]
            status, secs, detail = "survived", 0.0, ""
            if len(files) > 1:
                status, secs, detail = run_tests(scratch, files[:1] + opts, timeout)
            if status == "survived":
                status, more, detail = run_tests(scratch, tests, timeout)
                secs += more
        finally:
            (scratch / m.path).write_text(orig)
        return dict(m=m, status=status, secs=secs, detail=detail, tests=tests)
    finally:
        pool_dirs.put(scratch)


def table(results: list, command: str) -> str:
    killed = sum(r["status"] in ("killed", "timeout") for r in results)
    equiv = [r for r in results if r["status"] == "survived" and r["m"].equivalent]
    survived = [r for r in results if r["status"] == "survived" and not r["m"].equivalent]
    na = [r for r in results if r["status"] in ("not applicable", "error", "not run")]
    applied = killed + len(survived)
    score = 100.0 * killed / applied if applied else 0.0
    by_mod: dict = {}
    for r in results:
        mod = r["m"].area
        k, s, e, n = by_mod.get(mod, (0, 0, 0, 0))
        st = r["status"]
        by_mod[mod] = (k + (st in ("killed", "timeout")),
                       s + (st == "survived" and not r["m"].equivalent),
                       e + (st == "survived" and bool(r["m"].equivalent)),
                       n + (st in ("not applicable", "error", "not run")))
    out = [BEGIN, "",
           f"Command: `{command}`", "",
           f"**{killed} killed of {applied} non-equivalent mutations applied "
           f"({score:.1f}%)**; {len(equiv)} survived as equivalent (explained below), "
           f"{len(survived)} survived, {len(na)} not applicable (target text gone) or "
           f"not run.", "",
           "| area | killed | survived | equivalent | n/a |", "|---|---:|---:|---:|---:|"]
    for mod in sorted(by_mod):
        k, s, e, n = by_mod[mod]
        out.append(f"| {mod} | {k} | {s} | {e} | {n} |")
    out += ["", "| id | module | change | result | tests | detail |",
            "|---|---|---|---|---|---|"]
    for r in results:
        m = r["m"]
        status = r["status"]
        if status == "survived" and m.equivalent:
            status = "equivalent"
        detail = (m.equivalent if status == "equivalent" else r["detail"]).replace("|", "\\|")
        tests = " ".join(Path(t).name if not t.startswith("-") else t
                         for t in r["tests"]).replace("|", "\\|")
        why = m.why.replace("|", "\\|")
        out.append(f"| {m.id} | {m.path.removeprefix('rrsplice/')} | {why} | {status} | "
                   f"{tests} | {detail} |")
    out += ["", END]
    return "\n".join(out)


def read_log(path: Path) -> dict:
    """id -> (status, seconds, detail) from the per-mutation lines of a run's stderr."""
    out = {}
    pat = re.compile(r"^([\w.-]+): (killed|survived|timeout|error|not applicable) "
                     r"\((\d+) s\) ?(.*)$")
    for line in path.read_text().splitlines():
        mt = pat.match(line)
        if mt:
            out[mt.group(1)] = (mt.group(2), float(mt.group(3)), mt.group(4))
    return out


def write_table(path: Path, text: str) -> None:
    old = path.read_text() if path.exists() else "# Tests\n\n"
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        new = head + text + tail
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="run only mutations whose id contains this")
    ap.add_argument("-j", type=int, default=1, help="mutations run at once (scratch copies)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per test run")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "tests.md")
    ap.add_argument("--list", action="store_true", help="list the mutations, run nothing")
    ap.add_argument("--blind", action="store_true",
                    help="only the mutations written after the tests, without reading them "
                         "(blind=True in scripts/mutations.py); their table goes to --out "
                         "between the blind-table markers")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip checking that each test subset passes unmutated")
    ap.add_argument("--table-from", type=Path, metavar="LOG",
                    help="write the table from a run's log without running anything "
                         "(mutations the log lacks are listed as not run)")
    ap.add_argument("--resume", type=Path, metavar="LOG",
                    help="take the results of an earlier run's log (its stderr) and run only "
                         "the mutations it did not kill (survivors, errors, missing ones)")
    args = ap.parse_args(argv)
    specs, tests_map = load_specs()
    ids = [m.id for m in specs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SystemExit(f"duplicate mutation ids: {', '.join(dup)}")
    chosen = [m for m in specs if args.k in m.id and (m.blind or not args.blind)]
    if args.blind:
        global BEGIN, END
        BEGIN, END = "<!-- blind mutation table -->", "<!-- end of blind mutation table -->"
    earlier = read_log(args.resume) if args.resume else {}
    if args.table_from:
        logged = read_log(args.table_from)
        results = []
        for m in chosen:
            status, secs, detail = logged.get(m.id, ("not run", 0.0, "not run yet"))
            if status == "not applicable" or (status == "not run" and not applies(m)):
                status = "not applicable"
            results.append(dict(m=m, status=status, secs=secs, detail=detail,
                                tests=tests_for(m, tests_map)))
        cmd = "python scripts/mutate.py" + (f" -k {args.k}" if args.k else "")
        write_table(args.out, table(results, cmd))
        return 0
    if args.list:
        na = 0
        for m in chosen:
            ok = applies(m)
            na += not ok
            print(f"{m.id}\t{m.path}\t{'' if ok else 'NOT APPLICABLE '}"
                  f"{' '.join(tests_for(m, tests_map))}\t{m.why}")
        print(f"{len(chosen)} mutations, {na} not applicable")
        return 0
    import queue
    pool: queue.Queue = queue.Queue()
    dirs = [make_scratch() for _ in range(max(1, args.j))]
    for d in dirs:
        pool.put(d)
    try:
        if not args.no_baseline:
            subsets = sorted({tuple(tests_for(m, tests_map)) for m in chosen})

            def base(tests):
                d = pool.get()
                try:
                    return tests, run_tests(d, list(tests), args.timeout)
                finally:
                    pool.put(d)
            with ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
                for tests, (status, secs, detail) in ex.map(base, subsets):
                    print(f"baseline {' '.join(tests)}: "
                          f"{'pass' if status == 'survived' else status} ({secs:.0f} s)",
                          file=sys.stderr, flush=True)
                    if status != "survived":
                        raise SystemExit(f"the unmutated tests do not pass: {detail}")
        results = []
        kept = {m.id: m for m in chosen if earlier.get(m.id, ("",))[0] in ("killed", "timeout")}
        torun = [m for m in chosen if m.id not in kept]
        with ThreadPoolExecutor(max_workers=max(1, args.j)) as ex:
            futs = [ex.submit(one, m, tests_map, args.timeout, pool) for m in torun]
            for f in futs:
                r = f.result()
                results.append(r)
                print(f"{r['m'].id}: {r['status']} ({r['secs']:.0f} s) {r['detail']}",
                      file=sys.stderr, flush=True)
    finally:
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
    for mid, m in kept.items():
        status, secs, detail = earlier[mid]
        results.append(dict(m=m, status=status, secs=secs, detail=detail,
                            tests=tests_for(m, tests_map)))
    order = {m.id: i for i, m in enumerate(chosen)}
    results.sort(key=lambda r: order[r["m"].id])
    cmd = "python scripts/mutate.py" + (f" -k {args.k}" if args.k else "")
    write_table(args.out, table(results, cmd))
    killed = sum(r["status"] in ("killed", "timeout") for r in results)
    applied = killed + sum(r["status"] == "survived" and not r["m"].equivalent
                           for r in results)
    print(f"{killed}/{applied} killed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
