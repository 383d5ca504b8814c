"""Instruction semantics as data: one row per PTX form the lifter lowers to a helper call.

A row gives the helper's C types and two implementations:

* CUDA: the very instruction, as inline assembly of the row's form (exact by construction);
* portable (the HIP device code, and the host build the tests run): plain C arithmetic on
  the bits, or, for the `.approx` forms, the AMD builtin ZLUDA uses (`zluda` names the file
  of vosen/ZLUDA the behaviour is taken from; the code is ours).

`exact` marks rows whose portable implementation is plain arithmetic that must agree
bit for bit with the PTX ISA definition (the host tests check every one of them against an
independent reference). A form with no row is refused by the lifter, never approximated.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..ptx.isa import TYPES

EMIT = "ptx/src/pass/llvm/emit.rs"
IMPL = "ptx/lib/zluda_ptx_impl.cpp"

#: C type of each operand class
C_TYPES = {"f32": "float", "f64": "double", "pred": "bool", "u8": "rr_u8", "u16": "rr_u16",
           "u32": "rr_u32", "u64": "rr_u64"}
#: inline-assembly constraint letter of each operand class
ASM = {"f32": "f", "f64": "d", "u16": "h", "u32": "r", "u64": "l"}


@dataclass(frozen=True)
class Sem:
    form: str           # the PTX form (`Statement.view.form`)
    dst: str            # operand class of the result
    srcs: tuple         # operand classes of the sources, in order
    portable: str       # C body of the portable implementation (operands a, b, c, d)
    zluda: str          # the ZLUDA source the HIP behaviour follows (file: what)
    exact: bool = True  # portable code is plain arithmetic, checked exactly on the host
    variant: str = ""   # suffix of a derived helper (without_input_flush)

    @property
    def helper(self) -> str:
        return "rr_op_" + self.form.replace(".", "_") + self.variant

    def input_flushes(self) -> tuple:
        """The operand letters this row flushes before computing (`.ftz` rows)."""
        return tuple(x for x in "abcd"[:len(self.srcs)]
                     if f"rr_ftz({x})" in self.portable or f"rr_ftz_sw({x})" in self.portable)


def without_input_flush(row: Sem, letters) -> Sem:
    """`row` with the flush of operands `letters` left out (they are known never subnormal:
    rrsplice.lift.flush). The CUDA helper is still the instruction itself."""
    text = row.portable
    for x in letters:
        for f in ("rr_ftz", "rr_ftz_sw"):
            text = text.replace(f"{x} = {f}({x}); ", "").replace(f"{f}({x})", x)
    return replace(row, portable=text, variant=row.variant + "_nf" + "".join(letters))


def with_software_flush(row: Sem) -> Sem:
    """`row` flushing in software (`rr_ftz_sw`) even in a body that flushes through the
    mode register (rrsplice.lift.denorm.keeps_software_flush says when)."""
    return replace(row, portable=row.portable.replace("rr_ftz(", "rr_ftz_sw("),
                   variant=row.variant + "_swf")


def _row(form, dst, srcs, portable, zluda, exact=True) -> Sem:
    return Sem(form, dst, tuple(srcs.split()) if srcs else (), portable, zluda, exact)


# ---------------------------------------------------------------- floating point rows

_FMA_RM = """const float r = __builtin_fmaf(a, b, c);
    if (r != r) return r;
    if (r - r != 0.0f) {   /* infinite: from an infinite operand, or an overflow */
        if (a - a != 0.0f || b - b != 0.0f || c - c != 0.0f) return r;
        return r > 0.0f ? 3.40282346638528859812e+38f : r;
    }
    const double p = (double)a * (double)b, s = p + (double)c, v = s - p;
    const double e = (p - (s - v)) + ((double)c - v);
    const double d = (s - (double)r) + e;     /* the sign of (a*b + c) - r */
    if (d < 0.0) {
        const rr_u32 u = rr_bits(r);
        return rr_float(r == 0.0f ? 0x80000001u : (u >> 31) ? u + 1u : u - 1u);
    }
    if (d == 0.0 && r == 0.0f)   /* an exact zero: +0 only from +0 + +0 */
        return (p == 0.0 && c == 0.0f && !(rr_bits64(p) >> 63) && !(rr_bits(c) >> 31))
            ? 0.0f : -0.0f;
    return r;"""

_F = [
    # f32 arithmetic: PTX add/sub/mul.f32 round to nearest even by default; `.ftz` flushes
    # subnormal inputs and results to sign-preserving zero (PTX ISA 9.7.3). ZLUDA lowers
    # them to fadd/fsub/fmul and sets the denormal mode register for .ftz.
    _row("add.f32", "f32", "f32 f32", "return a + b;", f"{EMIT}: emit_add"),
    _row("add.ftz.f32", "f32", "f32 f32", "return rr_ftz(rr_ftz(a) + rr_ftz(b));",
         f"{EMIT}: emit_add, denormal mode (emit_set_mode)"),
    _row("sub.f32", "f32", "f32 f32", "return a - b;", f"{EMIT}: emit_sub"),
    _row("sub.ftz.f32", "f32", "f32 f32", "return rr_ftz(rr_ftz(a) - rr_ftz(b));",
         f"{EMIT}: emit_sub, denormal mode"),
    _row("mul.f32", "f32", "f32 f32", "return a * b;", f"{EMIT}: emit_mul"),
    _row("mul.ftz.f32", "f32", "f32 f32", "return rr_ftz(rr_ftz(a) * rr_ftz(b));",
         f"{EMIT}: emit_mul, denormal mode"),
    _row("fma.rn.f32", "f32", "f32 f32 f32", "return __builtin_fmaf(a, b, c);",
         f"{EMIT}: emit_fma (llvm.fma)"),
    _row("fma.rn.ftz.f32", "f32", "f32 f32 f32",
         "return rr_ftz(__builtin_fmaf(rr_ftz(a), rr_ftz(b), rr_ftz(c)));",
         f"{EMIT}: emit_fma (llvm.fma), denormal mode"),
    _row("max.f32", "f32", "f32 f32", "return rr_maxnum(a, b);",
         f"{EMIT}: emit_max (llvm.maximumnum)"),
    _row("max.ftz.f32", "f32", "f32 f32", "return rr_ftz(rr_maxnum(rr_ftz(a), rr_ftz(b)));",
         f"{EMIT}: emit_max (llvm.maximumnum), denormal mode"),
    _row("min.f32", "f32", "f32 f32", "return rr_minnum(a, b);",
         f"{EMIT}: emit_min (llvm.minimumnum)"),
    _row("min.ftz.f32", "f32", "f32 f32", "return rr_ftz(rr_minnum(rr_ftz(a), rr_ftz(b)));",
         f"{EMIT}: emit_min (llvm.minimumnum), denormal mode"),
    _row("neg.f32", "f32", "f32", "return -a;", f"{EMIT}: emit_neg"),
    _row("abs.f32", "f32", "f32", "return __builtin_fabsf(a);", f"{EMIT}: emit_abs"),
    # the approximations: the hardware's own result on CUDA; the AMD instruction ZLUDA
    # picks on HIP (host build: the libm function, not checked exactly)
    _row("ex2.approx.ftz.f32", "f32", "f32", "return rr_ftz(rr_ex2_approx_ftz(rr_ftz(a)));",
         f"{IMPL}: ex2_approx_f32; {EMIT}: emit_ex2 (llvm.amdgcn.exp2)", exact=False),
    _row("ex2.approx.f32", "f32", "f32", "return rr_ex2_approx(a);",
         f"{IMPL}: ex2_approx_f32", exact=False),
    _row("rsqrt.approx.ftz.f32", "f32", "f32", "return rr_ftz(rr_rsqrt_approx(rr_ftz(a)));",
         f"{IMPL}: rsqrt_approx_f32 (__builtin_amdgcn_rsqf)", exact=False),
    _row("rsqrt.approx.f32", "f32", "f32", "return rr_rsqrt_approx(a);",
         f"{IMPL}: rsqrt_approx_f32", exact=False),
    _row("rcp.approx.ftz.f32", "f32", "f32", "return rr_ftz(rr_rcp_approx(rr_ftz(a)));",
         f"{IMPL}: rcp_approx_f32 (__builtin_amdgcn_rcpf)", exact=False),
    _row("rcp.approx.f32", "f32", "f32", "return rr_rcp_approx(a);",
         f"{IMPL}: rcp_approx_f32 (__builtin_amdgcn_rcpf)", exact=False),
    _row("sqrt.approx.ftz.f32", "f32", "f32", "return rr_ftz(rr_sqrt_approx(rr_ftz(a)));",
         f"{IMPL}: sqrt_approx_f32 (__builtin_amdgcn_sqrtf)", exact=False),
    _row("div.approx.ftz.f32", "f32", "f32 f32",
         "return rr_ftz(rr_ftz(a) * rr_rcp_approx(rr_ftz(b)));",
         f"{EMIT}: emit_div_float (approx: a times the reciprocal)", exact=False),
    _row("tanh.approx.f32", "f32", "f32", "return rr_tanh_approx(a);",
         f"{IMPL}: tanh_f32 (__ocml_tanh_f32)", exact=False),
    # copysign.f32 d, a, b: b's magnitude with a's sign (PTX ISA 9.7.3.3), bits only
    _row("copysign.f32", "f32", "f32 f32",
         "return rr_float((rr_bits(b) & 0x7fffffffu) | (rr_bits(a) & 0x80000000u));",
         f"{EMIT}: emit_copysign (llvm.copysign(b, a))"),
    # cvt.sat.f32.f32: clamp to [0, 1], NaN and -0 to +0 (PTX ISA 9.7.9.21 .sat)
    _row("cvt.sat.f32.f32", "f32", "f32", "return a > 0.0f ? (a < 1.0f ? a : 1.0f) : 0.0f;",
         "ptx/src/pass/insert_post_saturation.rs; "
         f"{EMIT}: emit_fp_saturate (minimumnum(maximumnum(a, 0), 1))"),
    # fma.rm.f32: a*b + c rounded once toward -inf. Portable: the nearest-even fma, one ulp
    # down when it lies above the exact value (the sign of exact - r from an error-free sum
    # in double, a*b being exact there); zero results signed as IEEE 754 rounding down does
    _row("fma.rm.f32", "f32", "f32 f32 f32", _FMA_RM,
         f"{EMIT}: emit_fma (llvm.experimental.constrained.fma, round.dynamic) under the "
         "-inf rounding mode ptx/src/pass/instruction_mode_to_global_mode sets"),
    _row("div.full.f32", "f32", "f32 f32", "return a / b;",
         f"{EMIT}: emit_div_float (full)", exact=False),
    _row("div.rn.f32", "f32", "f32 f32", "return a / b;", f"{EMIT}: emit_div_float (rn)"),
    _row("sqrt.rn.f32", "f32", "f32", "return __builtin_sqrtf(a);", f"{EMIT}: emit_sqrt"),
    _row("rcp.rn.f32", "f32", "f32", "return 1.0f / a;", f"{EMIT}: emit_rcp"),
    # half precision: HIP through the hardware's f16 instructions (as ZLUDA); the host's
    # software versions compute in double and round once to f16 (exact for add, sub, mul),
    # fma through round-to-odd in double (rr_h_fma_sw)
    _row("add.f16x2", "u32", "u32 u32", "return rr_h2_add(a, b);", f"{EMIT}: emit_add"),
    _row("sub.f16x2", "u32", "u32 u32", "return rr_h2_sub(a, b);", f"{EMIT}: emit_sub"),
    _row("mul.f16x2", "u32", "u32 u32", "return rr_h2_mul(a, b);", f"{EMIT}: emit_mul"),
    _row("max.f16x2", "u32", "u32 u32", "return rr_h2_max(a, b);",
         f"{EMIT}: emit_max (llvm.maximumnum)"),
    _row("min.f16x2", "u32", "u32 u32", "return rr_h2_min(a, b);",
         f"{EMIT}: emit_min (llvm.minimumnum)"),
    _row("fma.rn.f16x2", "u32", "u32 u32 u32",
         "return rr_h2_fma(a, b, c);", f"{EMIT}: emit_fma"),
    _row("add.f16", "u16", "u16 u16", "return (rr_u16)rr_h_add(a, b);", f"{EMIT}: emit_add"),
    _row("mul.f16", "u16", "u16 u16", "return (rr_u16)rr_h_mul(a, b);", f"{EMIT}: emit_mul"),
    _row("max.f16", "u16", "u16 u16", "return (rr_u16)rr_h_max(a, b);", f"{EMIT}: emit_max"),
    _row("min.f16", "u16", "u16 u16", "return (rr_u16)rr_h_min(a, b);", f"{EMIT}: emit_min"),
    _row("fma.rn.f16", "u16", "u16 u16 u16", "return (rr_u16)rr_h_fma(a, b, c);",
         f"{EMIT}: emit_fma"),
    # conversions
    _row("cvt.f32.f16", "f32", "u16", "return rr_f16_to_f32(a);",
         f"{EMIT}: emit_cvt_float_to_float_impl (fpext)"),
    _row("cvt.rn.f16.f32", "u16", "f32", "return (rr_u16)rr_f32_to_f16_rn(a);",
         f"{EMIT}: emit_cvt_float_to_float_impl (fptrunc)"),
    _row("cvt.rz.f16.f32", "u16", "f32", "return (rr_u16)rr_f32_to_f16_sw(a, 1);",
         f"{EMIT}: emit_cvt_float_to_float_impl (fptrunc, rounding mode register)"),
    _row("cvt.rn.f16x2.f32", "u32", "f32 f32",
         "return rr_f32x2_to_f16x2_rn(b, a);",
         f"{EMIT}: emit_cvt_float_to_packed_float"),
    _row("cvt.rz.f16x2.f32", "u32", "f32 f32",
         "return rr_f32_to_f16_sw(b, 1) | (rr_f32_to_f16_sw(a, 1) << 16);",
         f"{EMIT}: emit_cvt_float_to_packed_float"),
    _row("cvt.rn.satfinite.e4m3x2.f16x2", "u16", "u32",
         "return (rr_u16)rr_f16x2_to_e4m3x2(a);",
         f"{IMPL}: no .f16x2 source form; PTX's conversion, which cvt_float_to_fp8 "
         "(satfinite e4m3) matches on finite values"),
    _row("cvt.rn.satfinite.relu.e4m3x2.f16x2", "u16", "u32",
         "return (rr_u16)rr_f16x2_to_e4m3x2_relu(a);",
         f"{IMPL}: no .f16x2 source form; PTX's conversion with relu"),
    _row("cvt.rn.satfinite.e4m3x2.f32", "u16", "f32 f32",
         "return (rr_u16)(rr_f16_to_e4m3(rr_f32_to_f16_odd(b), 0) | "
         "(rr_f16_to_e4m3(rr_f32_to_f16_odd(a), 0) << 8));",
         f"{IMPL}: cvt_rn_satfinite_e4m3x2_f32"),
    _row("cvt.rn.f16x2.e4m3x2", "u32", "u16",
         "return rr_e4m3_to_f16(a & 0xffu) | (rr_e4m3_to_f16(a >> 8) << 16);",
         f"{IMPL}: cvt_rn_f16x2_e4m3x2"),
    _row("cvt.rn.f32.s32", "f32", "u32", "return (float)(int)a;",
         f"{EMIT}: emit_cvt_int_to_float (sitofp)"),
    _row("cvt.rn.f32.u32", "f32", "u32", "return (float)a;",
         f"{EMIT}: emit_cvt_int_to_float (uitofp)"),
    _row("cvt.rni.ftz.s32.f32", "u32", "f32", "return rr_f32_to_s32_rni(rr_ftz(a));",
         f"{EMIT}: emit_cvt_float_to_int (rint, saturating fptosi)"),
    _row("cvt.rni.s32.f32", "u32", "f32", "return rr_f32_to_s32_rni(a);",
         f"{EMIT}: emit_cvt_float_to_int"),
    _row("cvt.rzi.s32.f32", "u32", "f32", "return rr_f32_to_s32_rzi(a);",
         f"{EMIT}: emit_cvt_float_to_int"),
]


# ---------------------------------------------------------------- integer rows

# PTX integer type -> (the lifted class, bits, signed): b, u and s of 16 to 64 bits
_INT_TYPES = {n: (f"u{TYPES[n].bits}", TYPES[n].bits, TYPES[n].is_signed)
              for n in (f"{k}{b}" for b in (16, 32, 64) for k in "bus")}
_S = {16: "short", 32: "int", 64: "long long"}


def _int_rows() -> list:
    """add/sub/mul/mad/min/max/rem/div/neg/not/and/or/xor/shl/shr for each integer type:
    two's-complement arithmetic modulo 2^n (PTX ISA 9.7.1, 9.7.8); ZLUDA lowers each to
    the LLVM integer instruction of the same name (emit.rs)."""
    out = []
    for ty, (cls, bits, signed) in _INT_TYPES.items():
        ct = C_TYPES[cls]
        s = f"({_S[bits]})" if signed else ""
        sc = f"{_S[bits]}"

        def row(op, srcs, body, ty=ty, cls=cls):
            out.append(_row(f"{op}.{ty}", cls, srcs, body, f"{EMIT}: emit_{op.split('.')[0]}"))
        two = f"{cls} {cls}"
        row("add", two, f"return ({ct})(a + b);")
        row("sub", two, f"return ({ct})(a - b);")
        if ty[0] != "b":
            row("mul.lo", two, f"return ({ct})(a * b);")
            row("mad.lo", f"{two} {cls}", f"return ({ct})(a * b + c);")
            if bits < 64:
                wide = "u64" if bits == 32 else "u32"
                wc = C_TYPES[wide]
                cast = f"({wc})({_S[bits * 2] if bits == 32 else 'int'})({sc})" if signed \
                    else f"({wc})"
                out.append(_row(f"mul.wide.{ty}", wide, two,
                                f"return ({wc})({cast}a * {cast}b);",
                                f"{EMIT}: emit_mul_wide_impl"))
            if signed:
                row("min", two, f"return {s}a < {s}b ? a : b;")
                row("max", two, f"return {s}a > {s}b ? a : b;")
                row("rem", two, f"return ({ct})({s}a % {s}b);")
                row("div", two, f"return ({ct})({s}a / {s}b);")
                row("neg", cls, f"return ({ct})(0 - a);")
                row("abs", cls, f"return {s}a < 0 ? ({ct})(0 - a) : a;")
            else:
                row("min", two, "return a < b ? a : b;")
                row("max", two, "return a > b ? a : b;")
                row("rem", two, f"return ({ct})(a % b);")
                row("div", two, f"return ({ct})(a / b);")
        row("and", two, f"return ({ct})(a & b);")
        row("or", two, f"return ({ct})(a | b);")
        row("xor", two, f"return ({ct})(a ^ b);")
        row("not", cls, f"return ({ct})~a;")
        # shifts: the count is a .u32; counts past the width give 0 (or the sign) (9.7.8.7)
        out.append(_row(f"shl.{ty}", cls, f"{cls} u32",
                        f"return b >= {bits}u ? ({ct})0 : ({ct})(a << b);", f"{EMIT}: emit_shl"))
        shr = (f"return ({ct})({s}a >> (b >= {bits}u ? {bits - 1}u : b));" if signed
               else f"return b >= {bits}u ? ({ct})0 : ({ct})(a >> b);")
        out.append(_row(f"shr.{ty}", cls, f"{cls} u32", shr, f"{EMIT}: emit_shr"))
    # conversions between integer widths (sign or zero extension, truncation: 9.7.9.21)
    for dst, src, body in [("s64", "s32", "return (rr_u64)(long long)(int)a;"),
                           ("u64", "u32", "return (rr_u64)a;"),
                           ("s64", "u32", "return (rr_u64)a;"),
                           ("u64", "s32", "return (rr_u64)(long long)(int)a;"),
                           ("u32", "u64", "return (rr_u32)a;"),
                           ("s32", "s64", "return (rr_u32)a;"),
                           ("u32", "u16", "return (rr_u32)a;"),
                           ("s32", "s16", "return (rr_u32)(int)(short)a;"),
                           ("u16", "u32", "return (rr_u16)a;")]:
        out.append(_row(f"cvt.{dst}.{src}", _INT_TYPES[dst][0], _INT_TYPES[src][0], body,
                        f"{EMIT}: emit_cvt (zext/sext/trunc)"))
    out.append(_row("prmt.b32", "u32", "u32 u32 u32", "return rr_prmt(a, b, c);",
                    f"{IMPL}: prmt_b32"))
    out.append(_row("bfe.u32", "u32", "u32 u32 u32", "return rr_bfe_u32(a, b, c);",
                    f"{IMPL}: bfe_u32"))
    out.append(_row("popc.b32", "u32", "u32", "return (rr_u32)__builtin_popcount(a);",
                    f"{EMIT}: emit_popc (llvm.ctpop)"))
    out.append(_row("and.pred", "pred", "pred pred", "return a && b;", f"{EMIT}: emit_and"))
    out.append(_row("or.pred", "pred", "pred pred", "return a || b;", f"{EMIT}: emit_or"))
    out.append(_row("xor.pred", "pred", "pred pred", "return a != b;", f"{EMIT}: emit_xor"))
    out.append(_row("not.pred", "pred", "pred", "return !a;", f"{EMIT}: emit_not"))
    return out


# comparisons: setp.<cmp>.<type> computes the comparison; the lifter applies the `.and/.or/
# .xor` operator and writes both destinations (9.7.7.2)
_CMP_INT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<",
            "ls": "<=", "hi": ">", "hs": ">="}
_CMP_FLOAT = {"eq": "a == b", "ne": "a != b && a == a && b == b", "lt": "a < b",
              "le": "a <= b", "gt": "a > b", "ge": "a >= b",
              "equ": "!(a != a || b != b) ? a == b : 1", "neu": "a != b",
              "ltu": "!(a >= b)", "leu": "!(a > b)", "gtu": "!(a <= b)", "geu": "!(a < b)",
              "num": "a == a && b == b", "nan": "a != a || b != b"}


def _setp_rows() -> list:
    out = []
    for ty, (cls, bits, signed) in _INT_TYPES.items():
        s = f"({_S[bits]})" if signed else ""
        for cmp, op in _CMP_INT.items():
            if signed and cmp in ("lo", "ls", "hi", "hs"):
                continue
            out.append(_row(f"setp.{cmp}.{ty}", "pred", f"{cls} {cls}",
                            f"return {s}a {op} {s}b;", f"{EMIT}: emit_setp_int (icmp)"))
    for cmp, expr in _CMP_FLOAT.items():
        out.append(_row(f"setp.{cmp}.f32", "pred", "f32 f32", f"return {expr};",
                        f"{EMIT}: emit_setp_float (fcmp)"))
        out.append(_row(f"setp.{cmp}.ftz.f32", "pred", "f32 f32",
                        f"a = rr_ftz(a); b = rr_ftz(b); return {expr};",
                        f"{EMIT}: emit_setp_float (fcmp), denormal mode"))
    for ty in ("b32", "u32", "s32", "b64", "u64", "s64", "b16", "u16", "s16", "f32"):
        cls = "f32" if ty == "f32" else _INT_TYPES[ty][0]
        out.append(_row(f"selp.{ty}", cls, f"{cls} {cls} pred", "return c ? a : b;",
                        f"{EMIT}: emit_selp (select)"))
    return out


ROWS: dict = {r.form: r for r in _F + _int_rows() + _setp_rows()}


def row_form(view) -> str:
    """The form a statement's row is keyed by: its own, except setp's (`setp.CMP[.ftz].T`,
    without the boolean combination, which the lowering applies)."""
    if view.base != "setp":
        return view.form
    return ".".join(["setp", view.compare or "?"] + (["ftz"] if view.ftz else [])
                    + [view.type.name if view.type else "?"])


def lookup(form: str) -> Sem | None:
    """The row of `form`, or None (the lifter then refuses the statement)."""
    return ROWS.get(form)
