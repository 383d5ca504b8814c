#!/usr/bin/env python3
"""GPU check of the shfl.sync oracle that tests/test_lift_shfl.py holds the portable
shuffle to: the hardware's shfl.sync.{up,down,bfly,idx}.b32 d|p, with `b` and `c` in
registers, on every (b, c) of that test and on a sweep of every segment mask, clamp and
lane offset, against the PTX ISA pseudo-code written in the test.

    python3 scripts/gpu_shfl_check.py [--out results.json]     # needs numpy and cupy

Exit status 0 when every lane of every case agrees.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

MODES = ("up", "down", "bfly", "idx")
SOURCE = r"""
extern "C" __global__ void shfl_cases(const unsigned *bc, unsigned n, unsigned *out)
{
    const unsigned lane = threadIdx.x;
    for (unsigned k = 0; k < n; ++k) {
        const unsigned b = bc[2 * k], c = bc[2 * k + 1];
        unsigned d[4], p[4];
        asm volatile("{.reg .pred q; shfl.sync.up.b32 %0|q, %2, %3, %4, -1; selp.u32 %1, 1, 0, q;}"
                     : "=r"(d[0]), "=r"(p[0]) : "r"(lane), "r"(b), "r"(c));
        asm volatile("{.reg .pred q; shfl.sync.down.b32 %0|q, %2, %3, %4, -1; selp.u32 %1, 1, 0, q;}"
                     : "=r"(d[1]), "=r"(p[1]) : "r"(lane), "r"(b), "r"(c));
        asm volatile("{.reg .pred q; shfl.sync.bfly.b32 %0|q, %2, %3, %4, -1; selp.u32 %1, 1, 0, q;}"
                     : "=r"(d[2]), "=r"(p[2]) : "r"(lane), "r"(b), "r"(c));
        asm volatile("{.reg .pred q; shfl.sync.idx.b32 %0|q, %2, %3, %4, -1; selp.u32 %1, 1, 0, q;}"
                     : "=r"(d[3]), "=r"(p[3]) : "r"(lane), "r"(b), "r"(c));
        for (int m = 0; m < 4; ++m)
            out[(k * 4 + m) * 32 + lane] = d[m] | (p[m] << 5);
    }
}
"""


def cases() -> list:
    from test_lift_shfl import _cases
    sweep = [(b, (seg << 8) | clamp) for seg in range(32) for clamp in range(32)
             for b in (0, 1, 3, 7, 13, 31)]
    return _cases() + sweep


def main() -> int:
    import cupy as cp
    import numpy as np
    from test_lift_shfl import _isa_shfl

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    bc = cases()
    kernel = cp.RawKernel(SOURCE, "shfl_cases")
    dev_bc = cp.asarray(np.array(bc, dtype=np.uint32).reshape(-1))
    out = cp.zeros(len(bc) * 4 * 32, dtype=cp.uint32)
    kernel((1,), (32,), (dev_bc, np.uint32(len(bc)), out))
    got = cp.asnumpy(out).reshape(len(bc), 4, 32)
    bad = []
    checked = 0
    for k, (b, c) in enumerate(bc):
        for m, mode in enumerate(MODES):
            for lane in range(32):
                src, ok = _isa_shfl(mode, lane, b, c)
                want = src | (32 if ok else 0)
                checked += 1
                if int(got[k, m, lane]) != want:
                    bad.append({"b": b, "c": c, "mode": mode, "lane": lane,
                                "gpu": int(got[k, m, lane]), "isa": want})
    result = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
              "cases": len(bc), "checked": checked, "mismatches": len(bad), "first": bad[:20]}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
