"""Every exact semantics row's portable implementation (the HIP and host code of
rrsplice.lift.semantics), compiled for the host with g++ and checked bit for bit against
references written here from the PTX ISA with numpy and exact rationals: all 65,536 f16
inputs for the unary f16 forms, every e4m3 byte, random operands otherwise."""

from __future__ import annotations

import subprocess
from fractions import Fraction

import numpy as np
import pytest

from rrsplice.lift.header import header_text
from rrsplice.lift.semantics import C_TYPES, ROWS

_DRIVER = r"""
#include <cstdio>
#include <cstring>
#define RR_HOST_TEST 1
#include "rr_lift.h"
thread_local rr_u32 rr_host_tid[3], rr_host_ntid[3], rr_host_ctaid[3];
rr_u8 rr_host_shared[16];
rr_u32 rr_host_exchange(rr_u32 v, int) { return v; }
void rr_host_barrier(void) {}
template <class T> static T get() { unsigned long long v; if (scanf("%llx", &v) != 1) throw 1;
    T t; std::memcpy(&t, &v, sizeof t); return t; }
template <class T> static void put(T t) { unsigned long long v = 0; std::memcpy(&v, &t, sizeof t);
    printf("%llx\n", v); }
int main() {
    char form[64]; long n;
    while (scanf("%63s %ld", form, &n) == 2) {
@DISPATCH@
    }
}
"""


def _dispatch(rows) -> str:
    out = []
    for r in rows:
        args = ", ".join(f"get<{C_TYPES[t]}>()" if t != "pred" else "get<rr_u8>() != 0"
                         for t in r.srcs)
        # evaluation order of the arguments must be left to right: read into locals
        reads = "".join(f"{C_TYPES[t] if t != 'pred' else 'bool'} x{i} = "
                        f"{'get<' + C_TYPES[t] + '>()' if t != 'pred' else 'get<rr_u8>() != 0'}; "
                        for i, t in enumerate(r.srcs))
        call = f"{r.helper}({', '.join(f'x{i}' for i in range(len(r.srcs)))})"
        res = f"put<rr_u8>({call} ? 1 : 0)" if r.dst == "pred" else f"put({call})"
        out.append(f'        if (!strcmp(form, "{r.form}")) for (long i = 0; i < n; ++i) '
                   f"{{ {reads}{res}; }}")
        del args
    return "\n".join(out)


pytestmark = pytest.mark.slow        # g++ and 65,536-input sweeps


@pytest.fixture(scope="module", params=["software", "f16-hardware"])
def helpers(tmp_path_factory, request):
    """The helpers as the host build has them (`software`), and with the f16 conversions
    and arithmetic through _Float16 (`f16-hardware`: the C the HIP build compiles to
    gfx12's v_cvt/v_add/v_pk_*_f16; the host compiler's _Float16 rounds the same way)."""
    d = tmp_path_factory.mktemp("helpers")
    rows = [r for r in ROWS.values() if r.exact]
    (d / "rr_lift.h").write_text(header_text(rows))
    driver = _DRIVER.replace("@DISPATCH@", _dispatch(rows))
    if request.param == "f16-hardware":
        driver = driver.replace("#define RR_HOST_TEST 1", "#define RR_HOST_TEST 1\n"
                                "#define RR_LIFT_F16_NATIVE 1")
    (d / "drv.cpp").write_text(driver)
    subprocess.run(["g++", "-std=c++20", "-O1", "-ffp-contract=off", "-w", str(d / "drv.cpp"),
                    "-o", str(d / "drv")], check=True, capture_output=True, text=True)

    def call(form: str, operands: list) -> list:
        """operands: a list of tuples of bit patterns -> result bit patterns."""
        text = f"{form} {len(operands)}\n" + "\n".join(" ".join(f"{x:x}" for x in t)
                                                     for t in operands)
        r = subprocess.run([str(d / "drv")], input=text + "\n", capture_output=True,
                           text=True, check=True)
        return [int(x, 16) for x in r.stdout.split()]
    # the hardware path keeps the NaN the hardware gives (ZLUDA's), not PTX's 0x7fff
    call.canonical_nan = request.param == "software"
    return call


ALL_F16 = np.arange(65536, dtype=np.uint32)


def _f16(bits):
    return np.asarray(bits, dtype=np.uint16).view(np.float16)


def test_cvt_f32_f16_every_f16(helpers):
    got = np.array(helpers("cvt.f32.f16", [(int(h),) for h in ALL_F16]), dtype=np.uint32)
    want = _f16(ALL_F16).astype(np.float32).view(np.uint32)
    nan = np.isnan(_f16(ALL_F16))
    assert (got[~nan] == want[~nan]).all()
    assert np.isnan(got[nan].view(np.float32)).all()


def _e4m3_value(b: int):
    s = -1 if b & 0x80 else 1
    e, m = (b >> 3) & 15, b & 7
    if e == 15 and m == 7:
        return None
    return s * (Fraction(m, 8) * Fraction(1, 64) if e == 0 else
                (1 + Fraction(m, 8)) * Fraction(2) ** (e - 7))


_E4M3 = sorted({(_e4m3_value(b), b) for b in range(256) if _e4m3_value(b) is not None
                and not (b == 0x80)})


_POS = [(v, b) for v, b in _E4M3 if v >= 0]
_POS_VALUES = [v for v, _ in _POS]


def _ref_e4m3(h: int, relu: bool) -> int:
    """f16 bits -> e4m3, round to nearest even, satfinite, NaN 0x7f, relu: negatives to
    +0 (PTX ISA 9.7.9.21, cvt with .e4m3x2)."""
    import bisect
    x = _f16([h])[0]
    if np.isnan(x):
        return 0x7F
    neg = bool(h & 0x8000)
    if relu and neg:
        return 0
    if not np.isfinite(x) or abs(Fraction(float(x))) >= 448:
        return (0x80 if neg else 0) | 0x7E
    mag = abs(Fraction(float(x)))
    i = bisect.bisect_left(_POS_VALUES, mag)
    cands = [_POS[j] for j in (i - 1, i) if 0 <= j < len(_POS)]
    best = min(cands, key=lambda vb: (abs(vb[0] - mag), vb[1] & 1))
    b = best[1]
    if relu and b == 0:
        return 0
    return (0x80 if neg else 0) | b


def test_cvt_e4m3x2_f16x2_every_f16_in_both_halves(helpers):
    ref = {}
    for relu, form in ((False, "cvt.rn.satfinite.e4m3x2.f16x2"),
                       (True, "cvt.rn.satfinite.relu.e4m3x2.f16x2")):
        want = [_ref_e4m3(int(h), relu) for h in ALL_F16]
        ref[relu] = want
        lo = helpers(form, [(int(h),) for h in ALL_F16])
        assert [x & 0xFF for x in lo] == want
        hi = helpers(form, [(int(h) << 16 | 0x3C00,) for h in ALL_F16[::7]])
        assert [x >> 8 for x in hi] == want[::7]


def test_cvt_f16x2_e4m3x2_every_byte_pair(helpers):
    pairs = [(b1 << 8 | b0,) for b1 in range(256) for b0 in range(256)]
    got = helpers("cvt.rn.f16x2.e4m3x2", pairs)
    for (p,), g in zip(pairs[::97], got[::97], strict=False):
        for byte, half in ((p & 0xFF, g & 0xFFFF), (p >> 8, g >> 16)):
            v = _e4m3_value(byte)
            if v is None:
                assert (half & 0x7C00) == 0x7C00 and half & 0x3FF
            else:
                assert Fraction(float(_f16([half])[0])) == v or (v == 0 and half & 0x7FFF == 0)


def test_cvt_rn_f16_f32_random_and_every_f16_boundary(helpers):
    rng = np.random.default_rng(1)
    xs = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    # midpoints between neighbouring f16 values: the ties
    h = _f16(np.arange(0, 0x7BFF, 13, dtype=np.uint32)).astype(np.float64)
    mids = ((h[:-1] + h[1:]) / 2).astype(np.float32).view(np.uint32)
    xs = np.concatenate([xs, mids])
    got = np.array(helpers("cvt.rn.f16.f32", [(int(x),) for x in xs]), dtype=np.uint32)
    want = xs.view(np.float32).astype(np.float16).view(np.uint16).astype(np.uint32)
    nan = np.isnan(xs.view(np.float32))
    assert (got[~nan] == want[~nan]).all()
    assert (got[nan] == 0x7FFF).all() if helpers.canonical_nan else \
        np.isnan(_f16(got[nan])).all()


def test_cvt_rn_f16x2_f32_both_halves(helpers):
    """cvt.rn.f16x2.f32 d, a, b: d's upper half is a rounded, its lower half b (PTX ISA
    9.7.9.21), each to nearest even; ties, overflow and f16 subnormals in both operands."""
    rng = np.random.default_rng(4)
    h = _f16(np.arange(0, 0x7BFF, 11, dtype=np.uint32)).astype(np.float64)
    mids = ((h[:-1] + h[1:]) / 2).astype(np.float32).view(np.uint32)
    pool = np.concatenate([rng.integers(0, 2 ** 32, 6000, dtype=np.uint64).astype(np.uint32),
                           mids, mids | np.uint32(0x80000000)])
    a, b = rng.permutation(pool), rng.permutation(pool)
    got = np.array(helpers("cvt.rn.f16x2.f32", [(int(x), int(y)) for x, y in zip(a, b, strict=True)]),
                   dtype=np.uint32)
    for half, src in ((got >> 16, a), (got & 0xFFFF, b)):
        want = src.view(np.float32).astype(np.float16).view(np.uint16).astype(np.uint32)
        nan = np.isnan(src.view(np.float32))
        assert (half[~nan] == want[~nan]).all()
        assert np.isnan(_f16(half[nan])).all()


@pytest.mark.parametrize("form,op", [("add.f16x2", np.add), ("sub.f16x2", np.subtract),
                                     ("mul.f16x2", np.multiply)])
def test_f16x2_arithmetic_random_pairs(helpers, form, op):
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    got = np.array(helpers(form, list(zip(map(int, a), map(int, b), strict=False))), dtype=np.uint32)
    for sh in (0, 16):
        x, y = _f16((a >> sh) & 0xFFFF), _f16((b >> sh) & 0xFFFF)
        with np.errstate(all="ignore"):
            want = op(x.astype(np.float64), y.astype(np.float64)).astype(np.float16)
        g = _f16((got >> sh) & 0xFFFF)
        nan = np.isnan(want)
        assert (g[~nan].view(np.uint16) == want[~nan].view(np.uint16)).all()
        halves = (got >> sh) & 0xFFFF
        assert (halves[nan] == 0x7FFF).all() if helpers.canonical_nan else \
            np.isnan(_f16(halves[nan])).all()


def test_fma_rn_f16x2_against_exact_rationals(helpers):
    rng = np.random.default_rng(3)
    # finite, non-NaN halves
    def finite(n):
        v = rng.integers(0, 0x7BFF, n) | (rng.integers(0, 2, n) << 15)
        return v.astype(np.uint32)
    n = 4000
    a, b, c = finite(n), finite(n), finite(n)
    got = helpers("fma.rn.f16x2", list(zip(map(int, a), map(int, b), map(int, c), strict=False)))
    for i in range(n):
        exact = Fraction(float(_f16([a[i]])[0])) * Fraction(float(_f16([b[i]])[0])) \
            + Fraction(float(_f16([c[i]])[0]))
        want = _round_f16(exact)
        assert (got[i] & 0xFFFF) == want, (hex(a[i]), hex(b[i]), hex(c[i]), hex(got[i]), hex(want))


def _round(x: Fraction, mant: int, emin: int, emax: int, inf: int) -> int:
    """Exact rational -> bits of a binary format with `mant` fraction bits, minimum normal
    exponent `emin`, maximum `emax`; round to nearest even, overflow to infinity."""
    if x == 0:
        return 0
    sign = (1 << (mant + (emax - emin + 2).bit_length())) if x < 0 else 0
    m = abs(x)
    e = emin
    while m >= Fraction(2) ** (e + 1) and e < emax:
        e += 1
    q = m / Fraction(2) ** (e - mant)
    fl = q.numerator // q.denominator
    rem = q - fl
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl & 1):
        fl += 1
    if m < Fraction(2) ** emin:          # subnormal: fl counts units of 2^(emin - mant)
        bits = fl
    else:
        bits = ((e - emin + 1) << mant) + fl - (1 << mant)
    return min(bits, inf) | sign


def _round_f16(x: Fraction) -> int:
    return _round(x, 10, -14, 15, 0x7C00) & 0xFFFF | (0x8000 if x < 0 else 0)


def _round_f32(x: Fraction) -> int:
    return _round(x, 23, -126, 127, 0x7F800000) & 0x7FFFFFFF | (0x80000000 if x < 0 else 0)


def _ftz(x):
    x = np.asarray(x, dtype=np.float32)
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.copysign(np.float32(0), x), x)


@pytest.mark.parametrize("form,op", [("add.ftz.f32", np.add), ("sub.ftz.f32", np.subtract),
                                     ("mul.ftz.f32", np.multiply), ("add.f32", np.add)])
def test_f32_arithmetic_random(helpers, form, op):
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    # and some subnormals
    a[:500] &= 0x807FFFFF
    got = np.array(helpers(form, list(zip(map(int, a), map(int, b), strict=False))), dtype=np.uint32)
    x, y = a.view(np.float32), b.view(np.float32)
    with np.errstate(all="ignore"):
        want = _ftz(op(_ftz(x), _ftz(y))) if "ftz" in form else op(x, y)
    nan = np.isnan(want)
    assert (got[~nan] == want[~nan].view(np.uint32)).all()
    assert np.isnan(got[nan].view(np.float32)).all()


def test_fma_rn_ftz_f32_random(helpers):
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal(5000).astype(np.float32) for _ in range(3))
    a[:300] *= np.float32(2.0 ** -120)          # products and sums near the subnormals
    c[:300] *= np.float32(2.0 ** -125)
    got = helpers("fma.rn.ftz.f32", list(zip(*(map(int, v.view(np.uint32))
                                               for v in (a, b, c)), strict=False)))
    for i in range(5000):
        fx, fy, fz = (_ftz(v[i]) for v in (a, b, c))
        x, y, z = (Fraction(float(v)) for v in (fx, fy, fz))
        want = _round_f32(x * y + z)
        if x * y + z == 0:       # IEEE zero signs: -0 only from (-0) + (-0)
            psign = bool(np.signbit(fx)) != bool(np.signbit(fy))
            want = 0x80000000 if (x * y == 0 and z == 0 and psign and np.signbit(fz)) else 0
        if (want & 0x7F800000) == 0:
            want &= 0x80000000                   # .ftz of the result
        assert got[i] == want, (a[i], b[i], c[i], hex(got[i]), hex(want))


def _min_max_ref(x, y, is_max: bool):
    """PTX min/max (ISA 9.7.3.10/11): one NaN operand ignored, -0 below +0; None where
    both are NaN."""
    if np.isnan(x) and np.isnan(y):
        return None
    if np.isnan(x) or np.isnan(y):
        return y if np.isnan(x) else x
    if x == y:                                  # equal: only +-0 differ in their bits
        return x if bool(np.signbit(x)) != is_max else y
    return max(x, y) if is_max else min(x, y)


def _check_min_max(helpers, form, width, a, b):
    """Both halves (f16x2) or the word (f32) against _min_max_ref. The hardware path
    (`f16-hardware`) is held to it except where both operands are NaN or zeros (its NaN
    and zero sign are the instruction's); the software path everywhere, NaN as 0x7fff /
    0x7fffffff."""
    got = helpers(form, list(zip(map(int, a), map(int, b), strict=True)))
    is_max = form.startswith("max")
    utype, ftype = (np.uint16, np.float16) if width == 16 else (np.uint32, np.float32)
    mask = (1 << width) - 1
    checked = 0
    for ai, bi, g in zip(a, b, got, strict=True):
        for sh in range(0, 32, width):
            xa, xb = int(ai) >> sh & mask, int(bi) >> sh & mask
            x, y = utype(xa).view(ftype), utype(xb).view(ftype)
            want = _min_max_ref(x, y, is_max)
            gh = int(g) >> sh & mask
            both_zero = x == 0 and y == 0
            if want is None:
                if helpers.canonical_nan:
                    assert gh == (0x7FFF if width == 16 else 0x7FFFFFFF), (form, xa, xb, gh)
                continue
            if both_zero and not helpers.canonical_nan:
                assert gh & (mask >> 1) == 0, (form, xa, xb, gh)
                continue
            wbits = int(ftype(want).view(utype))
            assert gh == wbits, (form, hex(xa), hex(xb), hex(gh), hex(wbits))
            checked += 1
    assert checked > len(a) // 2


def _operands_with_specials(rng, n, width):
    """Random words, with NaNs, infinities, +-0 and equal pairs mixed in."""
    a = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    sp = ([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x3C00] if width == 16 else
          [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0x3F800000])
    pick = rng.integers(0, len(sp), (n, 4))
    sel = rng.integers(0, 5, n)
    for i in range(n):
        w = sp[pick[i, 0]] | (sp[pick[i, 1]] << 16 if width == 16 else 0)
        v = sp[pick[i, 2]] | (sp[pick[i, 3]] << 16 if width == 16 else 0)
        if sel[i] == 0:
            a[i] = w
        elif sel[i] == 1:
            b[i] = w
        elif sel[i] == 2:
            b[i] = a[i]
        elif sel[i] == 3:                       # both special: +0 against -0, NaN pairs
            a[i], b[i] = w, v
    return a, b


@pytest.mark.parametrize("form", ["min.f16x2", "max.f16x2"])
def test_f16x2_min_max_both_halves(helpers, form):
    rng = np.random.default_rng(6)
    a, b = _operands_with_specials(rng, 6000, 16)
    _check_min_max(helpers, form, 16, a, b)


@pytest.mark.parametrize("form", ["min.f32", "max.f32"])
def test_f32_min_max(helpers, form):
    rng = np.random.default_rng(12)
    a, b = _operands_with_specials(rng, 6000, 32)
    _check_min_max(helpers, form, 32, a, b)


@pytest.mark.parametrize("form", ["add.s32", "sub.s64", "mul.lo.s32", "mad.lo.s32", "rem.s32",
                                  "div.s32", "shr.s32", "shl.b64", "mul.wide.s32",
                                  "mul.wide.u32", "min.s32", "max.u32", "cvt.s64.s32"])
def test_integer_rows_random(helpers, form):
    rng = np.random.default_rng(7)
    row = ROWS[form]
    bits = {"u16": 16, "u32": 32, "u64": 64}
    ops = [tuple(int(rng.integers(0, 2 ** bits[t], dtype=np.uint64)) if bits[t] < 64 else
                 int(rng.integers(0, 2 ** 63)) * 2 + int(rng.integers(0, 2)) for t in row.srcs)
           for _ in range(3000)]
    if form in ("rem.s32", "div.s32"):
        ops = [(a, b if b else 1) for a, b in ops]
    if form.startswith("sh"):
        ops = [(a, b % 80) for a, b in ops]
    got = helpers(form, ops)
    w = {"u16": 16, "u32": 32, "u64": 64}[row.dst]

    def s(v, n):
        return v - (1 << n) if v >> (n - 1) else v
    base, ty = form.split(".")[0], form.split(".")[-1]
    n = int(ty[1:])
    for o, g in zip(ops, got, strict=False):
        a = s(o[0], n) if ty[0] == "s" else o[0]
        b = (s(o[1], n) if ty[0] == "s" and not base.startswith("sh") else o[1]) \
            if len(o) > 1 else None
        if base == "add":
            r = a + b
        elif base == "sub":
            r = a - b
        elif form.startswith("mul.lo") or form.startswith("mul.wide"):
            r = a * b
        elif base == "mad":
            r = a * b + s(o[2], n)
        elif base == "rem":
            r = abs(a) % abs(b) * (-1 if a < 0 else 1)
        elif base == "div":
            q = abs(a) // abs(b)
            r = -q if (a < 0) != (b < 0) else q
        elif base == "shr":
            r = a >> min(b, n - 1) if ty[0] == "s" else (a >> b if b < n else 0)
        elif base == "shl":
            r = a << b if b < n else 0
        elif base == "min":
            r = min(a, b)
        elif base == "max":
            r = max(a, b)
        elif base == "cvt":
            r = s(o[0], 32)
        assert g == r & ((1 << w) - 1), (form, o, g)


def _isa_prmt(a: int, b: int, c: int) -> int:
    """prmt.b32, default mode (PTX ISA 9.7.9.7): the eight bytes are {b, a} (a's bytes
    0-3, b's 4-7); result byte i is byte c[4i+2:4i], or its msb replicated when c[4i+3]."""
    pair = a | b << 32
    out = 0
    for i in range(4):
        nib = c >> 4 * i & 15
        byte = pair >> 8 * (nib & 7) & 0xFF
        out |= (0xFF * (byte >> 7) if nib & 8 else byte) << 8 * i
    return out


def test_prmt_every_selector(helpers):
    """All 65,536 selectors (the helper maps each to a v_perm_b32 selector and repairs the
    even bytes' signs; the host runs that mapping against the instruction's byte table) on
    operands whose bytes alternate in sign, and on random ones."""
    rng = np.random.default_rng(11)
    pairs = [(0x80FF017F, 0x7E81FE00), (0x017F80FF, 0xFE007E81)]
    pairs += [tuple(int(x) for x in rng.integers(0, 2 ** 32, 2, dtype=np.uint64))
              for _ in range(2)]
    ops = [(a, b, c) for a, b in pairs for c in range(65536)]
    got = helpers("prmt.b32", ops)
    bad = [(o, g) for o, g in zip(ops, got, strict=True) if g != _isa_prmt(*o)]
    assert not bad, (len(bad), bad[:3])


def _round_f32_down(x: Fraction) -> int:
    """Exact rational (nonzero) -> f32 bits rounded toward -infinity, from the two
    nearest-even neighbours: the largest f32 not above x."""
    r = _round_f32(x)
    v = Fraction(float(np.array([r], dtype=np.uint32).view(np.float32)[0])) \
        if (r & 0x7F800000) != 0x7F800000 else None
    if v is None:                          # nearest-even overflowed
        return 0x7F7FFFFF if x > 0 else 0xFF800000
    if v <= x:
        return r
    # one step down: toward -inf
    if r == 0 or r == 0x80000000:
        return 0x80000001
    return r + 1 if r >> 31 else r - 1


def test_fma_rm_f32_against_exact_rationals(helpers):
    """fma.rm.f32 (nvcc's expf range reduction): a*b + c rounded toward -inf, every sign,
    near the subnormals and at exact zeros, against the exact rational rounded down."""
    rng = np.random.default_rng(8)
    n = 6000
    a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    a[:400] *= np.float32(2.0 ** -70)      # products near and below the subnormals
    b[:400] *= np.float32(2.0 ** -70)
    c[:200] = 0
    c[200:400] *= np.float32(2.0 ** -135)
    a[400:600] = 1.0                       # exact cancellations: 1 * b + (-b)
    c[400:600] = -b[400:600]
    a[600:650] = np.float32(3.0e38)        # overflow both ways
    b[600:650] = np.where(np.arange(50) % 2, 4.0, -4.0).astype(np.float32)
    c[650:700] = -0.0
    a[650:700] = 0.0
    got = helpers("fma.rm.f32", list(zip(*(map(int, v.view(np.uint32)) for v in (a, b, c)),
                                         strict=False)))
    for i in range(n):
        x, y, z = (Fraction(float(v[i])) for v in (a, b, c))
        s = x * y + z
        if s == 0:
            both_pos = x * y == 0 and z == 0 and not np.signbit(c[i]) and \
                (np.signbit(a[i]) == np.signbit(b[i]))
            want = 0 if both_pos else 0x80000000
        else:
            want = _round_f32_down(s)
        assert got[i] == want, (a[i], b[i], c[i], hex(got[i]), hex(want))


def test_cvt_sat_and_copysign_f32_random_bits(helpers):
    rng = np.random.default_rng(9)
    a = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    a[:100] = [0x80000000, 0, 0x3F800000, 0xBF800000, 0x7FC00000, 0xFFC00001, 0x7F800000,
               0xFF800000, 0x00000001, 0x3F7FFFFF] * 10
    a[100:5000] = rng.uniform(-0.5, 1.5, 4900).astype(np.float32).view(np.uint32)
    got = np.array(helpers("cvt.sat.f32.f32", [(int(x),) for x in a]), dtype=np.uint32)
    x = a.view(np.float32)
    with np.errstate(invalid="ignore"):
        want = np.where(np.isnan(x) | (x <= 0), np.float32(0),
                        np.minimum(x, np.float32(1))).astype(np.float32).view(np.uint32)
    assert (got == want).all()                     # NaN and -0 both give +0
    b = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
    got = np.array(helpers("copysign.f32", list(zip(map(int, a), map(int, b), strict=False))),
                   dtype=np.uint32)
    assert (got == ((b & 0x7FFFFFFF) | (a & 0x80000000))).all()


def _ref_e4m3_of_f32(u: int) -> int:
    """f32 bits -> e4m3, rounded once to nearest even, satfinite, NaN 0x7f, sign kept."""
    import bisect
    x = np.array([u], dtype=np.uint32).view(np.float32)[0]
    if np.isnan(x):
        return 0x7F
    neg = bool(u >> 31)
    if not np.isfinite(x) or abs(Fraction(float(x))) >= 448:
        return (0x80 if neg else 0) | 0x7E
    mag = abs(Fraction(float(x)))
    i = bisect.bisect_left(_POS_VALUES, mag)
    cands = [_POS[j] for j in (i - 1, i) if 0 <= j < len(_POS)]
    return (0x80 if neg else 0) | min(cands, key=lambda vb: (abs(vb[0] - mag), vb[1] & 1))[1]


def test_cvt_e4m3x2_f32_ties_and_random(helpers):
    """cvt.rn.satfinite.e4m3x2.f32 d, a, b (a to the high byte): every midpoint between
    neighbouring e4m3 values and one f32 ulp either side (where rounding through f16 to
    nearest would round twice), random f32 and the specials."""
    mids = [(v0 + v1) / 2 for (v0, _), (v1, _) in zip(_POS, _POS[1:], strict=False)]
    xs = []
    for m in mids:
        u = int(np.array([float(m)], dtype=np.float32).view(np.uint32)[0])
        xs += [u - 1, u, u + 1, u ^ 0x80000000, (u + 1) ^ 0x80000000]
    rng = np.random.default_rng(10)
    xs += rng.uniform(-500, 500, 3000).astype(np.float32).view(np.uint32).tolist()
    xs += rng.integers(0, 2 ** 32, 3000, dtype=np.uint64).astype(np.uint32).tolist()
    xs += [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x3A800000]
    pairs = [(xs[i], xs[-1 - i]) for i in range(len(xs))]
    got = helpers("cvt.rn.satfinite.e4m3x2.f32", pairs)
    for (a, b), g in zip(pairs, got, strict=True):
        assert g == (_ref_e4m3_of_f32(a) << 8 | _ref_e4m3_of_f32(b)), (hex(a), hex(b), hex(g))
