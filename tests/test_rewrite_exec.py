"""Rewrite rules executed: the original PTX and the rewritten PTX run in a small f32
interpreter on the same inputs -- ties, signs, zeros, the largest non-integers, integers above
2^23, infinities, NaN, subnormals -- and must give the same bits (NaN: both NaN). And the
rz_round refusals: a rounding constant or operand redefined inside the idiom.

The f32 semantics are the PTX ISA's (copysign.f32 d, a, b: b's magnitude with a's sign;
add.rz: the exact sum rounded toward zero; cvt.rzi.f32.f32: truncation; the others round to
nearest even), computed from exact rationals, independently of the rule."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from rrsplice.ptx.emit import emit
from rrsplice.ptx.parser import parse_bytes
from rrsplice.rewrite.rules import plan_rewrites
from rrsplice.rewrite.rz_round import RzRoundRule


def f32(x: float) -> float:
    return float(np.float32(x))


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def _round(exact, mode: str) -> float:
    """`exact` (a Fraction, or a non-finite float) rounded to f32 by `mode` ("rn"/"rz")."""
    if isinstance(exact, float):
        return exact
    with np.errstate(over="ignore"):
        c = float(np.float32(float(exact)))       # nearest (exact in a double here)
    if mode == "rz" and math.isfinite(c) and abs(Fraction(c)) > abs(exact):
        c = float(np.nextafter(np.float32(c), np.float32(0)))
    if mode == "rz" and math.isinf(c):
        c = math.copysign(float(np.finfo(np.float32).max), c)
    if c == 0 and exact < 0:
        c = -0.0
    return c


def _add(a: float, b: float, mode: str) -> float:
    if not (math.isfinite(a) and math.isfinite(b)):
        return a + b
    if a == 0 and b == 0:
        return a + b                                  # signed zeros: IEEE's rule
    s = Fraction(a) + Fraction(b)
    if s == 0:
        return 0.0
    return _round(s, mode)


def run(fn, regs: dict) -> dict:
    """Straight-line f32 code of `fn` on `regs` (name -> float)."""
    r = dict(regs)

    def v(op):
        if hasattr(op, "name"):
            return r[op.name]
        t = op.text
        if t[:2].lower() == "0f":
            return from_bits(int(t[2:], 16))
        return f32(float(t))
    for st in fn.statements:
        if st.is_label or st.base == "ret":
            continue
        o = st.operands
        op = st.opcode
        if op == "copysign.f32":
            r[o[0].name] = math.copysign(abs(v(o[2])), v(o[1]))
        elif st.base == "add" and st.modifiers[-1] == "f32":
            r[o[0].name] = _add(v(o[1]), v(o[2]), "rz" if "rz" in st.modifiers else "rn")
        elif st.base == "sub" and st.modifiers[-1] == "f32":
            r[o[0].name] = _add(v(o[1]), -v(o[2]), "rn")
        elif op == "abs.f32":
            r[o[0].name] = abs(v(o[1]))
        elif op == "cvt.rzi.f32.f32":
            x = v(o[1])
            r[o[0].name] = x if not math.isfinite(x) else math.copysign(float(math.trunc(x)), x)
        elif op == "setp.ge.f32":
            r[o[0].name] = v(o[1]) >= v(o[2])
        elif op == "selp.f32":
            r[o[0].name] = v(o[1]) if r[o[3].name] else v(o[2])
        elif op in ("mov.f32", "mov.b32"):
            r[o[0].name] = v(o[1])
        else:
            raise AssertionError(f"the test interpreter has no {op}")
    return r


def module(body: str) -> bytes:
    return (".version 8.0\n.target sm_89\n.address_size 64\n\n.visible .entry k()\n{\n"
            "\t.reg .f32 %f<20>;\n\t.reg .pred %p<4>;\n" + body + "\tret;\n}\n").encode()


def rewritten(src: bytes):
    m = parse_bytes(src, "k.ptx")
    plan = plan_rewrites(m, [RzRoundRule()], m.functions)
    return m, plan, parse_bytes(emit(m, plan.edits(m)), "k2.ptx")


ROUNDF = ("\tcopysign.f32 %f2, %f1, 0f3F000000;\n"
          "\tadd.rz.f32 %f3, %f1, %f2;\n"
          "\tcvt.rzi.f32.f32 %f4, %f3;\n")

EDGES = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 0.49999997, -0.49999997,
         0.50000006, 1.4999999, 2.4999998, 8388607.5, -8388607.5, 8388609.0, 16777216.0,
         1e-45, -1e-45, 1.17549435e-38, 3.4028235e38, -3.4028235e38, math.inf, -math.inf,
         math.nan, 0.7, -0.7, 123.5, -123.5, 4194303.5, 4194304.5]


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or bits(a) == bits(b)


def _inputs(seed=5, n=400):
    rng = np.random.default_rng(seed)
    halves = rng.integers(-2**22, 2**22, n) + 0.5          # every one a tie
    raw = [from_bits(int(b)) for b in rng.integers(0, 2**32, n)]
    return [f32(x) for x in EDGES] + [f32(x) for x in halves] + raw


def test_rz_round_rewrite_computes_what_the_original_computes():
    m, plan, m2 = rewritten(module(ROUNDF))
    assert len(plan.replacements) == 1 and not plan.issues
    fa, fb = m.functions[0], m2.functions[0]
    assert not any(st.base == "add" and "rz" in st.modifiers for st in fb.statements)
    bad = []
    for x in _inputs():
        want = run(fa, {"%f1": x})["%f4"]
        got = run(fb, {"%f1": x})["%f4"]
        if not _same(want, got):
            bad.append((x, want, got))
    assert not bad, bad[:5]


def test_ties_round_away_from_zero_like_the_original():
    """roundf(2.5) = 3, roundf(-2.5) = -3 in both (the original adds 0.5 toward zero)."""
    m, _plan, m2 = rewritten(module(ROUNDF))
    for x, want in [(2.5, 3.0), (-2.5, -3.0), (0.5, 1.0), (-0.5, -1.0), (1.5, 2.0)]:
        assert run(m.functions[0], {"%f1": x})["%f4"] == want
        assert run(m2.functions[0], {"%f1": x})["%f4"] == want


@pytest.mark.parametrize("between", [
    "\tmov.f32 %f2, 0f3F800000;\n",          # S redefined between the add and the cvt
    "\tmov.f32 %f1, 0f40000000;\n",          # X redefined there
    "\tmov.f32 %f3, 0f40000000;\n",          # the sum redefined there
])
def test_a_value_of_the_idiom_redefined_before_the_cvt_is_refused(between):
    src = module("\tcopysign.f32 %f2, %f1, 0f3F000000;\n\tadd.rz.f32 %f3, %f1, %f2;\n"
                 + between + "\tcvt.rzi.f32.f32 %f4, %f3;\n")
    _m, plan, _m2 = rewritten(src)
    assert not plan.replacements
    assert plan.issues and "redefined" in plan.issues[0].message


def test_operand_redefined_between_the_copysign_and_the_add_is_refused():
    """S = copysign(0.5, X) of an older X: the rewrite would take the sign from S and the
    value from the new X (original: roundf-like of 2.3 - 0.5 = 1; rewrite: 2)."""
    src = module("\tcopysign.f32 %f2, %f1, 0f3F000000;\n\tmov.f32 %f1, %f5;\n"
                 "\tadd.rz.f32 %f3, %f1, %f2;\n\tcvt.rzi.f32.f32 %f4, %f3;\n")
    m, plan, _m2 = rewritten(src)
    assert run(m.functions[0], {"%f1": -1.0, "%f5": 2.3})["%f4"] == 1.0
    assert not plan.replacements
    assert "not redefined in between" in plan.issues[0].message


def test_a_constant_other_than_one_half_is_not_the_idiom():
    src = module("\tcopysign.f32 %f2, %f1, 0f3F400000;\n\tadd.rz.f32 %f3, %f1, %f2;\n"
                 "\tcvt.rzi.f32.f32 %f4, %f3;\n")
    _m, plan, _m2 = rewritten(src)
    assert not plan.replacements and plan.issues


def test_the_half_through_a_register_redefined_is_not_the_idiom():
    src = module("\tmov.f32 %f9, 0f3F000000;\n\tmov.f32 %f9, 0f3F400000;\n"
                 "\tcopysign.f32 %f2, %f1, %f9;\n\tadd.rz.f32 %f3, %f1, %f2;\n"
                 "\tcvt.rzi.f32.f32 %f4, %f3;\n")
    _m, plan, _m2 = rewritten(src)
    assert not plan.replacements and plan.issues
