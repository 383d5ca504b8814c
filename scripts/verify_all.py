#!/usr/bin/env python3
"""Run `rrsplice verify` for every repository recipe and print docs/proof.md's table.

Each recipe is verified for its module's own `.target` and, for sm_89 modules, also sm_90
and sm_120 (sm_120 modules only for sm_120). Usage:

    python scripts/verify_all.py [--optimize] > table.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrsplice.ptx.errors import RRSpliceError  # noqa: E402
from rrsplice.workflow.verify import verify  # noqa: E402

ARCHS = {"sm_89": ["sm_89", "sm_90", "sm_120"], "sm_120": ["sm_120"]}


def _target(recipe: Path) -> str:
    from rrsplice.infra.cache import load_module
    from rrsplice.workflow.recipe import load_recipe, resolve_module
    path, _ = resolve_module(load_recipe(recipe))
    return (load_module(path).target or "sm_89").split(",")[0].strip()


def _row(recipe: Path, arch: str, optimize: bool) -> str:
    rel = recipe.relative_to(ROOT)
    try:
        res = verify(recipe, arch, optimize=optimize).to_json()
    except RRSpliceError as exc:
        return f"| `{rel}` | {arch} | - | FAILED | - | - | - | {str(exc).splitlines()[0][:120]} |"
    out = res.get("outline") or {}
    steps = {s["name"]: s for s in res["steps"]}
    linked = next(iter((steps.get("nvlink", {}).get("resources") or {}).values()), {})
    body = next(iter((steps.get("ptxas body", {}).get("resources") or {}).values()), {})
    failed = [s for s in res["steps"] if not s["ok"]]
    note = ""
    if failed:
        probs = failed[0].get("problems") or [{"message": failed[0].get("log", "")[:120]}]
        p = probs[0] if isinstance(probs[0], dict) else {"message": str(probs[0])}
        stmt = f"`{p['statement']}` -- " if p.get("statement") else ""
        note = f"{failed[0]['name']}: {stmt}{p.get('message', '')}"
    io = (f"{len(out.get('passed', []))} / {len(out.get('recomputed', []))} / "
          f"{len(out.get('returned', []))}") if out else "-"
    return (f"| `{rel}` | {arch} | {res['region']} | {'ok' if res['ok'] else 'FAILED'} | {io} | "
            f"{linked.get('registers', '-')} / {linked.get('stack', '-')} | "
            f"{body.get('stack', '-')} / {body.get('spill_stores', '-')} | {note} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optimize", action="store_true", help="ptxas -O3 instead of -O0")
    args = ap.parse_args()
    print("| recipe | arch | region | verify | in / recomputed / out "
          "| linked kernel regs / stack (nvlink -v) | body stack / spill st | note |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    recipes = sorted((ROOT / "recipes").glob("*.py")) + sorted((ROOT / "recipes" / "seed").glob("*.py"))
    for recipe in recipes:
        for arch in ARCHS.get(_target(recipe), [_target(recipe)]):
            print(_row(recipe, arch, args.optimize), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
