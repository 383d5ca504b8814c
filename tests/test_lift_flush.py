"""The lifter leaves out the operand flush of a `.ftz` row only for registers that can
never hold a subnormal (rrsplice.lift.flush): which registers those are on a function
written for it (ground truth beside it), which helpers the lowering then calls, and the
lifted function run on the host (tests/warp_harness) against the PTX ISA's .ftz rules
computed here with numpy, on inputs chosen so that every flush left in place matters."""

from __future__ import annotations

import random
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
from lift_region_run import host_loop_run

from rrsplice import parse
from rrsplice.lift import names
from rrsplice.lift.flush import never_subnormal
from rrsplice.lift.function import lift_function
from rrsplice.lift.header import header_text

HEAD = ".version 8.7\n.target sm_90\n.address_size 64\n"
PTX = HEAD + textwrap.dedent("""\
    .visible .func (.param .b32 out) flushy(.param .b32 a, .param .b32 b)
    {
        .reg .f32 %f<12>;
        .reg .pred %p<2>;
        ld.param.f32 %f1, [a];
        ld.param.f32 %f2, [b];
        add.ftz.f32 %f3, %f1, %f2;
        mul.ftz.f32 %f4, %f3, 0f3F000000;
        mov.f32 %f5, %f4;
        mov.f32 %f6, %f1;
        mov.f32 %f7, 0f00000001;
        mov.f32 %f8, 0f3F800000;
        setp.lt.ftz.f32 %p1, %f6, %f7;
        @%p1 mov.f32 %f9, %f2;
        @!%p1 add.ftz.f32 %f9, %f5, %f8;
        sub.ftz.f32 %f10, %f9, %f6;
        add.ftz.f32 %f11, %f10, %f7;
        st.param.f32 [out], %f11;
        ret;
    }
    """)
#: written by hand from the function above: every definition of these leaves a value
#: that is not subnormal (a .ftz result, a copy of one, a normal immediate)
SAFE = {"%f3", "%f4", "%f5", "%f8", "%f10", "%f11"}
#: loaded (%f1, %f2), a copy of a loaded one (%f6), a subnormal immediate (%f7), one of
#: two definitions a loaded value (%f9)
UNKNOWN = {"%f1", "%f2", "%f6", "%f7", "%f9"}


def _fn():
    return next(f for f in parse(PTX.encode(), filename="flushy.ptx").functions)


def test_registers_known_never_subnormal():
    got = never_subnormal(_fn())
    assert got & (SAFE | UNKNOWN) == SAFE


def test_the_lowering_drops_exactly_the_known_flushes():
    text = lift_function(_fn(), "flushy.ptx").text
    calls = {line.split("=", 1)[1].strip().rstrip(";") for line in text.splitlines() if "rr_op_" in line}
    r = names.register
    assert f"rr_op_add_ftz_f32({r('%f1')}, {r('%f2')})" in calls, calls
    assert f"rr_op_mul_ftz_f32_nfa({r('%f3')}, rr_float(0x3F000000u))" in calls, calls
    assert f"rr_op_sub_ftz_f32_nfa({r('%f9')}, {r('%f6')})" not in calls
    assert f"rr_op_sub_ftz_f32({r('%f9')}, {r('%f6')})" in calls, calls
    assert f"rr_op_add_ftz_f32_nfa({r('%f10')}, {r('%f7')})" in calls, calls
    assert any(c.startswith(f"rr_op_add_ftz_f32_nfab({r('%f5')}, {r('%f8')})") for c in calls), \
        calls


def _ftz(x):
    x = np.float32(x)
    return np.copysign(np.float32(0), x) if abs(x) < np.float32(2.0 ** -126) else x


def _reference(a_bits: int, b_bits: int) -> int:
    """The function above, .ftz by the PTX ISA: subnormal operands and results are zero
    of the same sign."""
    f = np.frombuffer(np.array([a_bits, b_bits], "<u4").tobytes(), "<f4")
    a, b = f[0], f[1]
    with np.errstate(all="ignore"):
        f3 = _ftz(_ftz(a) + _ftz(b))
        f4 = _ftz(f3 * np.float32(0.5))
        f7 = np.frombuffer(np.array([1], "<u4").tobytes(), "<f4")[0]
        p1 = _ftz(a) < _ftz(f7)
        f9 = b if p1 else _ftz(_ftz(f4) + np.float32(1.0))
        f10 = _ftz(_ftz(f9) - _ftz(a))
        f11 = _ftz(_ftz(f10) + _ftz(f7))
    return int(np.array([f11], "<f4").view("<u4")[0])


def _inputs():
    sub = [0x00400000, 0x80400000, 0x00000001, 0x807FFFFF]    # subnormals, both signs
    tiny = [0x00800000, 0x80800000, 0x00C00000, 0x80C00000]   # the smallest normals
    rng = random.Random(11)
    cases = [(a, b) for a in sub + tiny for b in sub + tiny]
    cases += [(rng.getrandbits(32) & 0x80FFFFFF, rng.getrandbits(32) & 0x80FFFFFF)
              for _ in range(40)]
    return cases


@pytest.mark.slow
def test_the_lifted_function_flushes_as_ptx_does(tmp_path):
    lifted = lift_function(_fn(), "flushy.ptx")
    body = SimpleNamespace(text='#include "rr_lift.h"\n' + (lifted.ret_struct or "") + "\n"
                           + lifted.text,
                           header=header_text(lifted.rows), callee=names.callee("flushy"))
    cases = _inputs()
    want = [_reference(a, b) for a, b in cases]
    # the inputs make the flushes that stay matter: without them, these would differ
    assert len(set(want)) > 10
    with host_loop_run(tmp_path, body, ["rr_u32", "rr_u32"]) as run:
        got = [int.from_bytes(run([], [a, b])[0], "little") for a, b in cases]
    bad = [(hex(a), hex(b), hex(g), hex(w)) for (a, b), g, w in zip(cases, got, want, strict=True)
           if g != w]
    assert not bad, bad[:8]


# ---------------------------------------------------------------- the mode register path

def _run_flushy(tmp_path, lifted, prefix: str, cases):
    tmp_path.mkdir(parents=True, exist_ok=True)
    body = SimpleNamespace(text=prefix + '#include "rr_lift.h"\n' + (lifted.ret_struct or "")
                           + "\n" + lifted.text,
                           header=header_text(lifted.rows), callee=names.callee(lifted.name))
    with host_loop_run(tmp_path, body, ["rr_u32"] * 2) as run:
        return [int.from_bytes(run([], [a, b])[0], "little") for a, b in cases]


@pytest.mark.slow
def test_the_mode_register_path_flushes_as_ptx_does_and_needs_the_mode(tmp_path):
    """The same function lifted to flush through the mode register (rr_ftz is then the
    identity; the host build sets MXCSR's DAZ and FTZ as a gfx12 body sets MODE) gives
    PTX's .ftz results; built with a mode that is never set, it does not (the mode does
    the flushing, not leftover software)."""
    lifted = lift_function(_fn(), "flushy.ptx", flush_mode=True)
    assert lifted.flush_by_mode
    assert "rr_fmode_enter()" in lifted.text
    assert f"{names.callee('flushy')}_flushing(" in lifted.text
    cases = _inputs()
    want = [_reference(a, b) for a, b in cases]
    mode = "#define RR_LIFT_FTZ_BY_MODE 1\n"
    got = _run_flushy(tmp_path / "mode", lifted, mode, cases)
    bad = [(hex(a), hex(b), hex(g), hex(w)) for (a, b), g, w in zip(cases, got, want, strict=True)
           if g != w]
    assert not bad, bad[:8]
    broken = _run_flushy(tmp_path / "broken", lifted, mode + "#define RR_LIFT_FMODE_BROKEN 1\n",
                         cases)
    assert sum(g != w for g, w in zip(broken, want, strict=True)) > 5


MODAL = HEAD + textwrap.dedent("""\
    .visible .func (.param .b32 out) modal(.param .b32 a, .param .b32 b)
    {
        .reg .f32 %f<12>;
        .reg .b32 ULP, NEG;
        ld.param.f32 %f1, [a];
        ld.param.f32 %f2, [b];
        mul.ftz.f32 %f3, %f1, %f2;
        mov.b32 ULP, 0x33800000U;
        fma.rn.f32 %f3, %f3, ULP, %f3;
        neg.f32 %f4, %f3;
        add.f32 %f5, %f4, %f4;
        mul.ftz.f32 %f6, %f1, 0f3F800000;
        add.ftz.f32 %f7, %f5, %f6;
        mul.f32 %f8, %f7, 0fC0000000;
        sub.ftz.f32 %f9, %f8, %f2;
        st.param.f32 [out], %f9;
        ret;
    }
    """)
#: written by hand: the statements of MODAL (by line) that could tell the modes apart
#: with the blocker lines added below; %f3's fma grows it (ULP >= 0), %f5 = 2 %f4 and
#: %f8 = -2 %f7 do too, so none of them blocks
BLOCKING_EDITS = {
    "fma.rn.f32 %f3, %f3, ULP, %f3;": "fma.rn.f32 %f3, %f3, NEG, %f3;",   # NEG < 0
    "add.f32 %f5, %f4, %f4;": "add.f32 %f5, %f4, %f3;",                   # not a doubling
    "mul.f32 %f8, %f7, 0fC0000000;": "mul.f32 %f8, %f7, 0f3F000000;",     # |k| < 1
}


def _modal(text=MODAL):
    return next(f for f in parse(_modal_text(text).encode(), filename="modal.ptx").functions)


def test_statements_that_could_tell_the_modes_apart():
    from rrsplice.lift.denorm import mode_blockers
    # no .ftz statement: nothing for the mode to do, although nothing blocks it
    plain = MODAL.replace("mul.ftz.f32 %f3, %f1, %f2;", "neg.f32 %f3, %f1;") \
        .replace("mul.ftz.f32 %f6, %f1, 0f3F800000;", "neg.f32 %f6, %f1;") \
        .replace("add.ftz.f32 %f7, %f5, %f6;", "neg.f32 %f7, %f6;") \
        .replace("sub.ftz.f32 %f9, %f8, %f2;", "neg.f32 %f9, %f8;") \
        .replace("ld.param.f32 %f1, [a];", "mov.f32 %f1, 0f3F800000;")
    f = _modal(plain)
    assert ".ftz" not in plain
    assert not mode_blockers(f, never_subnormal(f))
    assert not lift_function(f, "modal.ptx", flush_mode=True).flush_by_mode
    fn = _modal()
    assert not mode_blockers(fn, never_subnormal(fn))
    for old, new in BLOCKING_EDITS.items():
        f = _modal(MODAL.replace(old, new))
        got = [st.line for st in mode_blockers(f, never_subnormal(f))]
        line = next(i + 1 for i, x in enumerate(_modal_text(MODAL.replace(old, new)).splitlines())
                    if new in x)
        assert got and got[0] == line, (new, got, line)
        assert not lift_function(f, "modal.ptx", flush_mode=True).flush_by_mode


def _modal_text(text):
    return text.replace("mov.b32 ULP, 0x33800000U;",
                        "mov.b32 ULP, 0x33800000U;\n    mov.b32 NEG, 0xB3800000U;")


def _modal_reference(a_bits: int, b_bits: int) -> int:
    """MODAL by the PTX ISA (.ftz flushes; the others keep subnormals). The fma's product
    a * 2^-24 and its sum are exact in float64, so one rounding to f32 is the fma's."""
    f = np.frombuffer(np.array([a_bits, b_bits], "<u4").tobytes(), "<f4")
    a, b = f[0], f[1]
    with np.errstate(all="ignore"):
        f3 = _ftz(_ftz(a) * _ftz(b))
        f3 = np.float32(np.float64(f3) * 2.0 ** -24 + np.float64(f3))
        f5 = -f3 + -f3
        f6 = _ftz(_ftz(a) * np.float32(1.0))
        f7 = _ftz(_ftz(f5) + _ftz(f6))
        f8 = f7 * np.float32(-2.0)
        f9 = _ftz(_ftz(f8) - _ftz(b))
    return int(np.array([f9], "<f4").view("<u4")[0])


@pytest.mark.slow
def test_a_mode_body_keeps_the_software_flush_where_a_compiler_folds(tmp_path):
    """`mul.ftz x, 1.0` is folded to x by a compiler, so through the mode it would not
    flush: that statement keeps the software flush (helper suffix _swf), and the function
    lifted to flush through the mode gives PTX's results on subnormal inputs."""
    lifted = lift_function(_modal(), "modal.ptx", flush_mode=True)
    assert lifted.flush_by_mode
    swf = [x for x in lifted.text.splitlines() if "_swf" in x]
    assert len(swf) == 1 and "0x3F800000u" in swf[0], swf
    cases = _inputs() + [(0x00400000, 0x3F800000), (0x80000001, 0x3F800000),
                         (0x00400000, 0x00000000)]
    want = [_modal_reference(a, b) for a, b in cases]
    assert len(set(want)) > 10
    got = _run_flushy(tmp_path, lifted, "#define RR_LIFT_FTZ_BY_MODE 1\n", cases)
    bad = [(hex(a), hex(b), hex(g), hex(w)) for (a, b), g, w in zip(cases, got, want, strict=True)
           if g != w]
    assert not bad, bad[:8]
