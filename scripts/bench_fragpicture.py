#!/usr/bin/env python3
"""Time `fragments --png/--svg` drawing (the picture only, the analysis loaded first) on
swin_big_sm89 phase 1 (48x96x128): the whole phase, and the default tile picture.

    python scripts/bench_fragpicture.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import inspect
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rrsplice.fragments import picture as fp  # noqa: E402
from rrsplice.fragments.report import module_maps  # noqa: E402
from rrsplice.infra import cache
from rrsplice.ptx.select import select_function  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    m = cache.load_module(ROOT / "corpus_fixtures" / "swin_big_sm89.ptx")
    fn, _ = select_function(m, None)
    pm = module_maps(fn, cache.load_analysis(m, fn), 1)[0]
    cases = [("whole phase", {})]
    if "tile" in inspect.signature(fp.png_bytes).parameters:
        cases.append(("tile (0, 0) (the default)", {"tile": (0, 0)}))
    for name, kw in cases:
        best_p = best_s = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            png = fp.png_bytes(pm, **kw)
            best_p = min(best_p, time.perf_counter() - t)
            t = time.perf_counter()
            svg = fp.svg_text(pm, **kw)
            best_s = min(best_s, time.perf_counter() - t)
        w, h = struct.unpack(">II", png[16:24])
        print(f"{name}: PNG {w}x{h} {len(png):,} bytes in {best_p:.2f} s; "
              f"SVG {len(svg):,} bytes in {best_s:.2f} s")


if __name__ == "__main__":
    main()
