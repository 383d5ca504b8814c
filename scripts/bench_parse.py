#!/usr/bin/env python3
"""Benchmark rrsplice.parse against two baselines on one PTX file.

    python3 scripts/bench_parse.py FILE [--repeat N] [--json]

Four parsers, each measured in its own fresh subprocess (so peak memory is per parser):
  rrsplice   rrsplice.parse(bytes) -> Module: every statement with its number, lines, span,
             block and registers' scopes; an instruction whose operands cannot fail to parse
             keeps its text and is decoded (guard, opcode, typed operands), with all the
             others of its module, on the first read of any of them (the parse errors are
             all reported by the parse itself)
  rrsplice+ops  the same, then one operand read, which decodes every instruction: the cost
             of the parse when the operands are used
  re         a plain `re` line scanner: drops comments, joins lines until ';', splits each
             statement into guard / opcode / operand strings
  lark-tree  a one-token-per-operand Lark LALR grammar over the same file that builds a
             parse tree (no transformer), the design rrsplice's statement-level grammar avoids

Each subprocess imports, reads the file, parses it once untimed (warm-up: grammar tables,
caches), then times N parses and reports the best wall time (the machine may be shared),
the CPU time of that run (lines per CPU second is the figure that other load on a shared
machine does not distort), peak RSS (resource.getrusage, the process high-water mark; "+parse"
is the growth over the RSS before the first parse) and the tracemalloc peak of one extra
parse. Lines are physical lines of the file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- baseline 1: re scanner

_GUARD_OP = re.compile(r"\s*(?:@(!?%?[\w$]+)\s+)?([a-z][\w$]*(?:(?:\.|::)[\w$]+)*)\s*(.*)$", re.S)
_OPERANDS = re.compile(r"\{[^}]*\}|\[[^\]]*\]|\([^)]*\)|[^,\s][^,]*")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def re_scan(text: str) -> list:
    """Statements as (guard, opcode, [operand strings]); labels as ("label", name)."""
    text = _BLOCK_COMMENT.sub("", text)
    out = []
    append = out.append
    pending = ""
    for line in text.split("\n"):
        code = line.split("//", 1)[0].strip()
        if not code:
            continue
        pending = pending + " " + code if pending else code
        if not pending.endswith((";", "{", "}", ":")):
            continue
        for part in pending.split(";"):
            part = part.strip().strip("{}").strip()
            if not part or part[0] == "." or part[0] == ")":
                continue
            if part.endswith(":"):
                append(("label", part[:-1]))
                continue
            m = _GUARD_OP.match(part)
            if m is not None:
                append((m.group(1), m.group(2), _OPERANDS.findall(m.group(3))))
        pending = ""
    return out


# ---------------------------------------------------------------- baseline 2: Lark, one token per operand

LARK_GRAMMAR = r"""
start: _top*
_top: HEADER | decl | function
function: attr* FUNC ret? NAME params? perf* (block | ";")
ret: "(" param ")"
params: "(" [param ("," param)*] ")"
param: attr+ NAME dims*
perf: ATTR INT ("," INT)*
attr: ATTR
    | ATTR INT
block: "{" _item* "}"
_item: decl | instr | label | block | LOC | PRAGMA
decl: attr+ var ("," var)* ";"
var: (NAME | REG) range? dims*
range: "<" INT ">"
dims: "[" INT? "]"
label: NAME ":"
instr: guard? (OPCODE | NAME) [operand ("," operand)*] ";"
guard: "@" NOT? (REG | NAME)
?operand: REG | NAME | INT | HEXF | FLOAT | vector | address | list | pair | neg | "-" INT -> negint
pair: (REG | NAME | vector) "|" (REG | NAME)
neg: NOT REG
vector: "{" operand ("," operand)* "}"
list: "(" [operand ("," operand)*] ")"
address: "[" (REG | NAME | INT) offset? ("," operand)* "]"
offset: "+" "-"? INT

HEADER.3: /\.(version|target|address_size)[^\n]*/
FUNC.3: /\.(entry|func)\b/
LOC.3: /\.loc[^\n]*/
PRAGMA.3: /\.pragma[^;]*;/
ATTR: /\.[A-Za-z_][\w$]*/
OPCODE.2: /[a-z][\w$]*(?:(?:\.|::)[\w$]+)+/
REG: /%[A-Za-z_$][\w$]*(?:\.[xyzwrgba])?/
HEXF.2: /0[fFdD][0-9a-fA-F]{8,16}/
FLOAT: /\d+\.\d+/
INT: /(0[xX][0-9a-fA-F]+|\d+)U?/
NAME: /[A-Za-z_$][\w$]*/
NOT: "!"
COMMENT: /\/\/[^\n]*|\/\*(.|\n)*?\*\//
%import common.WS
%ignore WS
%ignore COMMENT
"""


# ---------------------------------------------------------------- worker (one subprocess per parser)

def _worker(mode: str, path: str, repeat: int) -> dict:
    import gc
    import tracemalloc

    data = Path(path).read_bytes()
    if mode == "rrsplice":
        sys.path.insert(0, str(ROOT))
        import rrsplice

        def run():
            return rrsplice.parse(data)
    elif mode == "rrsplice+ops":
        sys.path.insert(0, str(ROOT))
        import rrsplice

        def run():
            m = rrsplice.parse(data)
            for f in m.functions:
                for st in f.statements:
                    _ = st.operands     # the first read decodes the module's pending ones
                    break
            return m
    elif mode == "re":
        def run():
            return re_scan(data.decode("utf-8"))
    elif mode == "lark-tree":
        from lark import Lark
        parser = Lark(LARK_GRAMMAR, parser="lalr", lexer="contextual")

        def run():
            return parser.parse(data.decode("utf-8"))
    else:
        raise SystemExit(f"unknown mode {mode}")

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run()   # warm-up, and the count of what was produced
    if mode.startswith("rrsplice"):
        produced = sum(len(f.statements) for f in result.functions)
    elif mode == "re":
        produced = len(result)
    else:
        produced = sum(1 for t in result.iter_subtrees() if t.data in ("instr", "label"))
    del result
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        result = run()
        w1, c1 = time.perf_counter(), time.process_time()
        del result
        if w1 - w0 < best_wall:
            best_wall, best_cpu = w1 - w0, c1 - c0
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gc.collect()
    tracemalloc.start()
    run()
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"mode": mode, "wall_s": best_wall, "cpu_s": best_cpu, "statements": produced,
            "peak_rss_mb": rss_peak / 1024, "rss_before_mb": rss_before / 1024,
            "tracemalloc_peak_mb": traced_peak / 2**20}


def _measure(mode: str, path: str, repeat: int) -> dict:
    p = subprocess.run([sys.executable, __file__, "--worker", mode, path, "--repeat", str(repeat)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{mode} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {model}, " \
           f"Python {sys.version.split()[0]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per parser (best is kept)")
    ap.add_argument("--json", action="store_true", help="print only JSON")
    ap.add_argument("--only", action="append", choices=["rrsplice", "rrsplice+ops", "re", "lark-tree"])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(_worker(args.worker, args.file, args.repeat)))
        return 0
    data = Path(args.file).read_bytes()
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    results = []
    for mode in args.only or ["rrsplice", "rrsplice+ops", "re", "lark-tree"]:
        r = _measure(mode, args.file, args.repeat if mode != "lark-tree" else max(1, args.repeat // 3))
        r["lines_per_s"] = lines / r["wall_s"]
        r["lines_per_cpu_s"] = lines / r["cpu_s"] if r["cpu_s"] > 0 else None
        results.append(r)
    base = next((r for r in results if r["mode"] == "re"), None)
    for r in results:
        r["x_re"] = r["wall_s"] / base["wall_s"] if base else None
    report = {"file": args.file, "lines": lines, "bytes": len(data), "machine": _machine(),
              "repeat": args.repeat, "results": results}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.file}: {lines:,} lines, {len(data):,} bytes")
    print(f"machine: {report['machine']}; best of {args.repeat} (lark-tree: best of "
          f"{max(1, args.repeat // 3)})")
    print(f"{'parser':<12} {'lines/s':>10} {'wall s':>8} {'cpu s':>7} {'lines/cpu s':>11} {'x re':>6} "
          f"{'peak RSS MB':>12} {'+parse MB':>10} {'tracemalloc MB':>15} {'statements':>11}")
    for r in results:
        print(f"{r['mode']:<12} {r['lines_per_s']:>10,.0f} {r['wall_s']:>8.3f} {r['cpu_s']:>7.3f} "
              f"{r['lines_per_cpu_s'] or 0:>11,.0f} "
              f"{r['x_re'] if r['x_re'] is not None else float('nan'):>6.2f} {r['peak_rss_mb']:>12.1f} "
              f"{r['peak_rss_mb'] - r['rss_before_mb']:>10.1f} "
              f"{r['tracemalloc_peak_mb']:>15.1f} {r['statements']:>11,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
