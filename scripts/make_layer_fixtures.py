#!/usr/bin/env python3
"""Generate the transformer-layer fixtures (corpus_fixtures/layer/), their ground truth,
launch descriptions and whole-layer recipes.

Compiles corpus_fixtures/src/layer_epi.cu three times with `nvcc -arch=sm_89 -ptx -O3
-std=c++17`: plain (`rrlayer_kernel`: tanhf, expf and the divide as nvcc's accurate
sequences -- copysign, fma.rm, cvt.sat, ex2, rcp, div.rn), with --use_fast_math
(`rrlayer_fast_kernel`: tanh.approx, ex2.approx, div.approx, the .ftz forms) and with
-DRRLAYER_CVT_EARLY (`rrlayer_cvt_kernel`: the plain kernel, but phases 1-3 convert each
finished tile's accumulators to f32 right after its last mma, so the epilogue's first
`mov.b32`/`cvt.f32.f16` lie between the mma of the other tiles). Writes, per kernel,
corpus_fixtures/layer/<stem>_sm89.ptx, <stem>.truth.json (from the source's phase table and
layout, written here without rrsplice: the four phases' geometry and mma count, the
epilogue between each pair, where every phase's B fragments and bias seeds live in the
weight image) and <stem>.launch.json (the 48-byte parameter block, the buffers and their
fills), and, for the first two, recipes/<stem>_sm89.py: the whole layer -- the first mma
of phase 1 to the last mma of phase 4, every epilogue between -- scaffolded with
`rrsplice recipe new`.

    python3 scripts/make_layer_fixtures.py            # regenerate (needs nvcc, ptxas)
    python3 scripts/make_layer_fixtures.py --check    # exit 1 if a file would change

Deterministic: nvcc runs from the repository root on relative paths without -lineinfo.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SRC = Path("corpus_fixtures/src/layer_epi.cu")
OUT = Path("corpus_fixtures/layer")
FLAGS = ["-arch=sm_89", "-ptx", "-O3", "-std=c++17"]
MMA = "mma.sync.aligned.m16n8k32.row.col.f16.e4m3.e4m3.f16"

# stem, entry, extra flags, what the epilogues compile to
KERNELS = [
    dict(stem="layer_epi", entry="rrlayer_kernel", flags=[],
         what="accurate math: tanhf/expf as copysign, fma.rm, cvt.sat, ex2.approx.ftz, "
              "rcp.approx.ftz sequences; div.rn; rsqrt.approx"),
    dict(stem="layer_epi_fast", entry="rrlayer_fast_kernel",
         flags=["--use_fast_math", "-DRRLAYER_NAME=rrlayer_fast_kernel"],
         what="--use_fast_math: tanh.approx, ex2.approx.ftz, div.approx.ftz, "
              "rsqrt.approx.ftz and the .ftz arithmetic"),
    # no recipe: a fixture for the phase analysis (docs/phases.md), not another lift target
    dict(stem="layer_epi_cvt", entry="rrlayer_cvt_kernel",
         flags=["-DRRLAYER_CVT_EARLY", "-DRRLAYER_NAME=rrlayer_cvt_kernel"], recipe=False,
         early_cvt=[1, 2, 3],
         what="accurate math as rrlayer_kernel; phases 1-3 convert each finished tile to f32 "
              "(mov.b32 + cvt.f32.f16) right after its chain's last mma, interleaved with the "
              "remaining mma of the phase"),
]

# mirrors kPh in src/layer_epi.cu: (m-tiles, n-tiles, k-slices), the epilogue after it
PHASES = [((2, 8, 2), "residual add + layer norm"), ((2, 8, 2), "gelu (tanh form)"),
          ((2, 4, 2), "softmax"), ((2, 4, 1), None)]
GRID = 64                          # blocks of one warp; block b owns rows 32b .. 32b+31
ARGS = [("act", 0, "buffer"), ("weights", 8, "buffer"), ("residual", 16, "buffer"),
        ("ln", 24, "buffer"), ("out", 32, "buffer"), ("eps", 40, "f32"), ("flags", 44, "i32")]


def phase_bytes(mt: int, nt: int, ks: int) -> int:
    return nt * ks * 32 * 8 + nt * 4


def truth(k: dict) -> dict:
    """What the source computes where, from PHASES and its layout comment."""
    phases, off = [], 0
    for i, ((mt, nt, ks), epi) in enumerate(PHASES, 1):
        b_bytes = nt * ks * 32 * 8
        phases.append({
            "phase": i, "geometry": f"{16 * mt}x{8 * nt}x{32 * ks}", "m_tiles": mt,
            "n_tiles": nt, "k_slices": ks, "mma": mt * nt * ks, "chains": mt * nt,
            "mma_order": "m-tile, n-tile, k-slice (outer to inner)",
            "b_offset": off, "b_bytes": b_bytes,
            "b_layout": "[n-tile][k-slice][lane][8 bytes], loaded beside its mma",
            "bias_offsets": [off + b_bytes + 4 * n for n in range(nt)],
            "a_source": "prologue: act" if i == 1 else f"requantised epilogue of phase {i - 1}",
            "epilogue_after": epi})
        off += phase_bytes(mt, nt, ks)
    t = {"entry": k["entry"], "source": str(SRC), "what": k["what"],
            "nvcc": " ".join(["nvcc", *FLAGS, *k["flags"], "-o",
                              f"{OUT}/{k['stem']}_sm89.ptx", str(SRC)]),
            "shape": "m16n8k32", "types": "f16.e4m3.e4m3.f16", "phases": phases,
            "mma": sum(p["mma"] for p in phases), "weight_bytes": off,
            "requantisation": "cvt.rn.satfinite.e4m3x2.f32"}
    if k.get("early_cvt"):
        # rr_gemm_cvt: tile (m, n) is converted right after its chain's last mma, before the
        # first mma of the next tile; the last tile's conversion follows the phase's last mma
        t["early_cvt"] = {
            "phases": k["early_cvt"],
            "what": "each tile's two accumulator registers unpacked (mov.b32) and converted "
                    "(cvt.f32.f16) right after its chain's last mma",
            "tiles_converted_before_the_phase_ends": {
                str(i): mt * nt - 1 for i, ((mt, nt, _ks), _e) in enumerate(PHASES, 1)
                if i in k["early_cvt"]}}
    return t


def launch(k: dict, weight_bytes: int) -> dict:
    sizes = {"act": GRID * 32 * 64, "weights": weight_bytes, "residual": GRID * 32 * 64 * 2,
             "ln": 2 * 64 * 4, "out": GRID * 32 * 16 * 4}
    fills = {"act": "e4m3_small", "weights": "e4m3_small", "residual": "f16_unit",
             "ln": "f32_unit", "out": "zero"}
    layouts = {"act": "[block][32 rows][64 k] e4m3", "weights": "per phase: B [nt][ks][lane]"
               "[8 bytes], then nt f16x2 bias seeds", "residual": "[block][32 rows][64] f16",
               "ln": "gamma[64] then beta[64] f32", "out": "[block][lane][16] f16x2"}
    fields = []
    for name, off, kind in ARGS:
        f = {"name": name, "offset": off, "kind": kind}
        if kind == "buffer":
            f.update(bytes=sizes[name], role="output" if name == "out" else "input",
                     fill=fills[name], layout=layouts[name])
        else:
            f["value"] = 1e-5 if name == "eps" else 0
        fields.append(f)
    return {"format": "rrsplice-launch/1", "kernel": k["entry"], "source": str(SRC),
            "ptx": {"sm_89": f"{k['stem']}_sm89.ptx"}, "ptx_runs_on": {"sm_89": ["sm_89", "sm_90"]},
            "block": [32, 1, 1], "grid": [GRID, 1, 1], "dynamic_shared_bytes": 0,
            "param_block": {"size": 48, "align": 8, "fields": fields}}


def region(ptx: Path, entry: str) -> str:
    """sA-sB: the first and the last mma statement of the entry (rrsplice's numbering)."""
    from rrsplice.ptx.parser import parse
    fn = parse(ptx).function(entry)
    mma = [st.index for st in fn.statements if st.opcode == MMA]
    return f"s{mma[0]}-s{mma[-1]}"


def build(k: dict, out_dir: Path, recipes: Path) -> dict:
    """{repository path: bytes} of one kernel's files, built under out_dir."""
    from rrsplice.workflow.scaffold import new_recipe
    stem = k["stem"]
    ptx = out_dir / f"{stem}_sm89.ptx"
    subprocess.run(["nvcc", *FLAGS, *k["flags"], "-o", str(ptx), str(SRC)], cwd=ROOT,
                   check=True)
    for arch in ("sm_89", "sm_90"):
        subprocess.run(["ptxas", f"-arch={arch}", "-c", str(ptx), "-o", "/dev/null"],
                       check=True)
    t = truth(k)
    rng = region(ptx, k["entry"])
    t["region"] = {"statements": rng, "what": "phase 1's first mma to phase 4's last"}
    files = {f"{OUT}/{stem}_sm89.ptx": ptx.read_bytes(),
             f"{OUT}/{stem}.truth.json": (json.dumps(t, indent=1) + "\n").encode(),
             f"{OUT}/{stem}.launch.json":
                 (json.dumps(launch(k, t["weight_bytes"]), indent=1) + "\n").encode()}
    if not k.get("recipe", True):
        return files
    name = f"{stem}_sm89"
    dest = recipes / f"{name}.py"
    new_recipe(name, ptx, rng, abi="scratch", entry=k["entry"], out=dest, force=True)
    text = dest.read_text()
    module = f"layer/{stem}_sm89.ptx"
    text = re.sub(r"^MODULE = .*$", f"MODULE = {module!r}", text, count=1, flags=re.M)
    text = re.sub(r"--module\s+\S+", f"--module {OUT}/{stem}_sm89.ptx", text, count=1)
    files[f"recipes/{name}.py"] = text.encode()
    return files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    args = ap.parse_args(argv)
    changed = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in KERNELS:
            for rel, data in build(k, Path(tmp), Path(tmp)).items():
                path = ROOT / rel
                if path.exists() and path.read_bytes() == data:
                    continue
                changed.append(rel)
                if not args.check:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_bytes(data)
    for rel in changed:
        print(("would change " if args.check else "wrote ") + rel)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
