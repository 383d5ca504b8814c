#!/usr/bin/env python3
"""Build the GPU proof of lifted whole-region bodies, on a machine without a GPU.

For each repository recipe of a real-compiler fixture (swin_{tiny,small,big}_sm89, run as
sm_90) and each staging mode (`registers`, `image`):

    rrsplice body new <recipe> --staging <mode> -o <cut>.cu       (+ rr_lift.h, rr_mma.h)
    rrsplice apply <recipe> -o patched.ptx;  ptxas -c -arch=sm_90 patched.ptx
    nvcc -rdc=true -c -arch=sm_90 -O3 <cut>.cu;  nvlink patched.o body.o -o <cut>.cubin

plus two negative controls per fixture, which must mismatch:

* `rounding`: the registers body with its first `cvt.rn.f16x2.f32` lifted as `.rz`;
* `swapped`: the image body with the values of its first two `rr_stage_a` calls exchanged.

Writes the cubins and a `manifest.json` for `scripts/gpu_diff.py` under OUT (default
build/gpu_lift); run there on the GPU machine:

    python3 scripts/gpu_prepare_lift.py [--out build/gpu_lift] [--fixtures tiny small big]
    python3 scripts/gpu_diff.py build/gpu_lift/manifest.json --out lift_results.json
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from gpu_prepare_body import ARCH, build, rr, sh  # noqa: E402


#: (form, its flipped form), in order of preference: the first the body calls is flipped
FLIPS = [("cvt.rn.f16x2.f32", "cvt.rz.f16x2.f32"), ("cvt.rn.f16.f32", "cvt.rz.f16.f32"),
         ("fma.rn.f32", "fma.rm.f32"), ("fma.rn.ftz.f32", "fma.rm.f32")]


def flip_rounding(body: str, header: str) -> tuple:
    """The body with its first `cvt.rn.f16x2.f32` (else `cvt.rn.f16.f32`) call made `.rz`,
    else (bodies that convert nothing to f16: the layer fixtures) its first `fma.rn.f32`
    (else `fma.rn.ftz.f32`) made `fma.rm.f32`; the flipped helper is added to the header.
    The packed cvt form converts computed values; the scalar form's first use in the swin
    kernels converts a constant that f16 holds exactly, where .rn and .rz agree."""
    from rrsplice.lift.header import helper_text
    from rrsplice.lift.semantics import ROWS
    for form, flipped in FLIPS:
        rn, rz = ROWS[form], ROWS[flipped]
        i = body.find(rn.helper + "(")
        if i >= 0:
            break
    else:
        raise SystemExit("the body calls none of " + ", ".join(f for f, _ in FLIPS)
                         + ": nothing to flip")
    line = body.count("\n", 0, i) + 1
    body = body[:i] + rz.helper + body[i + len(rn.helper):]
    if f" {rz.helper}(" not in header:           # the body may use the flipped form too
        header = header.replace("#endif /* RR_LIFT_H */",
                                helper_text(rz) + "\n\n#endif /* RR_LIFT_H */")
    return body, header, f"line {line}: {rn.form} lifted as {rz.form}"


def swap_stagings(body: str) -> tuple:
    calls = list(re.finditer(r"rr_stage_a\(rr_img, [^;]*?, (\w+)\);", body))
    if len(calls) < 2:
        raise SystemExit("the image body has fewer than two A stagings")
    a, b = calls[0], calls[1]
    va, vb = a.group(1), b.group(1)
    return (body[:a.start(1)] + vb + body[a.end(1):b.start(1)] + va + body[b.end(1):],
            f"{va} <-> {vb} staged at each other's (row, k)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "gpu_lift"))
    ap.add_argument("--fixtures", nargs="+", default=["tiny", "small", "big"])
    args = ap.parse_args()
    out = Path(args.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest = {"arch": ARCH, "optimize": True, "runs": [], "fixtures": {}}
    for fx in args.fixtures:
        t0 = time.perf_counter()
        recipe = ROOT / "recipes" / f"swin_{fx}_sm89.py"
        ptx = ROOT / "corpus_fixtures" / f"swin_{fx}_sm89.ptx"
        launch = ROOT / "corpus_fixtures" / f"swin_{fx}.launch.json"
        kernel = json.loads(launch.read_text())["kernel"]
        fdir = out / fx
        fdir.mkdir()
        orig = fdir / "original.cubin"
        sh(["ptxas", f"-arch={ARCH}", ptx, "-o", orig], "ptxas original")
        manifest["fixtures"][fx] = {"ptx": str(ptx.relative_to(ROOT)), "kernel": kernel,
                                    "launch": str(launch.relative_to(ROOT)),
                                    "original_cubin": str(orig.relative_to(ROOT))}
        for staging in ("registers", "image"):
            d = fdir / staging
            d.mkdir()
            body = d / f"{fx}_{staging}.cu"
            info = json.loads(sh(rr("body", "new", recipe, "--staging", staging, "-o", body,
                                    "--json"), f"body new {fx} {staging}").stdout)
            runs = [(staging, d, body, f"whole region {info['region']}, {staging} staging, "
                     f"{len(info['phases'])} phases", True)]
            ctl = fdir / f"control_{staging}"
            ctl.mkdir()
            for h in ("rr_lift.h", "rr_mma.h"):
                if (d / h).exists():
                    shutil.copy(d / h, ctl / h)
            if staging == "registers":
                text, head, why = flip_rounding(body.read_text(), (d / "rr_lift.h").read_text())
                (ctl / "rr_lift.h").write_text(head)
                name = "rounding"
            else:
                text, why = swap_stagings(body.read_text())
                name = "swapped"
            bad = ctl / body.name
            bad.write_text(text)
            runs.append((name, ctl, bad, f"negative control: {why}", False))
            for cut, cdir, src, what, expect in runs:
                built = build(cdir, recipe, src, kernel)
                manifest["runs"].append({
                    "fixture": fx, "cut": cut, "what": what, "region": info["region"],
                    "lines": [], "abi": "scratch", "passed": 0, "recomputed": 0,
                    "returned": 0, "cubin": str(built["cubin"].relative_to(ROOT)),
                    "kernel": kernel, "check_exit": 0, "expect_match": expect,
                    "resources": built["resources"], "body": str(src.relative_to(ROOT)),
                    "recipe": str(recipe.relative_to(ROOT)), "notes": info["notes"]})
                print(f"{fx:6} {cut:10} {info['region']:14} {built['resources']}", flush=True)
        print(f"{fx}: {time.perf_counter() - t0:.1f}s", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out}/manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
