"""Scalar models of `mma.sync.m16n8k32.row.col.f16.e4m3.e4m3.f16`, and the inputs that
test them (numpy only: runs on the GPU machine and here).

Every product of two e4m3 values is exact in float64, and so is the sum of 32 of them plus an
f16 accumulator (all terms are multiples of 2^-24 below 2^23), so the "exact" quantities
below are exact; the models differ only in where they round.
"""

from __future__ import annotations

import numpy as np

CLASSES = ("normal", "wide", "subnormal", "overflow", "cancel", "special")


def e4m3_table() -> np.ndarray:
    """float64 value of each e4m3 byte (S.EEEE.MMM, bias 7, 0x7F/0xFF NaN, no infinity)."""
    out = np.empty(256)
    for b in range(256):
        s = -1.0 if b & 0x80 else 1.0
        e = (b >> 3) & 0xF
        m = b & 7
        if e == 0xF and m == 7:
            out[b] = np.nan
        elif e == 0:
            out[b] = s * m * 2.0 ** -9
        else:
            out[b] = s * (1 + m / 8) * 2.0 ** (e - 7)
    return out


E4M3 = e4m3_table()


def make_inputs(cls: str, tiles: int, rng: np.random.Generator):
    """(A [tiles,16,32] u8, B [tiles,32,8] u8, C [tiles,16,8] u16) for one input class."""
    def bytes_(shape, lo=0, hi=256):
        return rng.integers(lo, hi, shape, dtype=np.uint16).astype(np.uint8)

    def f16(vals):
        return np.asarray(vals, np.float16).view(np.uint16)

    sa, sb, sc = (tiles, 16, 32), (tiles, 32, 8), (tiles, 16, 8)
    if cls == "normal":                      # |v| < 2, as the fixtures' weights
        a, b = bytes_(sa) & 0xBF, bytes_(sb) & 0xBF
        c = f16(rng.uniform(-1, 1, sc))
    elif cls == "wide":                      # every finite e4m3, finite f16 of any size
        a, b = bytes_(sa), bytes_(sb)
        a[(a & 0x7F) == 0x7F] ^= 1
        b[(b & 0x7F) == 0x7F] ^= 1
        c = rng.integers(0, 0x10000, sc, dtype=np.uint32).astype(np.uint16)
        c[(c & 0x7C00) == 0x7C00] &= 0xBBFF
    elif cls == "subnormal":                 # subnormal e4m3 and f16, some tiny normals
        a = (bytes_(sa) & 0x87) | (bytes_(sa, 0, 2).astype(np.uint8) << 3)
        b = (bytes_(sb) & 0x87) | (bytes_(sb, 0, 2).astype(np.uint8) << 3)
        c = rng.integers(0, 0x400, sc, dtype=np.uint32).astype(np.uint16) | \
            (rng.integers(0, 2, sc, dtype=np.uint32).astype(np.uint16) << 15)
    elif cls == "overflow":                  # near e4m3's 448: sums beyond f16's 65504
        a = bytes_(sa, 0x68, 0x7F) | (bytes_(sa, 0, 2) << 7)
        b = bytes_(sb, 0x68, 0x7F) | (bytes_(sb, 0, 2) << 7)
        c = f16(rng.uniform(-65504, 65504, sc))
    elif cls == "cancel":                    # k 16..31 cancel k 0..15 up to a few bytes
        a, b = bytes_(sa) & 0xBF, bytes_(sb) & 0xBF
        a[:, :, 16:] = a[:, :, :16] ^ 0x80
        b[:, 16:, :] = b[:, :16, :]
        flip = rng.random(sa) < 0.03
        a[flip] = bytes_(sa)[flip] & 0xBF
        c = f16(rng.uniform(-1, 1, sc) * 2.0 ** rng.integers(-24, 4, sc))
    elif cls == "special":                   # NaN bytes, infinite and NaN accumulators
        a, b = bytes_(sa), bytes_(sb)
        a[rng.random(sa) < 0.01] = 0x7F
        b[rng.random(sb) < 0.01] = 0xFF
        c = f16(rng.uniform(-4, 4, sc))
        pick = rng.random(sc)
        c[pick < 0.05] = 0x7C00
        c[(pick >= 0.05) & (pick < 0.1)] = 0xFC00
        c[(pick >= 0.1) & (pick < 0.15)] = 0x7E00
    else:
        raise ValueError(cls)
    return a.astype(np.uint8), b.astype(np.uint8), c.astype(np.uint16)


def products(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[tiles,16,8,32] exact products A[m][k] * B[k][n] (float64)."""
    av, bv = E4M3[a], E4M3[b]                                # [t,16,32], [t,32,8]
    return av[:, :, None, :] * np.transpose(bv, (0, 2, 1))[:, None, :, :]


def _f16(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def _f32(x):
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)


def _trunc(x: np.ndarray, bits: int, axis: int = -1) -> np.ndarray:
    """Each term truncated (toward zero) to `bits` bits below the largest term's exponent,
    as an aligned fixed-point adder does."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        big = np.nanmax(np.where(np.isfinite(x), np.abs(x), 0), axis=axis, keepdims=True)
        e = np.floor(np.log2(np.where(big > 0, big, 1.0)))
        ulp = 2.0 ** (e - (bits - 1))
        return np.where(np.isfinite(x), np.trunc(x / ulp) * ulp, x)


def model(p: np.ndarray, c: np.ndarray, *, group: int = 32, inner: str = "exact",
          round_to: str = "f16", c_first: bool = True) -> np.ndarray:
    """d = c, then for each group of `group` consecutive k: d = R(d + sum of the group),
    the group's sum `inner` ("exact", "f32seq": f32 after every addition, "truncN": aligned
    truncation to N bits, the accumulator included), R rounding to `round_to` ("f16", or
    "f32" with one final f16 rounding). c_first=False adds c after the products."""
    with np.errstate(invalid="ignore", over="ignore"):
        d = c.copy() if c_first else np.zeros_like(c)
        for k0 in range(0, 32, group):
            g = p[..., k0:k0 + group]
            if inner == "exact":
                s = d + g.sum(axis=-1)
            elif inner == "f32seq":
                s = d
                for k in range(g.shape[-1]):
                    s = _f32(s + g[..., k])
            elif inner.startswith("trunc"):
                terms = np.concatenate([d[..., None], g], axis=-1)
                s = _trunc(terms, int(inner[5:])).sum(axis=-1)
            else:
                raise ValueError(inner)
            d = _f16(s) if round_to == "f16" else _f32(s)
        if not c_first:
            d = _f32(d + c) if round_to == "f32" else _f16(d + c)
        return _f16(d)


MODELS = {
    "exact, one f16 rounding": dict(),
    "exact products, f32 after every add, then f16": dict(inner="f32seq", round_to="f32"),
    "exact sum of products, f16, then + C, f16": dict(c_first=False),
    "exact sum of products, f32, then + C, f32, then f16": dict(c_first=False,
                                                                round_to="f32"),
    "k16 groups, exact, f16 after each": dict(group=16),
    "k8 groups, exact, f16 after each": dict(group=8),
    "k4 groups, exact, f16 after each": dict(group=4),
    "k16 groups, exact, f32 after each, then f16": dict(group=16, round_to="f32"),
    "aligned truncation to 24 bits, then f16": dict(inner="trunc24"),
    "aligned truncation to 25 bits, then f16": dict(inner="trunc25"),
    "k16 groups, aligned truncation to 24 bits, f16 after each": dict(group=16,
                                                                       inner="trunc24"),
    "k16 groups, aligned truncation to 25 bits, f16 after each": dict(group=16,
                                                                       inner="trunc25"),
    "k16 groups, aligned truncation to 24 bits, f32 after each, then f16":
        dict(group=16, inner="trunc24", round_to="f32"),
}


def compare(d_hw: np.ndarray, d_model: np.ndarray) -> tuple[int, int, int]:
    """(matches, NaN-both, total): bits equal, or both NaN (payloads may differ)."""
    hw = d_hw.view(np.float16).astype(np.float64)
    mb = d_model.astype(np.float16).view(np.uint16)
    both_nan = np.isnan(hw) & np.isnan(d_model)
    ok = (mb == d_hw) | both_nan
    return int(ok.sum()), int(both_nan.sum()), int(ok.size)


def evaluate(a, b, c_bits, d_hw, names=None) -> dict:
    """{model name: (matches, both NaN, total)} over one batch of tiles."""
    c = c_bits.view(np.float16).astype(np.float64)
    out = {}
    for name, kw in MODELS.items():
        if names and name not in names:
            continue
        tot = [0, 0, 0]
        for i in range(0, a.shape[0], 256):
            p = products(a[i:i + 256], b[i:i + 256])
            got = compare(d_hw[i:i + 256], model(p, c[i:i + 256], **kw))
            tot = [x + y for x, y in zip(tot, got, strict=False)]
        out[name] = tuple(tot)
    return out
