#!/usr/bin/env python3
"""Match rate of every scalar model against the hardware results run_probe.py saved.

    python3 analyse.py mma_probe.npz [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import CLASSES, MODELS, evaluate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("npz")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    table = {}
    z = np.load(args.npz)
    for cls in CLASSES:
        if f"{cls}_a" in z:
            table[cls] = evaluate(z[f"{cls}_a"], z[f"{cls}_b"], z[f"{cls}_c"], z[f"{cls}_d"])
    classes = list(table)
    print("| model | " + " | ".join(classes) + " | all |")
    print("| --- | " + " | ".join("---:" for _ in classes) + " | ---: |")
    for name in MODELS:
        cells, ok, tot = [], 0, 0
        for cls in classes:
            m, _, n = table[cls][name]
            ok, tot = ok + m, tot + n
            cells.append(f"{100 * m / n:.3f}%")
        print(f"| {name} | " + " | ".join(cells) + f" | {100 * ok / tot:.4f}% ({tot - ok} off) |")
    if args.json:
        Path(args.json).write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
