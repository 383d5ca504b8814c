#!/usr/bin/env python3
"""Build everything the GPU differential check needs, on a machine without a GPU.

For each real-compiler fixture (`corpus_fixtures/swin_{tiny,small,big}_sm89.ptx`, compiled
for sm_90) this writes, under OUT (default `build/gpu`):

* the original kernel's cubin (`ptxas -arch=sm_90`, optimised);
* one linked cubin (patched kernel + outlined body, `ptxas -c` + `nvlink`) per cut:
    - `whole`: the repository recipe `recipes/swin_<fixture>_sm89.py` (the whole mma region,
      returns through the .shared scratch array, per-thread slots, `bar.sync 0` after the
      scratch reads, which the outliner mirrors before the body's stores);
    - `first`: phases 1..k, k = N // 2, scaffolded with `rrsplice recipe new --abi param`
      (the cut ends after phase k's last mma, or after the scoped `{ }` block that follows
      it; returns as `.param`;
      the .shared array the region uses is passed as an address);
    - `second`: from that boundary to the end of the region, `--abi scratch`;
    - `dropped`: the `first` recipe with one returned mma accumulator removed (the negative
      control; `rrsplice check` must reject it, and the GPU comparison must differ);
* `manifest.json`, which `scripts/gpu_diff.py` reads on the GPU machine.

    python3 scripts/gpu_prepare.py [--out build/gpu] [--fixtures tiny small big] [-O0]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrsplice.infra.tools import ptxas  # noqa: E402
from rrsplice.outline import OutlineError  # noqa: E402
from rrsplice.workflow.verify import prepare, verify  # noqa: E402

ARCH = "sm_90"


def sh(cmd: list) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)


def phases(ptx: Path) -> list:
    p = sh([sys.executable, "-m", "rrsplice", "phases", str(ptx), "--json"])
    if p.returncode != 0:
        raise SystemExit(p.stdout + p.stderr)
    return json.loads(p.stdout)["phases"]


def scaffold(name: str, ptx: Path, rng: str, abi: str, out: Path) -> Path:
    dest = out / f"{name}.py"
    p = sh([sys.executable, "-m", "rrsplice", "recipe", "new", name, "--module", str(ptx),
            "--range", rng, "--abi", abi, "-o", str(dest), "--force"])
    if p.returncode != 0:
        raise SystemExit(f"recipe new {name} failed:\n{p.stdout}{p.stderr}")
    return dest


def boundary(ptx: Path, last: int) -> int:
    """The first statement from `last` on after which both sides are outside any scoped
    `{ }` block (a phase's last mma can be followed at once by an inline-asm block)."""
    from rrsplice.ptx.parser import parse
    fn = next(f for f in parse(ptx).functions if f.has_body)
    st = fn.statements
    b = last
    while b < len(st) and (st[b - 1].depth or st[b].depth):
        b += 1
    return b


def _recipe_range(recipe: Path) -> str:
    p = sh([sys.executable, "-m", "rrsplice", "check", str(recipe), "--json"])
    facts = json.loads(p.stdout)
    st = facts.get("facts", facts).get("statements")
    if isinstance(st, str):
        return st
    return f"s{st[0]}-s{st[1]}"


def _mma_dests(ptx: Path) -> set:
    from rrsplice.ptx.parser import parse
    out = set()
    for st in parse(ptx).mma_statements():
        out.update(r.name for r in st.operands[0].registers())
    return out


def drop_return(src: Path, dest: Path, ptx: Path) -> str:
    """Copy recipe `src` to `dest` with one RET_REGS entry removed -- the last mma
    accumulator half among them (a value, not a shuffle mask, so the kernel runs and its
    output differs); returns it."""
    dests = _mma_dests(ptx)
    text = src.read_text()
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RET_REGS"
                                                for t in node.targets):
            regs = ast.literal_eval(node.value)
            drop = [r for r in regs if r in dests][-1:] or regs[-1:]
            keep = [r for r in regs if r not in drop]
            lines = text.splitlines(keepends=True)
            new = (f"RET_REGS = [  # negative control: {drop[0]} dropped\n"
                   + "".join(f"    {r!r},\n" for r in keep) + "]\n")
            out = "".join(lines[:node.lineno - 1]) + new + "".join(lines[node.end_lineno:])
            dest.write_text(out)
            return drop[0]
    raise SystemExit(f"{src}: no RET_REGS")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "gpu"))
    ap.add_argument("--fixtures", nargs="+", default=["tiny", "small", "big"])
    ap.add_argument("-O0", dest="o0", action="store_true",
                    help="Assemble without optimisation (faster; times are not meaningful).")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    (out / "recipes").mkdir(parents=True)
    optimize = not args.o0
    manifest = {"arch": ARCH, "optimize": optimize, "runs": [], "fixtures": {}}
    for fx in args.fixtures:
        t0 = time.perf_counter()
        ptx = ROOT / "corpus_fixtures" / f"swin_{fx}_sm89.ptx"
        launch = ROOT / "corpus_fixtures" / f"swin_{fx}.launch.json"
        kernel = json.loads(launch.read_text())["kernel"]
        fdir = out / fx
        fdir.mkdir()
        orig = fdir / "original.cubin"
        res = ptxas(ptx, ARCH, out=orig, relocatable=False, optimize=optimize)
        if not res.ok:
            raise SystemExit(res.log)
        ph = phases(ptx)
        # the boundary: after phase k = N // 2 (earlier only if that part cannot be
        # outlined; `recipe new --abi param` passes the .shared arrays the region uses)
        for k in range(len(ph) // 2, 0, -1):
            cut_at = boundary(ptx, ph[k - 1]['statements'][1])
            first = f"s{ph[0]['statements'][0]}-s{cut_at}"
            first_recipe = scaffold(f"gpu_{fx}_first", ptx, first, "param", out / "recipes")
            try:
                prepare(first_recipe)
                break
            except OutlineError as exc:
                print(f"{fx}: phases 1-{k} with --abi param: {exc}", flush=True)
        second = f"s{cut_at + 1}-s{ph[-1]['statements'][1]}"
        whole_recipe = ROOT / "recipes" / f"swin_{fx}_sm89.py"
        cuts = [("whole", whole_recipe, f"phases 1-{len(ph)} (the repository recipe)"),
                ("first", first_recipe, f"phases 1-{k}, {first}"),
                ("second", scaffold(f"gpu_{fx}_second", ptx, second, "scratch",
                                    out / "recipes"),
                 f"epilogue {k} and phases {k + 1}-{len(ph)}, {second}")]
        dropped = out / "recipes" / f"gpu_{fx}_dropped.py"
        reg = drop_return(first_recipe, dropped, ptx)
        cuts.append(("dropped", dropped, f"the `first` cut with {reg} not read back"))
        manifest["fixtures"][fx] = {"ptx": str(ptx.relative_to(ROOT)), "kernel": kernel,
                                    "launch": str(launch.relative_to(ROOT)),
                                    "phases": len(ph), "original_cubin":
                                        str(orig.relative_to(ROOT)),
                                    "original_resources": _res(res, kernel)}
        for cut, recipe, what in cuts:
            chk = sh([sys.executable, "-m", "rrsplice", "check", str(recipe)])
            cdir = fdir / cut
            v = verify(recipe, ARCH, optimize=optimize, keep=cdir, original=False,
                       check=(cut != "dropped"))
            if not v.ok:
                raise SystemExit(json.dumps(v.to_json(), indent=1)[:6000])
            linked = Path(v.files["linked_cubin"])
            keep = fdir / f"{cut}.cubin"
            shutil.copy(linked, keep)
            for f in cdir.iterdir():       # only the cubins travel to the GPU machine
                if f.suffix in (".o", ".cubin"):
                    f.unlink()
            o = v.outline
            manifest["runs"].append({
                "fixture": fx, "cut": cut, "what": what, "recipe": str(recipe.relative_to(ROOT)),
                "kernel": kernel, "region": v.region, "lines": list(v.lines),
                "abi": o.abi, "passed": len(o.passed), "recomputed": len(o.recomputed),
                "returned": len(o.returned), "cubin": str(keep.relative_to(ROOT)),
                "check_exit": chk.returncode,
                "check_errors": [ln for ln in chk.stdout.splitlines() if "error" in ln][:5],
                "resources": v.resource_table(), "expect_match": cut != "dropped"})
            print(f"{fx:6} {cut:8} {v.region:14} abi={o.abi:8} passed={len(o.passed):4} "
                  f"returned={len(o.returned):3} check_exit={chk.returncode}", flush=True)
        print(f"{fx}: {time.perf_counter() - t0:.1f}s", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out}/manifest.json; {total / 1e6:.1f} MB under {out}")
    return 0


def _res(res, kernel):
    for r in res.resources:
        if r.function == kernel:
            return {"registers": r.registers, "stack": r.stack,
                    "spill_stores": r.spill_stores, "spill_loads": r.spill_loads}
    return {}


if __name__ == "__main__":
    sys.exit(main())
