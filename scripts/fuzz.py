"""A long fuzz campaign: mutated PTX fixtures and hostile recipes, each outcome checked
against rrsplice's promises, with a summary table at the end.

    nice -n 19 python scripts/fuzz.py --inputs 10000 --recipes 300 --max-seconds 3000 \
        --summary fuzz-summary.md

Each case runs in its own forked process, regenerated from its seed with the generators
of tests/fuzzing.py, so a failure is reproduced by its seed alone (`--only-seed
KIND:SEED`). Per case it checks:

* parse (API): success round-trips byte-exactly, or a ParseError at name:line:col;
* parse (CLI, one input in four): exit 0/1/2, no traceback, `--json` is one document;
* recipes (CLI `check`/`apply`): exit 0/1/2 with a message, no traceback;
* recipe pairs (`--noisy`): code in a recipe that prints to fd 1, forks, starts threads or
  subprocesses, changes directory, registers exits or patches rrsplice gives the outcome of
  the same recipe without it;
* no hang: each case must finish within --timeout seconds + --timeout-per-mb seconds per
  MB of input (else it is killed): linear work fits, a quadratic path does not;
* memory: the case process's peak RSS (from wait4) must stay under the RSS of the process
  it was forked from + 20x the input's size + --mem-constant MB, with an address-space
  limit as a backstop;
* no unintended write: every file under the case's directory is hashed before and after;
  only the intended output (`out/`) and the cache directory may change.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import select
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

CLI_PARSE_COMMANDS = [["parse", "x.ptx"], ["parse", "--json", "x.ptx"], ["functions", "x.ptx"],
                      ["liveness", "x.ptx", "--range", "s2-s5"], ["mma", "x.ptx", "--json"]]


# ------------------------------------------------------------------ one case

def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _case(kind: str, seed: int, work: Path, started=lambda size: None) -> dict:
    import fuzzing
    rnd = random.Random(seed)
    for p in list(work.iterdir()):
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    (work / "cache").mkdir(mode=0o700)
    res = {"kind": kind, "seed": seed}
    if kind == "input":
        name, data = fuzzing.fixture(rnd)
        data, ops = fuzzing.mutate(data, rnd)
        res["size"] = len(data)
        res["ops"] = ops
        started(len(data))
        (work / "x.ptx").write_bytes(data)
        before = fuzzing.snapshot(work, skip=("cache",))
        try:
            res["outcome"] = fuzzing.check_parse(data, name)
        except AssertionError as exc:
            res["outcome"], res["detail"] = "violation", str(exc)[:300]
        if res["outcome"] != "violation" and rnd.random() < 0.25:
            args = rnd.choice(CLI_PARSE_COMMANDS)
            got = fuzzing.run_cli(args, work)
            try:
                res["cli"] = fuzzing.check_cli_outcome(*got, args)
            except AssertionError as exc:
                res["outcome"], res["detail"] = "cli-violation", f"{args}: {exc}"[:300]
        bad = fuzzing.unintended_writes(before, fuzzing.snapshot(work, skip=("cache",)), ())
    elif kind == "corpus":                       # a hostile corpus through both walks
        res["size"] = 0
        started(0)
        try:
            fuzzing.check_hostile_corpus(rnd, work, timeout=60)
            res["outcome"] = "ok"
        except AssertionError as exc:
            res["outcome"], res["detail"] = "violation", str(exc)[:300]
        bad = []
    elif kind == "noisy":
        res["size"] = len(fuzzing.MODULE_TEXT)
        started(res["size"])
        res["outcome"], res["detail"], bad = _noisy(fuzzing, rnd, work)
    else:
        w = work / "w"
        w.mkdir()
        (w / "m.ptx").write_bytes(fuzzing.MODULE_TEXT)
        (w / "r.py").write_text(fuzzing.recipe_source(rnd))
        args = fuzzing.recipe_args(rnd, w)
        res["size"] = len(fuzzing.MODULE_TEXT)
        res["args"] = args[:1] + args[3:]
        started(res["size"])
        before = fuzzing.snapshot(work, skip=("cache",))
        got = fuzzing.run_cli(args, w)
        try:
            res["outcome"] = "cli-" + fuzzing.check_cli_outcome(*got, args)
        except AssertionError as exc:
            res["outcome"], res["detail"] = "cli-violation", f"{args}: {exc}"[:300]
        bad = fuzzing.unintended_writes(before, fuzzing.snapshot(work, skip=("cache",)),
                                        (w / "out",))
    if bad:
        res["outcome"], res["detail"] = "unintended-write", ", ".join(bad)[:300]
    return res


def _noisy(fuzzing, rnd, work: Path) -> tuple:
    """A recipe with code that must not change the answer (fd-1 writes, subprocesses,
    threads, fork, chdir, atexit exits, patches of rrsplice) and the same recipe without
    it: same exit code, stdout and output bytes, or "answer-changed"."""
    hostile, benign = fuzzing.noisy_recipe_pair(rnd)
    args = rnd.choice([["check", "r.py", "--corpus", "."],
                       ["check", "r.py", "--corpus", ".", "--json"],
                       ["apply", "r.py", "--corpus", ".", "-o", "o.ptx"]])
    got = []
    for name, src in (("h", hostile), ("b", benign)):
        w = work / name
        w.mkdir()
        (w / "m.ptx").write_bytes(fuzzing.MODULE_TEXT)
        (w / "r.py").write_text(src)
        code, out, err, exc = fuzzing.run_cli(args, w)
        try:
            fuzzing.check_cli_outcome(code, out, err, exc, args)
        except AssertionError as e:
            return "cli-violation", f"{args}: {e}"[:300], []
        if args[0] == "apply":
            out = "\n".join(ln for ln in out.splitlines() if not ln.startswith("wrote "))
        written = (w / "o.ptx").read_bytes() if (w / "o.ptx").exists() else None
        got.append((code, out.replace(str(w), "WORK"), written))
        if (w / "m.ptx").read_bytes() != fuzzing.MODULE_TEXT:
            return "unintended-write", str(w / "m.ptx"), []
    if got[0] != got[1]:
        return "answer-changed", f"{args}: exit {got[0][0]} vs {got[1][0]}", []
    verdict = {0: "ok", 1: "findings", 2: "error"}.get(got[0][0], "?")
    return "same-" + verdict, "", []


def run_case(kind: str, seed: int, work: Path, base_kb: int, args) -> dict:
    """Run one case in a forked child: the child's own peak RSS (from wait4) is the
    case's memory, and a child that does not answer in time is killed (a hang)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                     # the child
        os.close(r)
        try:
            if args.as_limit:
                resource.setrlimit(resource.RLIMIT_AS, (args.as_limit << 20,) * 2)
            try:
                res = _case(kind, seed, work,
                            lambda size: os.write(w, b"%d\n" % size))
            except MemoryError:
                res = {"outcome": "memory",
                       "detail": "MemoryError under the address-space limit"}
            except BaseException as exc:  # noqa: BLE001 - a traceback is the finding
                import traceback
                res = {"outcome": "traceback", "detail": "".join(
                    traceback.format_exception_only(type(exc), exc)).strip()[:300]}
            os.write(w, json.dumps(res).encode())
        finally:
            os._exit(0)
    os.close(w)
    chunks = []
    bound = args.timeout             # until the child says how big its input is
    t0 = time.monotonic()
    while True:
        ready, _, _ = select.select([r], [], [], max(0.0, t0 + bound - time.monotonic()))
        if not ready:
            os.kill(pid, 9)
            res = {"outcome": "hang", "detail": f"no answer in {bound:.0f} s"}
            break
        b = os.read(r, 1 << 16)
        if not b:
            text = b"".join(chunks)
            size, _, body = text.partition(b"\n")
            res = json.loads(body) if body else {
                "outcome": "crash", "detail": "the case's process died"}
            break
        chunks.append(b)
        if bound == args.timeout and b"\n" in b"".join(chunks):
            size = int(b"".join(chunks).split(b"\n", 1)[0])
            bound = args.timeout + args.timeout_per_mb * size / 1e6
    os.close(r)
    _pid, _status, usage = os.wait4(pid, 0)
    res.update(kind=kind, seed=seed, rss_kb=usage.ru_maxrss)
    bound = base_kb + (20 * res.get("size", 0)) // 1024 + args.mem_constant * 1024
    if res["outcome"] not in BAD and usage.ru_maxrss > bound:
        res["outcome"] = "memory"
        res["detail"] = f"peak {usage.ru_maxrss} kB > bound {bound} kB"
    return res


# ------------------------------------------------------------------ the campaign

def campaign(args) -> dict:
    rnd = random.Random(args.seed)
    cases = [("input", rnd.randrange(2**32)) for _ in range(args.inputs)] + \
            [("recipe", rnd.randrange(2**32)) for _ in range(args.recipes)] + \
            [("noisy", rnd.randrange(2**32)) for _ in range(args.noisy)] + \
            [("corpus", rnd.randrange(2**32)) for _ in range(args.corpora)]
    random.Random(args.seed + 1).shuffle(cases)
    if args.only_seed:
        k, s = args.only_seed.split(":")
        cases = [(k, int(s))]
    counts = collections.Counter()
    cli_counts = collections.Counter()
    failures = []
    os.environ["RRSPLICE_NO_CACHE"] = "1"
    import fuzzing

    from rrsplice.ptx.parser import parse_bytes
    parse_bytes(fuzzing.MODULE_TEXT, "warm-up")      # the children start warm, with
    import importlib  # every module already imported
    import pkgutil

    import rrsplice
    for info in pkgutil.walk_packages(rrsplice.__path__, "rrsplice."):
        importlib.import_module(info.name)
    fuzzing.run_cli(["--help"], ROOT)
    base_kb = _rss_kb()
    work = Path(tempfile.mkdtemp(prefix="rrsplice-fuzz-"))
    t0 = time.perf_counter()
    done = 0
    max_case = 0.0
    try:
        for kind, seed in cases:
            if args.max_seconds and time.perf_counter() - t0 > args.max_seconds:
                break
            t = time.perf_counter()
            res = run_case(kind, seed, work, base_kb, args)
            if res["outcome"] != "hang":
                max_case = max(max_case, time.perf_counter() - t)
            done += 1
            counts[(kind, res["outcome"])] += 1
            if "cli" in res:
                cli_counts[res["cli"]] += 1
            if res["outcome"] in BAD:
                failures.append(res)
                print(f"FAILURE {kind}:{seed} {res['outcome']}: {res.get('detail', '')}",
                      file=sys.stderr, flush=True)
            if args.progress and done % args.progress == 0:
                print(f"{done}/{len(cases)} cases, {time.perf_counter() - t0:.0f} s, "
                      f"{len(failures)} failures", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"seed": args.seed, "cases": done, "planned": len(cases),
            "seconds": round(time.perf_counter() - t0, 1), "slowest_case_s": round(max_case, 2),
            "timeout_s": args.timeout, "timeout_per_mb": args.timeout_per_mb,
            "mem_constant_mb": args.mem_constant,
            "base_rss_kb": base_kb,
            "counts": {f"{k}/{o}": n for (k, o), n in sorted(counts.items())},
            "cli_on_inputs": dict(sorted(cli_counts.items())),
            "failures": failures[:50], "failure_count": len(failures)}


BAD = {"violation", "cli-violation", "traceback", "hang", "memory", "crash",
       "unintended-write", "answer-changed"}


def summary_table(s: dict) -> str:
    kinds = {"input": "mutated PTX inputs", "recipe": "hostile recipes",
             "noisy": "recipes with code that must not change the answer"}
    n = collections.Counter()
    for key, v in s["counts"].items():
        n[key.split("/")[0]] += v
    lines = [f"Fuzz campaign: seed {s['seed']}, {s['cases']} of {s['planned']} cases in "
             f"{s['seconds']} s (slowest case {s['slowest_case_s']} s; hang bound "
             f"{s['timeout_s']} s + {s['timeout_per_mb']} s/MB; memory bound 20x input + "
             f"{s['mem_constant_mb']} MB; base RSS {s['base_rss_kb']} kB)", "",
             "| cases | outcome | count |", "|---|---|---:|"]
    for key, v in s["counts"].items():
        kind, outcome = key.split("/", 1)
        lines.append(f"| {kinds.get(kind, kind)} | {outcome} | {v} |")
    for kind in ("input", "recipe", "noisy"):
        lines.append(f"| {kinds[kind]} | **total** | {n[kind]} |")
    if s["cli_on_inputs"]:
        lines.append("| mutated inputs also run through the CLI | "
                     + ", ".join(f"{k} {v}" for k, v in s["cli_on_inputs"].items())
                     + f" | {sum(s['cli_on_inputs'].values())} |")
    lines += ["", "| invariant broken | count |", "|---|---:|"]
    for bad in sorted(BAD):
        c = sum(v for key, v in s["counts"].items() if key.split("/", 1)[1] == bad)
        lines.append(f"| {bad} | {c} |")
    if s["failures"]:
        lines += ["", "First failures (reproduce with --only-seed KIND:SEED):", ""]
        lines += [f"- {f['kind']}:{f['seed']} {f['outcome']}: {f.get('detail', '')}"
                  for f in s["failures"][:20]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=10000, help="mutated PTX inputs")
    ap.add_argument("--recipes", type=int, default=300, help="hostile recipes")
    ap.add_argument("--noisy", type=int, default=0,
                    help="recipe pairs: with and without code that must not change the answer")
    ap.add_argument("--corpora", type=int, default=0, help="hostile corpus directories")
    ap.add_argument("--seed", type=int, default=9)
    ap.add_argument("--timeout", type=float, default=20.0, help="hang bound per case (s)")
    ap.add_argument("--timeout-per-mb", type=float, default=5.0,
                    help="added to the hang bound per MB of input (linear work takes about "
                    "0.4 s/MB on an idle core)")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop after this long")
    ap.add_argument("--mem-constant", type=int, default=100,
                    help="MB allowed above the forking process's RSS besides 20x the input")
    ap.add_argument("--as-limit", type=int, default=4096, help="a case's address space (MB)")
    ap.add_argument("--summary", type=Path, help="write the table here (and .json beside)")
    ap.add_argument("--progress", type=int, default=500, help="report every N cases")
    ap.add_argument("--only-seed", help="run one case, e.g. input:12345")
    args = ap.parse_args()
    s = campaign(args)
    table = summary_table(s)
    if args.summary:
        args.summary.write_text(table)
        args.summary.with_suffix(".json").write_text(json.dumps(s, indent=2) + "\n")
    print(table)
    return 1 if s["failure_count"] else 0


if __name__ == "__main__":
    sys.exit(main())
