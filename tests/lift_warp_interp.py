"""A warp of tests/ptx_interp.py machines run in lock step, with the floating-point,
packed-half, e4m3 and warp-collective forms the swin fixtures' regions use -- the reference
the lifted whole-region bodies are run against on the host (tests/test_lift_run.py).

Semantics are written here from the PTX ISA (9.7.3 floating point, 9.7.4 half precision,
9.7.9.21 cvt, 9.7.9.6 shfl.sync, 9.7.14.5.14 the m16n8k32 fragments, 9.7.14.8 movmatrix)
with exact rationals and numpy, independently of rrsplice.lift. The `.approx` forms have no
exact definition; they follow the lifted body's host build (libm exp2f through ctypes,
1/sqrtf, 1/x), so the comparison is exact and says nothing about those three forms on a
GPU (the H200 proof does).

Straight-line regions only (labels allowed, no branches): every lane executes every
statement, so a collective sees all 32 lanes' operands.
"""

from __future__ import annotations

import bisect
import ctypes
import struct
from fractions import Fraction

import numpy as np
import ptx_interp as pi

from rrsplice.ptx.model import Imm, PredPair, Reg, Sink, Symbol, Vector

_LIBM = ctypes.CDLL("libm.so.6")
_LIBM.exp2f.restype = ctypes.c_float
_LIBM.exp2f.argtypes = [ctypes.c_float]

F16_NAN = 0x7FFF


# ---------------------------------------------------------------- exact rounding

def round_binary(x: Fraction, mant: int, emin: int, emax: int) -> tuple:
    """|x| rounded to nearest even in a binary format: (exponent field, fraction field),
    or None for an overflow (infinity)."""
    m = abs(x)
    if m == 0:
        return 0, 0
    n, d = m.numerator, m.denominator
    e = n.bit_length() - d.bit_length()          # 2^e <= m < 2^(e+1), or one above
    if (n << max(0, -e)) < (d << max(0, e)):
        e -= 1
    sub = e < emin
    e = max(e, emin)
    sh = mant - e                                # q = m * 2^sh, rounded to an integer
    num, den = (n << sh, d) if sh >= 0 else (n, d << -sh)
    fl, rem = divmod(num, den)
    if 2 * rem > den or (2 * rem == den and fl & 1):
        fl += 1
    if sub:
        return (1, 0) if fl == 1 << mant else (0, fl)
    if fl == 1 << (mant + 1):
        fl, e = fl >> 1, e + 1
    if e > emax:
        return None
    return e - emin + 1, fl - (1 << mant)


def f16_from_fraction(x: Fraction, neg_zero: bool = False) -> int:
    r = round_binary(x, 10, -14, 15)
    sign = 0x8000 if (x < 0 or (x == 0 and neg_zero)) else 0
    return sign | (0x7C00 if r is None else (r[0] << 10) | r[1])


def f32_from_fraction(x: Fraction, neg_zero: bool = False) -> int:
    r = round_binary(x, 23, -126, 127)
    sign = 0x80000000 if (x < 0 or (x == 0 and neg_zero)) else 0
    return sign | (0x7F800000 if r is None else (r[0] << 23) | r[1])


#: every f16 bit pattern's value (a table: the interpreter reads millions of halves)
_F16_VALUES = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16) \
    .astype(np.float64).tolist()


def f16_value(h: int) -> float:
    return _F16_VALUES[h & 0xFFFF]


def f16_bits_of_f64(r: float) -> int:
    """The f16 nearest (ties to even) to the double r, one rounding (struct's half packing
    rounds the double's exact mantissa once); beyond the largest finite half: infinity;
    NaN: the canonical 0x7fff."""
    if r != r:
        return F16_NAN
    try:
        return struct.unpack("<H", struct.pack("<e", r))[0]
    except OverflowError:
        return 0xFC00 if r < 0 else 0x7C00


def f32_value(u: int) -> np.float32:
    return np.array([u], dtype=np.uint32).view(np.float32)[0]


def f32_bits(x) -> int:
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def is_nan16(h: int) -> bool:
    return (h & 0x7C00) == 0x7C00 and (h & 0x3FF) != 0


def ftz32(u: int) -> int:
    return u & 0x80000000 if (u & 0x7F800000) == 0 else u


def e4m3_value(b: int):
    e, m = (b >> 3) & 15, b & 7
    if e == 15 and m == 7:
        return None
    v = Fraction(m, 512) if e == 0 else (8 + m) * Fraction(2) ** (e - 10)
    return -v if b & 0x80 else v


#: e4m3 byte -> its value in units of 2^-9 (an integer), None for NaN
_E4M3_UNITS = [None if e4m3_value(b) is None else int(e4m3_value(b) * 512) for b in range(256)]

_POS = sorted((e4m3_value(b), b) for b in range(0x7F))
_POS_V = [v for v, _ in _POS]


def f16_to_e4m3(h: int, relu: bool) -> int:
    """cvt.rn.satfinite[.relu].e4m3x2.f16x2, one half: nearest even, beyond 448 to 448,
    NaN to 0x7f; relu: every negative value (and -0) to +0."""
    if is_nan16(h):
        return 0x7F
    neg = bool(h & 0x8000)
    if relu and neg:
        return 0
    if (h & 0x7C00) == 0x7C00:
        return (0x80 if neg else 0) | 0x7E
    mag = abs(Fraction(f16_value(h)))
    if mag >= 448:
        return (0x80 if neg else 0) | 0x7E
    i = bisect.bisect_left(_POS_V, mag)
    v, b = min((_POS[j] for j in (i - 1, i) if 0 <= j < len(_POS)),
               key=lambda vb: (abs(vb[0] - mag), vb[1] & 1))
    return 0 if relu and b == 0 else (0x80 if neg else 0) | b   # -0 below 2^-10: 0x80


# ---------------------------------------------------------------- scalar forms

def _h_binop(op):
    """add/sub/mul of two f16: the double result of two halves is exact (a product has 22
    significant bits, a sum spans at most 2^-24..2^16), so rounding it once to f16 is the
    correctly rounded result, signed zeros as IEEE gives them (-0 only for -0 + -0,
    -0 - +0, or a zero product of opposite signs)."""
    def f(a, b):
        if is_nan16(a) or is_nan16(b):
            return F16_NAN
        return f16_bits_of_f64(op(_F16_VALUES[a & 0xFFFF], _F16_VALUES[b & 0xFFFF]))
    return f


def _add(x, y):
    return x + y


def _sub(x, y):
    return x - y


def _mul(x, y):
    return x * y


def _h_fma(a, b, c):
    if is_nan16(a) or is_nan16(b) or is_nan16(c):
        return F16_NAN
    x, y, z = f16_value(a), f16_value(b), f16_value(c)
    if any(np.isinf(v) for v in (x, y, z)):
        with np.errstate(all="ignore"):
            r = np.float16(np.float64(x) * np.float64(y) + np.float64(z))
        return F16_NAN if np.isnan(r) else int(np.array([r]).view(np.uint16)[0])
    p = Fraction(x) * Fraction(y)
    s = p + Fraction(z)
    psign = bool((a ^ b) & 0x8000)
    neg0 = s == 0 and p == 0 and z == 0 and psign and bool(c & 0x8000)
    return f16_from_fraction(s, neg0)


def _h_minmax(is_max):
    def f(a, b):
        if is_nan16(a):
            return F16_NAN if is_nan16(b) else b
        if is_nan16(b):
            return a
        x, y = f16_value(a), f16_value(b)
        if x == y:
            neg_a = bool(a & 0x8000)
            return (b if neg_a else a) if is_max else (a if neg_a else b)
        return (a if x > y else b) if is_max else (a if x < y else b)
    return f


def _f32_op(op, ftz):
    def f(*us):
        vs = [f32_value(ftz32(u) if ftz else u) for u in us]
        with np.errstate(all="ignore"):
            r = f32_bits(op(*vs))
        return ftz32(r) if ftz else r
    return f


def _fma32(ftz):
    def f(a, b, c):
        us = [ftz32(u) if ftz else u for u in (a, b, c)]
        vs = [f32_value(u) for u in us]
        if not all(np.isfinite(v) for v in vs):
            with np.errstate(all="ignore"):
                r = f32_bits(np.float32(np.float64(vs[0]) * np.float64(vs[1]) + np.float64(vs[2])))
        else:
            x, y, z = (Fraction(float(v)) for v in vs)
            s = x * y + z
            neg0 = s == 0 and x * y == 0 and z == 0 and \
                (bool(us[0] >> 31) != bool(us[1] >> 31)) and bool(us[2] >> 31)
            r = f32_from_fraction(s, neg0)
        return ftz32(r) if ftz else r
    return f


def _minmax32(is_max, ftz):
    def f(a, b):
        if ftz:
            a, b = ftz32(a), ftz32(b)
        x, y = f32_value(a), f32_value(b)
        if np.isnan(x):
            r = 0x7FFFFFFF if np.isnan(y) else b
        elif np.isnan(y):
            r = a
        elif x == y:
            neg_a = bool(a >> 31)
            r = (b if neg_a else a) if is_max else (a if neg_a else b)
        else:
            r = (a if x > y else b) if is_max else (a if x < y else b)
        return ftz32(r) if ftz else r
    return f


def _ex2(a):
    return ftz32(f32_bits(_LIBM.exp2f(float(f32_value(ftz32(a))))))


def _ex2_plain(a):
    return f32_bits(_LIBM.exp2f(float(f32_value(a))))


def _rcp_plain(a):
    with np.errstate(all="ignore"):
        return f32_bits(np.float32(1) / f32_value(a))


def _prmt(a, b, c):
    """prmt.b32 (default mode, PTX ISA 9.7.9.7): bytes 0-3 of the pair are a's, 4-7 b's;
    result byte i is the pair's byte c[4i+2:4i], or that byte's sign bit replicated when
    c[4i+3] is set."""
    pair = a | (b << 32)
    out = 0
    for i in range(4):
        sel = (c >> (4 * i)) & 15
        byte = (pair >> (8 * (sel & 7))) & 0xFF
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def _rsqrt(a):
    x = f32_value(ftz32(a))
    with np.errstate(all="ignore"):
        return ftz32(f32_bits(np.float32(1) / np.sqrt(x)))


def _div_approx(a, b):
    x, y = f32_value(ftz32(a)), f32_value(ftz32(b))
    with np.errstate(all="ignore"):
        r = np.float32(1) / y
        return ftz32(f32_bits(np.float32(x * np.float32(f32_value(ftz32(f32_bits(r)))))))


def f32_to_e4m3(u: int) -> int:
    """cvt.rn.satfinite.e4m3x2.f32, one element: the f32 rounded once to nearest even
    e4m3, beyond 448 to 448, NaN to 0x7f, the sign kept (-0 for tiny negatives)."""
    x = f32_value(u)
    if np.isnan(x):
        return 0x7F
    neg = bool(u >> 31)
    if np.isinf(x) or abs(Fraction(float(x))) >= 448:
        return (0x80 if neg else 0) | 0x7E
    mag = abs(Fraction(float(x)))
    i = bisect.bisect_left(_POS_V, mag)
    _v, b = min((_POS[j] for j in (i - 1, i) if 0 <= j < len(_POS)),
                key=lambda vb: (abs(vb[0] - mag), vb[1] & 1))
    return (0x80 if neg else 0) | b


def f32_round_down(x: Fraction) -> int:
    """The f32 bits of x rounded toward -infinity (x != 0)."""
    m = abs(x)
    e = -126
    while m >= Fraction(2) ** (e + 1):
        e += 1
    q = m / Fraction(2) ** (e - 23)
    fl = q.numerator // q.denominator
    if x < 0 and fl != q:
        fl += 1                      # a negative value's magnitude rounds up
    if fl == 1 << 24:
        fl, e = fl >> 1, e + 1
    sign = 0x80000000 if x < 0 else 0
    if e > 127:
        return sign | (0x7F800000 if x < 0 else 0x7F7FFFFF)
    if fl < 1 << 23:                 # subnormal (e is -126)
        return sign | fl
    return sign | ((e + 127) << 23) | (fl - (1 << 23))


def _fma_rm(a, b, c):
    vs = [f32_value(u) for u in (a, b, c)]
    if not all(np.isfinite(v) for v in vs):
        with np.errstate(all="ignore"):
            return f32_bits(np.float32(np.float64(vs[0]) * np.float64(vs[1]) + np.float64(vs[2])))
    x, y, z = (Fraction(float(v)) for v in vs)
    s = x * y + z
    if s == 0:                       # rounding down: -0 unless both addends are +0
        pos = x * y == 0 and z == 0 and (a >> 31) == (b >> 31) and not c >> 31
        return 0 if pos else 0x80000000
    return f32_round_down(s)


def _sat(a):
    x = f32_value(a)
    return 0 if np.isnan(x) or x <= 0 else (0x3F800000 if x >= 1 else a)


_LIBM.tanhf.restype = ctypes.c_float
_LIBM.tanhf.argtypes = [ctypes.c_float]


def _tanh(a):
    return f32_bits(_LIBM.tanhf(float(f32_value(a))))


def _rcp_ftz(a):
    with np.errstate(all="ignore"):
        return ftz32(f32_bits(np.float32(1) / f32_value(ftz32(a))))


def _rsqrt_plain(a):
    with np.errstate(all="ignore"):
        return f32_bits(np.float32(1) / np.sqrt(f32_value(a)))


def _f16_of_f32(a):
    x = f32_value(a)
    if np.isnan(x):
        return F16_NAN
    with np.errstate(all="ignore"):
        return int(np.array([np.float16(x)]).view(np.uint16)[0])


def _h2(f):
    return lambda a, b: f(a & 0xFFFF, b & 0xFFFF) | (f(a >> 16, b >> 16) << 16)


# form -> (destination width, source widths, function of the source bits)
FORMS = {
    "add.ftz.f32": (32, (32, 32), _f32_op(np.add, True)),
    "sub.ftz.f32": (32, (32, 32), _f32_op(np.subtract, True)),
    "mul.ftz.f32": (32, (32, 32), _f32_op(np.multiply, True)),
    "add.f32": (32, (32, 32), _f32_op(np.add, False)),
    "mul.f32": (32, (32, 32), _f32_op(np.multiply, False)),
    "fma.rn.f32": (32, (32, 32, 32), _fma32(False)),
    "fma.rn.ftz.f32": (32, (32, 32, 32), _fma32(True)),
    "max.ftz.f32": (32, (32, 32), _minmax32(True, True)),
    "min.ftz.f32": (32, (32, 32), _minmax32(False, True)),
    "ex2.approx.ftz.f32": (32, (32,), _ex2),
    "ex2.approx.f32": (32, (32,), _ex2_plain),
    "rcp.approx.f32": (32, (32,), _rcp_plain),
    "prmt.b32": (32, (32, 32, 32), _prmt),
    "rsqrt.approx.ftz.f32": (32, (32,), _rsqrt),
    "div.approx.ftz.f32": (32, (32, 32), _div_approx),
    "sub.f32": (32, (32, 32), _f32_op(np.subtract, False)),
    "div.rn.f32": (32, (32, 32), _f32_op(np.divide, False)),
    "max.f32": (32, (32, 32), _minmax32(True, False)),
    "min.f32": (32, (32, 32), _minmax32(False, False)),
    "neg.f32": (32, (32,), lambda a: a ^ 0x80000000),
    "abs.f32": (32, (32,), lambda a: a & 0x7FFFFFFF),
    "copysign.f32": (32, (32, 32), lambda a, b: (b & 0x7FFFFFFF) | (a & 0x80000000)),
    "cvt.sat.f32.f32": (32, (32,), _sat),
    "cvt.ftz.sat.f32.f32": (32, (32,), lambda a: _sat(ftz32(a))),
    "fma.rm.f32": (32, (32, 32, 32), _fma_rm),
    "tanh.approx.f32": (32, (32,), _tanh),
    "rcp.approx.ftz.f32": (32, (32,), _rcp_ftz),
    "rsqrt.approx.f32": (32, (32,), _rsqrt_plain),
    "cvt.rn.satfinite.e4m3x2.f32": (16, (32, 32),
                                    lambda a, b: f32_to_e4m3(b) | (f32_to_e4m3(a) << 8)),
    "add.f16x2": (32, (32, 32), _h2(_h_binop(_add))),
    "sub.f16x2": (32, (32, 32), _h2(_h_binop(_sub))),
    "mul.f16x2": (32, (32, 32), _h2(_h_binop(_mul))),
    "max.f16x2": (32, (32, 32), _h2(_h_minmax(True))),
    "min.f16x2": (32, (32, 32), _h2(_h_minmax(False))),
    "max.f16": (16, (16, 16), _h_minmax(True)),
    "min.f16": (16, (16, 16), _h_minmax(False)),
    "fma.rn.f16x2": (32, (32, 32, 32), lambda a, b, c: _h_fma(a & 0xFFFF, b & 0xFFFF, c & 0xFFFF)
                     | (_h_fma(a >> 16, b >> 16, c >> 16) << 16)),
    "cvt.f32.f16": (32, (16,), lambda a: F16_NAN << 16 | 0x7F800000 if False else
                    (f32_bits(np.float32(f16_value(a))) if not is_nan16(a) else
                     0x7FC00000 | ((a & 0x8000) << 16) | ((a & 0x3FF) << 13))),
    "cvt.rn.f16.f32": (16, (32,), _f16_of_f32),
    "cvt.rn.f16x2.f32": (32, (32, 32), lambda a, b: _f16_of_f32(b) | (_f16_of_f32(a) << 16)),
    "cvt.rn.satfinite.e4m3x2.f16x2": (16, (32,), lambda a: f16_to_e4m3(a & 0xFFFF, False)
                                      | (f16_to_e4m3(a >> 16, False) << 8)),
    "cvt.rn.satfinite.relu.e4m3x2.f16x2": (16, (32,), lambda a: f16_to_e4m3(a & 0xFFFF, True)
                                           | (f16_to_e4m3(a >> 16, True) << 8)),
}


def _s32(a: int) -> int:
    return a - (1 << 32) if a >> 31 else a


FORMS.update({
    "mul.wide.s32": (64, (32, 32), lambda a, b: _s32(a) * _s32(b)),
    "mul.wide.u32": (64, (32, 32), lambda a, b: a * b),
    "cvt.rn.f32.s32": (32, (32,), lambda a: f32_from_fraction(Fraction(_s32(a)))),
    "cvt.rn.f32.u32": (32, (32,), lambda a: f32_from_fraction(Fraction(a))),
})


def _bits(m: pi.Machine, op, width: int) -> int:
    if isinstance(op, Imm) and op.kind_name == "hexfloat":
        return int(op.text[2:], 16) & ((1 << width) - 1)
    if isinstance(op, Symbol) and op.name == "WARP_SZ":
        return 32
    return m.value(op, width)


def _form(st) -> str:
    return st.view.form


# ---------------------------------------------------------------- collectives

def _mma(st, lanes) -> None:
    """m16n8k32 e4m3 x e4m3 + f16 -> f16: each D element the exact sum of its 32 products
    and C, rounded once to f16 (the model docs/proof.md section 7 measured)."""
    d, a, b, c = st.operands
    A = [[None] * 32 for _ in range(16)]
    B = [[None] * 8 for _ in range(32)]
    C = [[None] * 8 for _ in range(16)]
    for ln, m in enumerate(lanes):
        g, t = ln >> 2, ln & 3
        ar = [m.value(r, 32) for r in a.items]
        br = [m.value(r, 32) for r in b.items]
        cr = [m.value(r, 32) for r in c.items]
        for i in range(4):
            row = g + 8 * (i & 1)
            for e in range(4):
                A[row][16 * (i >> 1) + 4 * t + e] = (ar[i] >> (8 * e)) & 0xFF
        for j in range(2):
            for e in range(4):
                B[16 * j + 4 * t + e][g] = (br[j] >> (8 * e)) & 0xFF
        for j in range(2):
            for e in range(2):
                C[g + 8 * j][2 * t + e] = (cr[j] >> (16 * e)) & 0xFFFF
    D = [[0] * 8 for _ in range(16)]
    for r in range(16):
        arow = [_E4M3_UNITS[x] for x in A[r]]
        for n in range(8):
            bcol = [_E4M3_UNITS[B[k][n]] for k in range(32)]
            cbits = C[r][n]
            if None in arow or None in bcol or is_nan16(cbits):
                D[r][n] = F16_NAN
                continue
            if (cbits & 0x7C00) == 0x7C00:         # an infinite C stays infinite
                D[r][n] = cbits
                continue
            dot = sum(x * y for x, y in zip(arow, bcol, strict=False))       # units of 2^-18
            s = Fraction(dot, 1 << 18) + Fraction(f16_value(cbits))
            D[r][n] = f16_from_fraction(s, s == 0 and dot == 0 and bool(cbits & 0x8000))
    for ln, m in enumerate(lanes):
        g, t = ln >> 2, ln & 3
        for j in range(2):
            m.write(d.items[j], D[g + 8 * j][2 * t] | (D[g + 8 * j][2 * t + 1] << 16), 32)


def _shfl(st, lanes) -> None:
    mode = next(x for x in st.modifiers if x in ("up", "down", "bfly", "idx"))
    d, a, b, c, _mask = st.operands
    dst, pdst = (d.first, d.second) if isinstance(d, PredPair) else (d, None)
    vals = [m.value(a, 32) for m in lanes]
    out = []
    for ln, m in enumerate(lanes):
        bb, cc = _bits(m, b, 32) & 31, _bits(m, c, 32)     # bval = b[4:0]
        seg, clamp = (cc >> 8) & 31, cc & 31
        lo = ln & seg
        hi = lo | (clamp & ~seg)
        j = {"up": ln - bb, "down": ln + bb, "bfly": ln ^ bb,
             "idx": (bb & ~seg) | lo}[mode]
        ok = j >= hi if mode == "up" else j <= hi      # the ISA's maxLane bounds both
        out.append((vals[j] if ok else vals[ln], ok))
    for m, (v, ok) in zip(lanes, out, strict=False):
        m.write(dst, v, 32)
        if pdst is not None and not isinstance(pdst, Sink):
            m.write(pdst, int(ok), 1)


def _movmatrix(st, lanes) -> None:
    d, a = st.operands
    M = [[0] * 8 for _ in range(8)]
    for ln, m in enumerate(lanes):
        v = m.value(a, 32)
        M[ln >> 2][2 * (ln & 3)] = v & 0xFFFF
        M[ln >> 2][2 * (ln & 3) + 1] = v >> 16
    for ln, m in enumerate(lanes):
        r, c0 = ln >> 2, 2 * (ln & 3)
        m.write(d, M[c0][r] | (M[c0 + 1][r] << 16), 32)


def _ldmatrix(st, lanes) -> None:
    """ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16 (PTX ISA 9.7.14.5.15): lanes
    8i..8i+7 give the row addresses of matrix i (eight b16 each); register i of lane l holds
    row l/4, elements 2(l%4) and 2(l%4)+1 of matrix i, or with .trans elements (2(l%4), l/4)
    and (2(l%4)+1, l/4)."""
    mods = {x.split("::")[0] for x in st.modifiers}
    count = next((int(x[1:]) for x in mods if x in ("x1", "x2", "x4")), None)
    if count is None or not {"m8n8", "shared", "b16"} <= mods or \
            mods - {"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "shared", "b16"}:
        raise pi.Unsupported(f"{st.opcode}: only ldmatrix.sync.aligned.m8n8.x{{1,2,4}}"
                             "[.trans].shared.b16")
    trans = "trans" in mods
    d, addr = st.operands
    rows = []
    for ln in range(8 * count):
        sp, a = lanes[ln].address(addr, "shared")
        if sp != "shared" or a % 16:
            raise pi.Unsupported(f"{st.opcode}: row address {a:#x} of lane {ln}")
        lanes[ln].in_window("shared", a, st.opcode)
        rows.append(a)

    def elem(m, i, r, c):        # b16 element (row r, column c) of matrix i
        a = rows[8 * i + r] + 2 * c
        return (m.load("shared", a & ~3, 32) >> (8 * (a & 3))) & 0xFFFF
    items = d.items if isinstance(d, Vector) else (d,)
    if len(items) != count:
        raise pi.Unsupported(f"{st.opcode}: {len(items)} destinations")
    for ln, m in enumerate(lanes):
        r, c = ln >> 2, 2 * (ln & 3)
        for i, reg in enumerate(items):
            lo, hi = ((elem(m, i, c, r), elem(m, i, c + 1, r)) if trans
                      else (elem(m, i, r, c), elem(m, i, r, c + 1)))
            m.write(reg, lo | hi << 16, 32)


# ---------------------------------------------------------------- one lane

def _lane(st, m: pi.Machine) -> None:
    form = _form(st)
    ops = st.operands
    if form in FORMS:
        dw, sws, f = FORMS[form]
        m.write(ops[0], f(*(_bits(m, o, w) for o, w in zip(ops[1:], sws, strict=False))), dw)
        return
    if st.base == "mov" and (isinstance(ops[0], Vector) or isinstance(ops[1], Vector)):
        w = st.view.type.bits
        if isinstance(ops[1], Vector):
            part = w // len(ops[1].items)
            v = 0
            for i, x in enumerate(ops[1].items):
                v |= _bits(m, x, part) << (part * i)
            m.write(ops[0], v, w)
        else:
            part = w // len(ops[0].items)
            v = _bits(m, ops[1], w)
            for i, x in enumerate(ops[0].items):
                if not isinstance(x, Sink):
                    m.write(x, v >> (part * i), part)
        return
    if st.base == "setp" and "f32" in st.modifiers:
        _setp_f32(st, m)
        return
    if form == "selp.f32":
        m.write(ops[0], _bits(m, ops[1] if m.pred(ops[3]) else ops[2], 32), 32)
        return
    if st.base == "mov" and isinstance(ops[0], Reg):
        w = st.view.type.bits
        m.write(ops[0], _bits(m, ops[1], w), w)
        return
    mods = st.modifiers
    if st.base in ("ld", "st"):     # a float load or store moves bits
        mods = tuple({"f32": "b32", "f64": "b64", "f16": "b16"}.get(x, x) for x in mods)
    pi._execute(st, st.base, mods, ops, m)


#: the ordered float comparisons (false when either operand is NaN)
_FCMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}


def _setp_f32(st, m: pi.Machine) -> None:
    """setp.<cmp>[.ftz].f32 p[|q], a, b (no combining operator): q = !p."""
    cmp = next(x for x in st.modifiers if x in _FCMP)
    if any(x in ("and", "or", "xor") for x in st.modifiers):
        raise pi.Unsupported(f"{st.opcode}: a combining setp")
    ftz = "ftz" in st.modifiers
    a, b = (f32_value(ftz32(v) if ftz else v)
            for v in (_bits(m, o, 32) for o in st.operands[1:3]))
    r = bool(_FCMP[cmp](a, b)) and not (cmp == "ne" and (np.isnan(a) or np.isnan(b)))
    d = st.operands[0]
    if isinstance(d, PredPair):
        m.write(d.first, int(r), 1)
        if not isinstance(d.second, Sink):
            m.write(d.second, int(not r), 1)
    else:
        m.write(d, int(r), 1)


_COLLECTIVE = {"mma": _mma, "shfl": _shfl, "movmatrix": _movmatrix, "ldmatrix": _ldmatrix}


def run_warp(fn, lanes: list, first: int, last: int) -> None:
    """Statements first..last of `fn` on every lane, in lock step."""
    for i in range(first, last + 1):
        st = fn.statements[i - 1]
        if st.is_label:
            continue
        if st.base in ("bra", "brx", "ret", "exit"):
            raise pi.Unsupported(f"s{i}: control flow in a warp run")
        active = [m for m in lanes if st.guard is None or
                  m.pred(st.guard.reg) != st.guard.negated]
        if st.base in _COLLECTIVE:
            if len(active) != len(lanes):
                raise pi.Unsupported(f"s{i}: a collective on part of the warp")
            _COLLECTIVE[st.base](st, lanes)
            continue
        if st.base in ("bar", "barrier"):
            continue
        for m in active:
            _lane(st, m)
