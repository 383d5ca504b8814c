#!/usr/bin/env python3
"""Build the GPU proof of generated native bodies, on a machine without a GPU.

For each real-compiler fixture (`corpus_fixtures/swin_{tiny,small,big}_sm89.ptx`, run as
sm_90) and each of its first, middle and last phases:

    rrsplice recipe new <cut> --module <fixture> --range <phase> --abi scratch
    rrsplice body new <cut>.py --lang cuda -o <cut>.cu        (+ rr_mma.h)
    rrsplice apply <cut>.py -o patched.ptx;  ptxas -c -arch=sm_90 patched.ptx
    nvcc -rdc=true -c -arch=sm_90 <cut>.cu;  nvlink patched.o body.o -o <cut>.cubin

plus a negative control per fixture: the middle cut's body with one fragment-map entry
swapped (the first two A registers staged at each other's place). Writes the cubins and a
`manifest.json` for `scripts/gpu_diff.py` under OUT (default build/gpu_body).

    python3 scripts/gpu_prepare_body.py [--out build/gpu_body] [--fixtures tiny small big]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ARCH = "sm_90"


def sh(cmd: list, what: str) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"{what} failed ({' '.join(map(str, cmd))}):\n{p.stdout}{p.stderr}")
    return p


def rr(*args) -> list:
    return [sys.executable, "-m", "rrsplice", *args]


def swap_first_two_stagings(text: str) -> tuple[str, str]:
    """The body with the values of its first two `rr_stage_a` calls exchanged."""
    calls = list(re.finditer(r"rr_stage_a\(img, [^;]*?, (\w+)\);", text))
    if len(calls) < 2:
        raise SystemExit("body has fewer than two A stagings")
    a, b = calls[0], calls[1]
    va, vb = a.group(1), b.group(1)
    out = (text[:a.start(1)] + vb + text[a.end(1):b.start(1)] + va + text[b.end(1):])
    return out, f"{va} <-> {vb} staged at each other's (row, k)"


def build(cut_dir: Path, recipe: Path, body: Path, kernel: str) -> dict:
    """apply + ptxas -c, nvcc -rdc=true -c, nvlink: the linked cubin and resources."""
    patched = cut_dir / "patched.ptx"
    sh(rr("apply", recipe, "-o", patched), f"apply {recipe.name}")
    p_o = cut_dir / "patched.o"
    log = sh(["ptxas", "-v", "-c", f"-arch={ARCH}", patched, "-o", p_o], "ptxas").stderr
    b_o = cut_dir / "body.o"
    sh(["nvcc", "-rdc=true", "-c", f"-arch={ARCH}", "-O3", "-Xptxas", "-v", body, "-o", b_o],
       "nvcc")
    linked = cut_dir / "linked.cubin"
    link = sh(["nvlink", "-v", f"-arch={ARCH}", p_o, b_o, "-o", linked], "nvlink")
    res = {}
    text = link.stdout + link.stderr
    m = re.search(r"Function properties for '" + re.escape(kernel) + r"':\s*\n[^\n]*?used (\d+) "
                  r"registers, used (\d+) barriers, (\d+) stack, (\d+) bytes smem", text)
    if m:
        res.update(registers=int(m.group(1)), barriers=int(m.group(2)),
                   stack=int(m.group(3)), smem=int(m.group(4)))
    res["patched_ptxas"] = [x for x in log.splitlines() if "Used" in x][:1]
    for f in (patched, p_o, b_o):
        f.unlink()
    return {"cubin": linked, "resources": res}


def build_inlined(cut_dir: Path, recipe: Path, body: Path, kernel: str) -> dict:
    """apply, `nvcc -rdc=true -ptx` of the body, `rrsplice body inline`, ptxas: the kernel
    with the body in place of its call (one function, no call), and its resources."""
    patched = cut_dir / "patched.ptx"
    sh(rr("apply", recipe, "-o", patched), f"apply {recipe.name}")
    b_ptx = cut_dir / "body.ptx"
    sh(["nvcc", "-rdc=true", "-ptx", "-arch=sm_89", "-O3", body, "-o", b_ptx], "nvcc -ptx")
    inlined = cut_dir / "inlined.ptx"
    sh(rr("body", "inline", patched, b_ptx, "-o", inlined), "body inline")
    cubin = cut_dir / "inlined.cubin"
    log = sh(["ptxas", "-v", f"-arch={ARCH}", inlined, "-o", cubin], "ptxas inlined").stderr
    res = {}
    m = re.search(r"Function properties for " + re.escape(kernel) + r"\n\s*(\d+) bytes stack frame"
                  r".*?Used (\d+) registers", log, re.S)
    if m:
        res.update(stack=int(m.group(1)), registers=int(m.group(2)))
    for f in (patched, b_ptx, inlined):
        f.unlink()
    return {"cubin": cubin, "resources": res}


class BuildFailed(Exception):
    """A cut whose linked kernel cannot be built (the reason, one line)."""


def cut_phase(fx, ptx, kernel, ph, i, cut, fdir):
    """Scaffold, generate and link the cut of phase i (+ the swapped control for `middle`)."""
    a, b = ph[i]["statements"]
    rng = f"s{a}-s{b}"
    cdir = fdir / cut
    if cdir.exists():
        shutil.rmtree(cdir)
    cdir.mkdir()
    name = f"gpu_{fx}_{cut}"
    recipe = cdir / f"{name}.py"
    sh(rr("recipe", "new", name, "--module", ptx, "--range", rng, "--abi", "scratch",
          "-o", recipe), f"recipe new {name}")
    chk = subprocess.run(rr("check", recipe, "--target", "zluda"), capture_output=True,
                         text=True, cwd=ROOT)
    body = cdir / f"{name}.cu"
    info = json.loads(sh(rr("body", "new", recipe, "--lang", "cuda", "-o", body,
                            "--json"), f"body new {name}").stdout)
    try:
        built = build(cdir, recipe, body, kernel)
    except SystemExit as exc:
        err = [ln for ln in str(exc).splitlines() if "error" in ln]
        raise BuildFailed((err or [str(exc)])[0].strip()) from None
    what = (f"phase {i + 1} of {len(ph)} ({ph[i]['geometry']}, {ph[i]['mma']} mma); "
            f"generated CUDA body, A staged through a {info['image']['rows']}x"
            f"{info['image']['k']} e4m3 image per warp")
    runs = [(cut, built, what, True, body, recipe)]
    if cut == "middle":
        bad_dir = fdir / "swapped"
        if bad_dir.exists():
            shutil.rmtree(bad_dir)
        bad_dir.mkdir()
        bad_text, why = swap_first_two_stagings(body.read_text())
        bad = bad_dir / f"{name}.cu"
        bad.write_text(bad_text)
        shutil.copy(cdir / "rr_mma.h", bad_dir / "rr_mma.h")
        runs.append(("swapped", build(bad_dir, recipe, bad, kernel),
                     f"negative control: the middle body with {why}", False, bad, recipe))
    return runs, rng, info, chk, cdir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "gpu_body"))
    ap.add_argument("--fixtures", nargs="+", default=["tiny", "small", "big"])
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest = {"arch": ARCH, "optimize": True, "runs": [], "fixtures": {}}
    for fx in args.fixtures:
        t0 = time.perf_counter()
        ptx = ROOT / "corpus_fixtures" / f"swin_{fx}_sm89.ptx"
        launch = ROOT / "corpus_fixtures" / f"swin_{fx}.launch.json"
        kernel = json.loads(launch.read_text())["kernel"]
        fdir = out / fx
        fdir.mkdir()
        orig = fdir / "original.cubin"
        sh(["ptxas", f"-arch={ARCH}", ptx, "-o", orig], "ptxas original")
        ph = json.loads(sh(rr("phases", ptx, "--json"), "phases").stdout)["phases"]
        mid = len(ph) // 2
        picks = {"first": [0], "middle": sorted(range(1, len(ph) - 1),
                                                key=lambda i: (abs(i - mid), i)),
                 "last": [len(ph) - 1]}
        manifest["fixtures"][fx] = {"ptx": str(ptx.relative_to(ROOT)), "kernel": kernel,
                                    "launch": str(launch.relative_to(ROOT)),
                                    "phases": len(ph),
                                    "original_cubin": str(orig.relative_to(ROOT))}
        for cut, order in picks.items():
            for i in order:
                try:
                    runs, rng, info, chk, cdir = cut_phase(fx, ptx, kernel, ph, i, cut, fdir)
                    break
                except BuildFailed as exc:
                    manifest.setdefault("skipped", []).append(
                        {"fixture": fx, "cut": cut, "phase": i + 1, "why": str(exc)})
                    print(f"{fx:6} {cut:8} phase {i + 1}: {exc}", flush=True)
            else:
                continue
            for cname, b_, w, expect, src, recipe in runs:
                manifest["runs"].append({
                    "fixture": fx, "cut": cname, "what": w, "region": rng,
                    "lines": [], "abi": ("scratch, own array" if "OWN_SCRATCH = None" not in recipe.read_text()
                            else "scratch, kernel array"),
                    "passed": len(info["args"]), "recomputed": 0,
                    "returned": len(info["returns"]),
                    "cubin": str(b_["cubin"].relative_to(ROOT)), "kernel": kernel,
                    "check_exit": chk.returncode, "expect_match": expect,
                    "resources": b_["resources"], "body": str(src.relative_to(ROOT)),
                    "recipe": str(recipe.relative_to(ROOT)), "phase": i + 1,
                    "notes": info.get("notes", [])})
                print(f"{fx:6} {cname:8} {rng:14} args={len(info['args']):4} "
                      f"returns={len(info['returns']):3} check={chk.returncode} "
                      f"{b_['resources']}", flush=True)
        print(f"{fx}: {time.perf_counter() - t0:.1f}s", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out}/manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
