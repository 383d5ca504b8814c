"""The GPU fragment-dump proof for corpus_fixtures/frag (scripts/gpu_fragfix_prepare.py and
gpu_fragfix_check.py), run here on a dump synthesised from the sources' own register formulas
(src/frag_common.cuh), not from rrsplice: the true map must match it byte for byte and cover
every cell, the controls must not, and the register-identity map must fail exactly on the
fixtures that reload fragments."""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest
from conftest import ROOT

SCRIPTS = ROOT / "scripts"


def _load(name):
    sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _h(v):
    return int(np.float16(v).view(np.uint16))


def _synthetic(fx, truth, ptx_text_stmts):
    """dump[lane][slot] as the hardware holds it, from the .cu's formulas and the mma order."""
    check = _load("gpu_fragfix_check")
    A = check.e4m3_codes(fx["A_values"])
    B = check.e4m3_codes(fx["B_values"])
    bias, D = fx["bias_values"], fx["D_values"]
    role = {}
    for st, (mt, nt, ks) in zip(ptx_text_stmts, truth["mma_order"], strict=False):
        d, a, b, c = (op.items for op in st.operands[:4])
        for j, r in enumerate(a):
            role[r.name] = ("A", mt, ks, j)
        for j, r in enumerate(b):
            role[r.name] = ("B", ks, nt, j)
        for j, r in enumerate(c):
            role.setdefault(r.name, ("C", mt, nt, j))
        for j, r in enumerate(d):
            role[r.name] = ("D", mt, nt, j)
    dump = np.zeros((32, len(fx["regs"])), np.uint32)
    for s, reg in enumerate(fx["regs"]):
        kind, x, y, j = role[reg]
        for lane in range(32):
            g, t = lane >> 2, lane & 3
            if kind == "A":
                r, k = 16 * x + g + 8 * (j & 1), 32 * y + 4 * t + 16 * (j >> 1)
                w = sum(int(A[r][k + e]) << (8 * e) for e in range(4))
            elif kind == "B":
                k, n = 32 * x + 4 * t + 16 * j, 8 * y + g
                w = sum(int(B[k + e][n]) << (8 * e) for e in range(4))
            elif kind == "C":
                n = 8 * y + 2 * t
                w = _h(bias[n]) | _h(bias[n + 1]) << 16
            else:
                r, n = 16 * x + g + 8 * j, 8 * y + 2 * t
                w = _h(D[r][n]) | _h(D[r][n + 1]) << 16
            dump[lane, s] = w
    return dump


@pytest.mark.slow
def test_fragfix_proof_on_a_synthesised_dump(tmp_path, ptxas_path):
    from rrsplice.infra import cache
    from rrsplice.ptx.select import select_function
    prep = _load("gpu_fragfix_prepare")
    check = _load("gpu_fragfix_check")
    sys.argv = ["x", "--out", str(tmp_path)]
    assert prep.main() == 0
    man = json.loads((tmp_path / "manifest.json").read_text())
    reloads = {"frag_breload", "frag_areload", "frag_triton"}
    for fx in man["fixtures"]:
        truth = json.loads((ROOT / "corpus_fixtures" / "frag" /
                            f"{fx['fixture']}.truth.json").read_text())
        m = cache.load_module(ROOT / "corpus_fixtures" / "frag" / f"{fx['fixture']}.ptx")
        fn, _ = select_function(m, None)
        mmas = [st for st in fn.statements if not st.is_label and st.base == "mma"]
        dump = _synthetic(fx, truth, mmas)
        kernel_d = np.array([[_h(v) for v in row] for row in fx["D_values"]],
                            np.uint16).view(np.uint8).ravel()
        buf = np.zeros(fx["dump_base"] + dump.size * 4, np.uint8)
        buf[:kernel_d.size] = kernel_d
        buf[fx["dump_base"]:] = dump.view(np.uint8).ravel()
        res = check.check_fixture(fx, {"orig": buf, "dump": buf})
        assert res["ok"], (fx["fixture"], res)
        assert res["map"]["mismatches"] == 0 and res["map"]["covered"]
        assert res["control_b_swap"]["mismatches"] > 0
        assert res["register_identity_differs"] is (fx["fixture"] in reloads), fx["fixture"]
