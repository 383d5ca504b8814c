#!/usr/bin/env python3
"""Build the GPU proof of lifted whole-region bodies, on a machine without a GPU.

For each repository recipe of a real-compiler fixture (swin_{tiny,small,big}_sm89 by default;
`--fixtures` also takes any cut_call recipe whose kernel has a launch description, e.g. the
layer fixtures' recipes/layer_epi_sm89.py; sm_89 PTX is run as sm_90) and each staging mode
(`registers`, `image`):

    rrsplice body new <recipe> --staging <mode> -o <cut>.cu       (+ rr_lift.h, rr_mma.h)
    rrsplice apply <recipe> -o patched.ptx;  ptxas -c -arch=sm_90 patched.ptx
    nvcc -rdc=true -c -arch=sm_90 -O3 <cut>.cu;  nvlink patched.o body.o -o <cut>.cubin

plus two negative controls per fixture, which must mismatch:

* `rounding`: the registers body with its first `cvt.rn.f16x2.f32` lifted as `.rz` (bodies
  with no f16 conversion, the layer fixtures': `requant`, the operands of its first
  `cvt.rn.satfinite.e4m3x2.f32` exchanged; see registers_control);
* `swapped`: the image body with the values of its first two `rr_stage_a` calls exchanged;
* `b-swapped` (a region with neither to change: loads and mma only): the registers body
  with its first mma's two B registers exchanged.

Writes the cubins and a `manifest.json` for `scripts/gpu_diff.py` under OUT (default
build/gpu_lift); run there on the GPU machine:

    python3 scripts/gpu_prepare_lift.py [--out build/gpu_lift] [--fixtures tiny small big]
    python3 scripts/gpu_prepare_lift.py --fixtures recipes/layer_epi_sm89.py \
        recipes/layer_epi_fast_sm89.py RECIPE=LAUNCH.json
    python3 scripts/gpu_prepare_lift.py --out build/gpu_lift2 --recipes recipes/frag_*.py \
        recipes/tiny_family.py --staging registers image
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

from gpu_prepare_body import ARCH, build, build_inlined, rr, sh  # noqa: E402


def _pick(found: list, at: str):
    """The occurrence a control changes: the first, or the last (`--control-at last`: a
    region whose first phases see inputs a change cannot show through, e.g. the dec
    stand-ins' A fragments made from %laneid, which requantise to zero)."""
    return found[-1] if at == "last" else found[0]


def flip_rounding(body: str, header: str, at: str = "first") -> tuple:
    """The body with one `cvt.rn.f16x2.f32` (else `cvt.rn.f16.f32`) call made `.rz` (the
    rz helper added to the header). The packed form converts computed values; the scalar
    form's first use in the swin kernels converts a constant that f16 holds exactly, where
    .rn and .rz agree."""
    from rrsplice.lift.header import helper_text
    from rrsplice.lift.semantics import ROWS
    for form in ("cvt.rn.f16x2.f32", "cvt.rn.f16.f32"):
        rn, rz = ROWS[form], ROWS[form.replace(".rn.", ".rz.")]
        found = [m.start() for m in re.finditer(re.escape(rn.helper) + r"\(", body)]
        if found:
            i = _pick(found, at)
            break
    else:
        raise SystemExit("the body has no cvt.rn.f16x2.f32 or cvt.rn.f16.f32 to flip")
    line = body.count("\n", 0, i) + 1
    body = body[:i] + rz.helper + body[i + len(rn.helper):]
    if f" {rz.helper}(" not in header:
        header = header.replace("#endif /* RR_LIFT_H */",
                                helper_text(rz) + "\n\n#endif /* RR_LIFT_H */")
    return body, header, f"line {line}: {rn.form} lifted as {rz.form}"


def swap_requant(body: str, at: str = "first") -> tuple:
    """The body with the two operands of one `cvt.rn.satfinite.e4m3x2.f32` exchanged (the
    two e4m3 bytes of one requantised A half-register swapped)."""
    from rrsplice.lift.semantics import ROWS
    helper = ROWS["cvt.rn.satfinite.e4m3x2.f32"].helper
    found = list(re.finditer(re.escape(helper) + r"\((\w+), (\w+)\)", body))
    if not found:
        raise SystemExit("the body has no cvt.rn.satfinite.e4m3x2.f32 to swap")
    m = _pick(found, at)
    line = body.count("\n", 0, m.start()) + 1
    return (body[:m.start()] + f"{helper}({m.group(2)}, {m.group(1)})" + body[m.end():],
            f"line {line}: cvt.rn.satfinite.e4m3x2.f32's operands exchanged")


def swap_b_operands(body: str, at: str = "first") -> tuple:
    """The body with the two B registers of one mma exchanged (for regions with no rounding
    or requantisation to change: a phase of nothing but loads and mma)."""
    found = list(re.finditer(r"rr_mma_m16n8k32_f16_e4m3\((?:\w+, ){4}(\w+), (\w+), ", body))
    if not found:
        raise SystemExit("the body has no mma B operands to exchange")
    m = _pick(found, at)
    line = body.count("\n", 0, m.start()) + 1
    return (body[:m.start(1)] + m.group(2) + ", " + m.group(1) + body[m.end(2):],
            f"line {line}: the {at} mma's B registers {m.group(1)}, {m.group(2)} exchanged")


def registers_control(body: str, header: str, kind: str = "auto", at: str = "first") -> tuple:
    """The registers body's negative control: (name, body, header, why). With `kind`
    "auto": `rounding` (one f16 conversion lifted as .rz) where the body converts to f16;
    else `requant` (one e4m3 requantisation's operands exchanged: in the layer fixtures every
    value reaches the output through e4m3, which absorbs a one-ulp change of any single
    rounding; on the host the every-register comparison still sees one,
    tests/test_lift_run_fixtures.py); else `b-swapped`. `kind` "b-swapped" forces the last
    (a rounding change absorbed before the output, as in the dec stand-ins' sparse one)."""
    from rrsplice.lift.semantics import ROWS
    if kind == "auto" and any(ROWS[f].helper + "(" in body
                              for f in ("cvt.rn.f16x2.f32", "cvt.rn.f16.f32")):
        return ("rounding", *flip_rounding(body, header, at))
    if kind == "auto" and ROWS["cvt.rn.satfinite.e4m3x2.f32"].helper + "(" in body:
        text, why = swap_requant(body, at)
        return "requant", text, header, why
    text, why = swap_b_operands(body, at)
    return "b-swapped", text, header, why


def swap_stagings(body: str, at: str = "first") -> tuple:
    """The image body with the values of two consecutive `rr_stage_a` calls exchanged (the
    first two, or the last two)."""
    calls = list(re.finditer(r"rr_stage_a\(rr_img, [^;]*?, (\w+)\);", body))
    if len(calls) < 2:
        raise SystemExit("the image body has fewer than two A stagings")
    a, b = (calls[-2], calls[-1]) if at == "last" else (calls[0], calls[1])
    va, vb = a.group(1), b.group(1)
    return (body[:a.start(1)] + vb + body[a.end(1):b.start(1)] + va + body[b.end(1):],
            f"{va} <-> {vb} staged at each other's (row, k)")


def find_launch(recipe: Path, entry: str, module: Path) -> Path:
    """The launch description of a recipe's kernel: the one `*.launch.json` under
    corpus_fixtures/ (or beside the module) whose kernel is the recipe's entry and whose
    `ptx` names the module."""
    found = []
    for d in dict.fromkeys([module.parent, ROOT / "corpus_fixtures"]):
        for path in sorted(d.rglob("*.launch.json")):
            try:
                desc = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if desc.get("kernel") == entry and module.name in (desc.get("ptx") or {}).values():
                found.append(path.resolve())
    if not found:      # a family variant (same source, other flags) shares its base's launch
        base = module.name.split("_")[:2]
        for path in sorted((ROOT / "corpus_fixtures").glob("swin_*.launch.json")):
            if path.name.split(".")[0].split("_")[:2] == base:
                found.append(path.resolve())
    found = list(dict.fromkeys(found))
    if len(found) != 1:
        raise SystemExit(f"{recipe}: {'no' if not found else len(found)} launch description(s) "
                         f"for {entry} in {module.name}; give one as RECIPE=LAUNCH.json")
    return found[0]


def resolve_fixture(arg: str) -> tuple:
    """(name, recipe, module, launch) of a --fixtures item: `tiny`/`small`/`big` (the
    swin_*_sm89 recipes), a recipe path, or RECIPE=LAUNCH.json."""
    from rrsplice.workflow.recipe import load_recipe, resolve_module
    if "=" in arg:
        r, lp = arg.split("=", 1)
        recipe, launch = Path(r).resolve(), Path(lp).resolve()
    elif arg.endswith(".py") or "/" in arg:
        recipe, launch = Path(arg).resolve(), None
    else:
        recipe = ROOT / "recipes" / f"swin_{arg}_sm89.py"
        launch = ROOT / "corpus_fixtures" / f"swin_{arg}.launch.json"
    if not recipe.is_file():
        raise SystemExit(f"{arg}: no recipe {recipe}")
    rec = load_recipe(recipe)
    module = Path(resolve_module(rec, None)[0]).resolve()
    if launch is None:
        launch = find_launch(recipe, rec.entry, module)
    name = arg if recipe.parent == ROOT / "recipes" and "/" not in arg and "=" not in arg \
        else recipe.stem
    return name, recipe, module, launch


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "gpu_lift"))
    ap.add_argument("--fixtures", nargs="*", default=None,
                    help="tiny, small, big (the swin_*_sm89 recipes), or any cut_call recipe "
                         "whose kernel has a launch description (found under corpus_fixtures/ "
                         "by kernel and module, or given as RECIPE=LAUNCH.json), e.g. "
                         "recipes/layer_epi_sm89.py")
    ap.add_argument("--recipes", nargs="*", default=[],
                    help="more recipes, as --fixtures takes them (with no --fixtures: only these)")
    ap.add_argument("--control-at", choices=["first", "last"], default="first",
                    help="the occurrence each negative control changes")
    ap.add_argument("--registers-control", choices=["auto", "b-swapped"], default="auto",
                    help="the registers body's negative control")
    ap.add_argument("--staging", nargs="+", default=["registers", "image"],
                    choices=["registers", "image"], help="the staging modes to build")
    ap.add_argument("--inline", action="store_true",
                    help="also the registers body inlined into the kernel (`rrsplice body "
                         "inline` of its `nvcc -ptx`): the cost of the lifted code without "
                         "the call")
    args = ap.parse_args()
    items = args.fixtures if args.fixtures is not None else ([] if args.recipes else
                                                             ["tiny", "small", "big"])
    fixtures = [resolve_fixture(a) for a in items + args.recipes]
    out = Path(args.out).resolve()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    manifest = {"arch": ARCH, "optimize": True, "runs": [], "fixtures": {}}
    for fx, recipe, ptx, launch in fixtures:
        t0 = time.perf_counter()
        from rrsplice.workflow.recipe import load_recipe
        rec = load_recipe(recipe)
        kernel = rec.entry or json.loads(launch.read_text())["kernel"]
        fdir = out / fx
        fdir.mkdir()
        orig = fdir / "original.cubin"
        sh(["ptxas", f"-arch={ARCH}", ptx, "-o", orig], "ptxas original")
        manifest["fixtures"][fx] = {"ptx": _rel(ptx), "kernel": kernel, "launch": _rel(launch),
                                    "original_cubin": _rel(orig)}
        for staging in args.staging:
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
                name, text, head, why = registers_control(
                    body.read_text(), (d / "rr_lift.h").read_text(), args.registers_control,
                    args.control_at)
                (ctl / "rr_lift.h").write_text(head)
            else:
                text, why = swap_stagings(body.read_text(), args.control_at)
                name = "swapped"
            bad = ctl / body.name
            bad.write_text(text)
            runs.append((name, ctl, bad, f"negative control: {why}", False))
            if staging == "registers" and args.inline:
                idir = fdir / "inlined"
                idir.mkdir()
                for h in ("rr_lift.h", "rr_mma.h"):
                    if (d / h).exists():
                        shutil.copy(d / h, idir / h)
                shutil.copy(body, idir / body.name)
                runs.append(("inlined", idir, idir / body.name, "the registers body inlined "
                             "into the kernel (rrsplice body inline), no call", True))
            for cut, cdir, src, what, expect in runs:
                builder = build_inlined if cut == "inlined" else build
                built = builder(cdir, recipe, src, kernel)
                manifest["runs"].append({
                    "fixture": fx, "cut": cut, "what": what, "region": info["region"],
                    "lines": [], "abi": rec.const("ABI") or "scratch", "passed": 0, "recomputed": 0,
                    "returned": 0, "cubin": _rel(built["cubin"]),
                    "kernel": kernel, "check_exit": 0, "expect_match": expect,
                    "resources": built["resources"], "body": _rel(src),
                    "recipe": _rel(recipe), "notes": info["notes"]})
                print(f"{fx:6} {cut:10} {info['region']:14} {built['resources']}", flush=True)
        print(f"{fx}: {time.perf_counter() - t0:.1f}s", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"wrote {out}/manifest.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
