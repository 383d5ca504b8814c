"""The outliner on kernels built for its rarer paths, one question each: a `.shared` array
addressed through a passed register the region itself moves, a 64-bit use of such an
array's address, a guarded kernel-parameter read, the address of a kernel parameter, a
statement sharing the region's last line, and kernel registers named like the body's own
fresh registers. The answer is checked against an oracle that does not come from the
outliner: the reference interpreter (tests/ptx_interp.py) runs the kernel's region and the
body and the values read back must agree, or ptxas must accept the body. Where no body can
be right, the answer is an OutlineError naming the statement."""

from __future__ import annotations

import pytest
from test_bites_outline import kernel
from test_outline import _assemble
from test_outline_oracle import fresh_machine, region_and_body

from rrsplice.outline import OutlineError, build_outline


def _passing_smem(call: str) -> str:
    """The call text with `%r20` set to the `.shared` array's address before it is passed
    (as a splice computes it at the call)."""
    return call.replace("{\n", "{\n\tmov.u32 %r20, smem;\n", 1)


def outcome(prefix, region, passed, returned, *, call_fix=lambda c: c, tid=5, regs=None):
    """Outline the region; an OutlineError's message, or None after checking that the body
    delivers the values the kernel's own region computes for thread `tid`. `regs`: values of
    registers the kernel never writes before the region (what they happen to hold)."""
    mod, fn, rng, call, ext = kernel(prefix, region, passed, returned)
    try:
        o = build_outline(mod, fn, rng, call_fix(call), ext)
    except OutlineError as exc:
        return str(exc)
    k = fresh_machine(1)
    k.special["%tid.x"] = k.special["%laneid"] = tid
    k.regs.update(regs or {})
    how, b = region_and_body(fn, rng, o, passed, k)
    assert how == "exit"
    got = [b.mem["param"].get(("body_ret", 4 * i)) for i in range(len(returned))]
    want = [k.regs[r] for r in returned]
    assert got == want, f"thread {tid}: body delivers {got}, the region computes {want}\n" \
                        + o.ptx.decode()
    return None


# ---------------------------------------------------------------- .shared array addresses

def test_shared_array_address_survives_the_region_moving_its_register():
    # the call passes the array's address in kernel register %r20, which the region bumps
    # between two reads of the array: the second read must still use the array's address
    region = ["ld.shared.u32 %r5, [smem+8];", "add.s32 %r20, %r20, 4;",
              "ld.shared.u32 %r6, [smem+12];", "add.s32 %r7, %r5, %r6;", "mov.u32 %r8, %r20;"]
    assert outcome(["mov.u32 %r20, smem;"], region, ["%r20"], ["%r7", "%r8"],
                   call_fix=_passing_smem) is None


REGION64 = ["mov.u64 %rd3, smem;", "ld.shared.u32 %r5, [%rd3+8];", "add.s32 %r6, %r5, 1;"]


def test_shared_array_address_taken_as_64_bits_gives_the_same_values():
    assert outcome(["mov.u32 %r20, smem;"], REGION64, ["%r20"], ["%r6"],
                   call_fix=_passing_smem) is None


@pytest.mark.slow
def test_shared_array_address_taken_as_64_bits_assembles(ptxas_path, tmp_path):
    # `mov.u64 %rd3, smem` needs a 64-bit source: the passed 32-bit address, widened
    mod, fn, rng, call, ext = kernel(["mov.u32 %r20, smem;"], REGION64, ["%r20"], ["%r6"])
    o = build_outline(mod, fn, rng, _passing_smem(call), ext)
    _assemble(ptxas_path, tmp_path, o.ptx)


# ---------------------------------------------------------------- kernel parameters

def test_guarded_parameter_read_is_no_copy_of_the_parameter():
    # %r13 holds k_param_1 only in the threads where %p1 holds (tid < 3); elsewhere it
    # keeps whatever it held (1234 here). The region reads k_param_1 itself in every thread
    prefix = ["setp.lt.u32 %p1, %r1, 3;", "@%p1 ld.param.u32 %r13, [k_param_1];"]
    region = ["ld.param.u32 %r5, [k_param_1];", "add.s32 %r6, %r5, 1;"]
    for tid in (1, 5):
        why = outcome(prefix, region, ["%r13"], ["%r6"], tid=tid, regs={"%r13": 1234})
        assert why is None or "reads a kernel parameter" in why, why


def test_taking_a_kernel_parameters_address_is_refused():
    # a .func cannot name the entry's parameters: the body could not assemble
    mod, fn, rng, call, ext = kernel([], ["mov.u64 %rd3, k_param_0;",
                                          "ld.param.u32 %r5, [%rd3+8];"], ["%r1"], ["%r5"])
    with pytest.raises(OutlineError, match=r"line 20\b.*k_param_0"):
        build_outline(mod, fn, rng, call, ext)


# ---------------------------------------------------------------- the region's text

def test_statement_sharing_the_regions_line_is_not_copied_along():
    # the region is the first statement of the line; the second, outside it, overwrites
    # the value the call reads back. Copying the line whole would deliver 0
    why = outcome(["add.s32 %r5, %r1, 3;"], ["add.s32 %r6, %r5, 2; mov.u32 %r6, 0;"],
                  ["%r5"], ["%r6"])
    assert why is None or "shares a line" in why, why


def test_body_registers_never_collide_with_the_kernels():
    # the kernel has registers named like the body's fresh ones and the region writes one
    # before the parameter read that the body turns into a copy of a fresh snapshot
    prefix = [".reg .b32 %rrsor<4>;", "ld.param.u32 %r13, [k_param_1];"]
    region = ["mov.u32 %rrsor0, 1000;", "ld.param.u32 %r5, [k_param_1];",
              "add.s32 %r6, %r5, %rrsor0;"]
    assert outcome(prefix, region, ["%r13"], ["%r6"]) is None


# ---------------------------------------------------------------- registers passed as arguments

def _passing_directly(call: str) -> str:
    """The call text with its first argument `%r5` passed as the call's own operand instead
    of through a `.param` it declares and stores."""
    assert "\t.param .b32 a0;\n\tst.param.b32 [a0+0], %r5;\n" in call
    return call.replace("\t.param .b32 a0;\n\tst.param.b32 [a0+0], %r5;\n", "") \
        .replace("body, (a0", "body, (%r5")


def test_a_register_passed_directly_as_an_argument_reaches_the_region():
    # `call.uni (rv), body, (%r5, a1)`: the body's parameter holds %r5's value, which the
    # region reads as %r5
    region = ["add.s32 %r6, %r5, 2;", "mul.lo.s32 %r7, %r6, %r1;"]
    assert outcome(["add.s32 %r5, %r1, 3;"], region, ["%r5", "%r1"], ["%r7"],
                   call_fix=_passing_directly) is None


@pytest.mark.slow
def test_a_register_passed_directly_assembles(ptxas_path, tmp_path):
    mod, fn, rng, call, ext = kernel(["add.s32 %r5, %r1, 3;"], ["add.s32 %r6, %r5, 2;"],
                                     ["%r5"], ["%r6"])
    o = build_outline(mod, fn, rng, _passing_directly(call), ext)
    assert "ld.param.b32 %r5, [body_a0];" in o.ptx.decode()
    _assemble(ptxas_path, tmp_path, o.ptx)
