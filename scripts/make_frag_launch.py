#!/usr/bin/env python3
"""Write a launch description (rrsplice-launch/1) for each fragment-identity fixture.

    python3 scripts/make_frag_launch.py [--check]

The description is read off the fixture's own ground truth (`corpus_fixtures/frag/<stem>.
truth.json`: the parameters and their roles, the launch, M/N/K), so `scripts/gpu_diff.py`
and `scripts/gpu_prepare_lift.py` can launch the kernels without rrsplice deciding anything
about them. Buffers are sized from the matrices (A: M x K bytes, B: N x K bytes, the bias:
N halves, the output: M x N halves); inputs are small e4m3 codes and f16 values so the
products stay finite. `--check` compares with what is committed and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FRAG = ROOT / "corpus_fixtures" / "frag"


def buffer(role: str, name: str, m: int, n: int, k: int) -> dict:
    """One pointer parameter: its bytes and fill from its role in the truth file."""
    size = {"A": m * k, "B": n * k, "bias": 2 * n, "out": 2 * m * n}[role]
    fill = {"A": "e4m3_small", "B": "e4m3_small", "bias": "f16_unit", "out": "zero"}[role]
    return {"name": name, "kind": "buffer", "bytes": size,
            "role": "output" if role == "out" else "input", "fill": fill}


def describe(truth: dict) -> dict:
    m, n, k = truth["M"], truth["N"], truth["K"]
    desc = {"format": "rrsplice-launch/1", "kernel": truth["entry"], "source": truth["source"],
            "ptx": {"sm_89": f"{truth['entry']}.ptx"}, "ptx_runs_on": {"sm_89": ["sm_89", "sm_90"]},
            "grid": truth["launch"]["grid"], "block": truth["launch"]["block"],
            "dynamic_shared_bytes": truth["launch"]["dynamic_shared_bytes"]}
    params = truth["params"]
    if len(params) == 1 and len(params[0]["fields"]) > 1:
        fields = []
        for f in params[0]["fields"]:
            role = f["role"]
            if role in ("A", "B", "bias", "out"):
                fields.append({**buffer(role, role, m, n, k), "offset": f["offset"]})
            else:  # the struct's scalars: n is the column count, flags 0 (no sign flip)
                fields.append({"name": role, "offset": f["offset"], "kind": "i32",
                               "value": n if role == "n" else 0})
        desc["param_block"] = {"size": params[0]["size"], "align": 8, "fields": fields}
    else:
        desc["params"] = [buffer(p["fields"][0]["role"], p["name"], m, n, k) for p in params]
    return desc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    bad = 0
    for truth_path in sorted(FRAG.glob("*.truth.json")):
        stem = truth_path.name[: -len(".truth.json")]
        text = json.dumps(describe(json.loads(truth_path.read_text())), indent=2) + "\n"
        out = FRAG / f"{stem}.launch.json"
        if args.check:
            if not out.exists() or out.read_text() != text:
                print(f"{out}: differs from what the truth file gives", file=sys.stderr)
                bad = 1
        else:
            out.write_text(text)
            print(out.relative_to(ROOT))
    return bad


if __name__ == "__main__":
    sys.exit(main())
