"""Triton kernels for the conformance corpus (compiled to PTX without a GPU by
scripts/make_conformance.py). Each one exercises a different lowering: masked vector
loads and stores, reductions through shared memory and shuffles, tl.dot (mma / wgmma),
atomics, and a fused softmax with exp2 and max."""

import triton
import triton.language as tl


@triton.jit
def add_kernel(x, y, o, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def softmax_kernel(out, inp, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(inp + row * stride + cols, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out + row * stride + cols, num / tl.sum(num, axis=0), mask=m)


@triton.jit
def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        av = tl.load(a + rm[:, None] * sam + (k + rk)[None, :] * sak)
        bv = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc += tl.dot(av, bv)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def histogram_kernel(x, bins, n, NB: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0)
    tl.atomic_add(bins + (v % NB), 1, mask=m)
    tl.atomic_max(bins + NB + offs * 0, v, mask=m)


# (kernel, signature, constexprs): what the generator compiles for each architecture
KERNELS = [
    (add_kernel, {"x": "*fp32", "y": "*fp32", "o": "*fp32", "n": "i32", "BLOCK": "constexpr"},
     {"BLOCK": 1024}),
    (softmax_kernel, {"out": "*fp32", "inp": "*fp32", "stride": "i32", "n_cols": "i32",
                      "BLOCK": "constexpr"}, {"BLOCK": 1024}),
    (matmul_kernel, {"a": "*fp16", "b": "*fp16", "c": "*fp16", "M": "i32", "N": "i32",
                     "K": "i32", "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32",
                     "scm": "i32", "scn": "i32", "BM": "constexpr", "BN": "constexpr",
                     "BK": "constexpr"}, {"BM": 128, "BN": 128, "BK": 64}),
    (histogram_kernel, {"x": "*i32", "bins": "*i32", "n": "i32", "NB": "constexpr",
                        "BLOCK": "constexpr"}, {"NB": 64, "BLOCK": 512}),
]
