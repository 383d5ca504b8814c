#!/usr/bin/env python3
"""Build what the GPU check of the statement rewrites and of `recipe port` needs, on a
machine without a GPU (scripts/gpu_rewrite_check.py runs it on the GPU machine).

Under OUT (default build/gpu14):

* `surface/original.cubin`: corpus_fixtures/surface_round_sm89.ptx for sm_90;
  `surface/rewritten.cubin`: the same module after recipes/zluda_surface_round.py
  (sust=True, rz_round=True), `ptxas -c`, linked with `nvlink` to PTX helper bodies that
  perform the original surface stores (rrsplice.rewrite.sust.reference_bodies);
* `variants/<v>/original.cubin` and `variants/<v>/ported.cubin` for the four aligned
  swin_tiny variants: recipes/tiny_family.py (a whole-region cut of the mvhi_hdr variant)
  ported with `rrsplice recipe port` to each other variant, applied, outlined (an identity
  body: the cut region itself), assembled and linked by `rrsplice verify`'s steps;
* `manifest.json` for scripts/gpu_diff.py (copied to OUT/scripts) and `rewrite.json`.

    python3 scripts/gpu_rewrite_prepare.py [--out build/gpu14]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrsplice.infra.tools import ptxas  # noqa: E402
from rrsplice.rewrite.sust import reference_bodies  # noqa: E402
from rrsplice.workflow.port import port_recipe  # noqa: E402
from rrsplice.workflow.splice import apply  # noqa: E402
from rrsplice.workflow.verify import verify  # noqa: E402

ARCH = "sm_90"
FIX = ROOT / "corpus_fixtures"
VARIANTS = ["mvhi_hdr", "mvhi_ldr", "mvlo_hdr", "mvlo_ldr"]


def sh(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"$ {' '.join(map(str, cmd))}\n{p.stdout}{p.stderr}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "build" / "gpu14"))
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    (out / "surface").mkdir(parents=True)
    (out / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "gpu_diff.py", out / "scripts" / "gpu_diff.py")
    shutil.copy(ROOT / "scripts" / "gpu_rewrite_check.py", out / "scripts" /
                "gpu_rewrite_check.py")

    # ---- the rewrites
    src = FIX / "surface_round_sm89.ptx"
    r = ptxas(src, ARCH, out=out / "surface" / "original.cubin", relocatable=False)
    assert r.ok, r.log
    res = apply(ROOT / "recipes" / "zluda_surface_round.py",
                out=out / "surface" / "rewritten.ptx")
    (out / "surface" / "helpers.ptx").write_text(reference_bodies())
    sh(["ptxas", f"-arch={ARCH}", "-c", out / "surface" / "rewritten.ptx", "-o",
        out / "surface" / "rewritten.o"])
    sh(["ptxas", f"-arch={ARCH}", "-c", out / "surface" / "helpers.ptx", "-o",
        out / "surface" / "helpers.o"])
    sh(["nvlink", f"-arch={ARCH}", out / "surface" / "rewritten.o", out / "surface" /
        "helpers.o", "-o", out / "surface" / "rewritten.cubin"])
    for f in ("rewritten.o", "helpers.o"):
        (out / "surface" / f).unlink()
    rewrite = {"counts": res.report.facts["rewrites"]["counts"],
               "touched": len(res.report.facts["rewrites"]["touched"])}

    # ---- ported recipes on the variants
    manifest = {"arch": ARCH, "optimize": True, "runs": [], "fixtures": {}}
    launch = json.loads((FIX / "swin_tiny.launch.json").read_text())
    ref = ROOT / "recipes" / "tiny_family.py"
    (out / "recipes").mkdir()
    for v in VARIANTS:
        ptx = FIX / f"swin_tiny_{v}_sm89.ptx"
        kernel = f"rrswin_tiny_{v}_kernel"
        vdir = out / "variants" / v
        vdir.mkdir(parents=True)
        desc = dict(launch, kernel=kernel)
        (vdir / "launch.json").write_text(json.dumps(desc, indent=1))
        orig = vdir / "original.cubin"
        r = ptxas(ptx, ARCH, out=orig, relocatable=False, optimize=True)
        assert r.ok, r.log
        if v == "mvhi_hdr":
            recipe, how = ref, "the reference recipe"
        else:
            pr = port_recipe(ref, f"{ptx}:{kernel}", out=out / "recipes" / f"tiny_{v}.py",
                             force=True)
            recipe = pr.output
            how = (f"ported: s{pr.region[0][0]}-s{pr.region[0][1]} -> "
                   f"s{pr.region[1][0]}-s{pr.region[1][1]}, {len(pr.registers)} registers "
                   "renamed in the recipe")
        vf = verify(recipe, ARCH, optimize=True, keep=vdir / "work", original=False)
        if not vf.ok:
            raise SystemExit(json.dumps(vf.to_json(), indent=1)[:4000])
        shutil.copy(vf.files["linked_cubin"], vdir / "ported.cubin")
        shutil.rmtree(vdir / "work")
        rel = lambda p: str(p.relative_to(out))  # noqa: E731
        manifest["fixtures"][v] = {"ptx": str(ptx.relative_to(ROOT)), "kernel": kernel,
                                   "launch": rel(vdir / "launch.json"),
                                   "original_cubin": rel(orig)}
        o = vf.outline
        manifest["runs"].append({"fixture": v, "cut": "ported", "what": how,
                                 "region": vf.region, "abi": o.abi, "passed": len(o.passed),
                                 "recomputed": len(o.recomputed), "returned": len(o.returned),
                                 "cubin": rel(vdir / "ported.cubin"), "check_exit": 0,
                                 "expect_match": True})
        print(v, how, vf.region, flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (out / "rewrite.json").write_text(json.dumps(rewrite, indent=1))
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out}: {total / 1e6:.1f} MB; rewrites {rewrite}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
