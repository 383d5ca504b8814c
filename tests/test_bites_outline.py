"""The outliner's recomputation and region analysis on kernels built for one question each:
which loads may be repeated in the body, what a redefinition between a value's definition
and the region means, what recomputing a two-result load does to its other result, which
parameters must be loaded again after recomputation, and what an unguarded branch or
`ret` means for the values the region needs. Values are checked by running the kernel and
the body in the reference interpreter (tests/ptx_interp.py)."""

from __future__ import annotations

import pytest
from ptx_interp import Machine, run
from test_outline_oracle import HEAD, PARAM1, G, call_text, fresh_machine, region_and_body

from rrsplice.outline import OutlineError, build_outline, region_needs
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange


def kernel(prefix: list, region: list, passed: list, returned: list):
    """(module, fn, range, call, extern) with the region right after `prefix`."""
    def count(lines):          # braces and declarations are not statements
        return sum(1 for x in lines if not x.startswith(("{", "}", ".")))
    first = 3 + count(prefix) + 1
    text = HEAD + "".join(f"\t{s}\n" if not s.startswith("$") else f"{s}\n"
                          for s in prefix + region) + "\tret;\n}\n"
    mod = parse(text)
    call, ext = call_text(passed, returned)
    return mod, mod.functions[0], StatementRange(first, first + count(region) - 1), call, ext


def run_both(prefix, region, passed, returned, seed=1):
    """Outline, then run region and body; returns (the region's values, the body's)."""
    mod, fn, rng, call, ext = kernel(prefix, region, passed, returned)
    o = build_outline(mod, fn, rng, call, ext)
    k = fresh_machine(seed)
    how, b = region_and_body(fn, rng, o, passed, k)
    assert how == "exit"
    return ([k.regs[r] for r in returned],
            [b.mem["param"].get(("body_ret", 4 * i)) for i in range(len(returned))], o)


# ---------------------------------------------------------------- which loads repeat

@pytest.mark.parametrize("load", [
    "ld.global.u32 %r5, [%rd2+8];",      # memory written below, before the region
    "ld.shared.u32 %r5, [smem+8];",
    "ld.u32 %r5, [%rd2+8];",
])
def test_loads_of_writable_memory_are_not_repeated(load):
    store = ("st.shared.u32 [smem+8], %r1;" if "shared" in load
             else "st.global.u32 [%rd2+8], %r1;")
    mod, fn, rng, call, ext = kernel([load, store], ["add.s32 %r6, %r5, 1;"],
                                     ["%rd2", "%r1"], ["%r6"])
    with pytest.raises(OutlineError, match="not a pure computation or a read-only load"):
        build_outline(mod, fn, rng, call, ext)


@pytest.mark.parametrize("load", [
    "ld.global.nc.u32 %r5, [%rd2+8];",
    "ldu.global.u32 %r5, [%rd2+8];",
])
def test_read_only_loads_are_repeated_with_the_same_value(load):
    want, got, o = run_both([load, "add.s32 %r7, %r1, 3;"], ["add.s32 %r6, %r5, %r7;"],
                            ["%rd2", "%r7"], ["%r6"])
    assert o.recomputed == ["%r5"]
    assert got == want


# ---------------------------------------------------------------- redefinitions

def test_source_redefined_before_the_region_is_refused():
    # %r5 = %r3 + 1 is computed from the OLD %r3; the call passes the NEW %r3 (= 7)
    prefix = ["add.s32 %r3, %r1, 10;", "add.s32 %r5, %r3, 1;", "mov.u32 %r3, 7;"]
    mod, fn, rng, call, ext = kernel(prefix, ["add.s32 %r6, %r5, %r3;"], ["%r3"], ["%r6"])
    with pytest.raises(OutlineError, match="redefined before the region"):
        build_outline(mod, fn, rng, call, ext)


def test_unchanged_source_is_recomputed():
    prefix = ["mov.u32 %r3, 7;", "add.s32 %r5, %r3, 1;"]
    want, got, o = run_both(prefix, ["add.s32 %r6, %r5, %r3;"], ["%r3"], ["%r6"])
    assert o.recomputed == ["%r5"] and got == want == [15]


def test_guarded_definition_is_not_recomputed():
    prefix = ["setp.lt.u32 %p1, %r1, 3;", "mov.u32 %r5, 1;", "@%p1 mov.u32 %r5, 2;"]
    mod, fn, rng, call, ext = kernel(prefix, ["add.s32 %r6, %r5, 1;"], ["%r1"], ["%r6"])
    with pytest.raises(OutlineError, match="2 definitions reach|is guarded"):
        build_outline(mod, fn, rng, call, ext)
    prefix = ["setp.lt.u32 %p1, %r1, 3;", "@%p1 mov.u32 %r5, 2;"]
    mod, fn, rng, call, ext = kernel(prefix, ["add.s32 %r6, %r5, 1;"], ["%r1"], ["%r6"])
    with pytest.raises(OutlineError, match="is guarded|definitions reach"):
        build_outline(mod, fn, rng, call, ext)


# ---------------------------------------------------------------- two results at once

def test_recomputing_a_pair_load_must_not_clobber_the_other_result():
    # {%r5, %r6} are loaded together; %r6 is then replaced by %r1 + 100. The region needs
    # %r5 (not passed) and the NEW %r6 (not passed either: recomputed from %r1)
    prefix = ["ld.global.nc.v2.u32 {%r5, %r6}, [%rd2+8];", "add.s32 %r6, %r1, 100;",
              "add.s32 %r8, %r6, 1;"]
    region = ["add.s32 %r7, %r5, %r8;", "add.s32 %r9, %r6, %r7;"]
    # %r8 is passed: recomputing %r5 must not disturb what %r8 was computed from either
    try:
        want, got, _ = run_both(prefix, region, ["%rd2", "%r1", "%r8"], ["%r7", "%r9"])
    except OutlineError as exc:
        assert "overwrite %r6" in str(exc)
    else:
        assert got == want


def test_pair_load_other_result_read_by_the_region_with_a_later_value_is_refused():
    prefix = ["ld.global.nc.v2.u32 {%r5, %r6}, [%rd2+8];", "mov.u32 %r6, 9;"]
    region = ["add.s32 %r7, %r5, %r6;"]
    mod, fn, rng, call, ext = kernel(prefix, region, ["%rd2", "%r6"], ["%r7"])
    # %r6 is passed, %r5 is recomputed by the pair load: the body must reload %r6
    try:
        build_outline(mod, fn, rng, call, ext)
    except OutlineError as exc:
        assert "overwrite %r6" in str(exc)
        return
    want, got, _ = run_both(prefix, region, ["%rd2", "%r6"], ["%r7"])
    assert got == want


def test_passed_source_clobbered_by_an_earlier_recomputation_is_not_read_stale():
    # s: {%r5, %r6} = pair load; %r6 = tid (passed); %r7 = %r6 + 1 (not passed)
    # recomputing %r5 rewrites %r6 before %r7's recomputation reads it
    prefix = ["ld.global.nc.v2.u32 {%r5, %r6}, [%rd2+8];", "mov.u32 %r6, %r1;",
              "add.s32 %r7, %r6, 1;"]
    region = ["add.s32 %r8, %r5, %r7;"]
    try:
        want, got, _ = run_both(prefix, region, ["%rd2", "%r6"], ["%r8"])
    except OutlineError as exc:
        assert "overwrite %r6" in str(exc)
    else:
        assert got == want


def test_parameters_overwritten_by_recomputation_are_loaded_again():
    # the pair load defines %rd4 (needed, not passed) and %rd1 (passed: it holds
    # k_param_0, which the region reads). Recomputing %rd4 overwrites %rd1; the region's
    # parameter read becomes a copy of %rd1, so %rd1 must be loaded again first
    prefix = ["ld.global.nc.v2.u64 {%rd4, %rd1}, [%rd2+16];", "ld.param.u64 %rd1, [k_param_0];"]
    region = ["ld.param.u64 %rd5, [k_param_0];", "cvt.u32.u64 %r6, %rd5;",
              "cvt.u32.u64 %r7, %rd4;", "add.s32 %r8, %r6, %r7;"]
    want, got, o = run_both(prefix, region, ["%rd2", "%rd1"], ["%r8"])
    assert o.recomputed == ["%rd4"]
    assert got == want
    assert "// parameters the statement above overwrote" in o.ptx.decode()


# ---------------------------------------------------------------- control in the region

def needs(prefix, region, live_at_exit=()):
    mod, fn, rng, _, _ = kernel(prefix, region, ["%r1"], ["%r2"])
    return set(region_needs(fn, rng, set(live_at_exit)))


def test_unguarded_branch_does_not_fall_through():
    # %r9 is read only by the statement the unguarded branch jumps over
    region = ["mov.u32 %r6, %r1;", "bra.uni $L_join;", "add.s32 %r6, %r9, 1;", "$L_join:",
              "add.s32 %r7, %r6, 1;"]
    assert needs([], region) == {"%r1"}
    # guarded, it does
    region[1] = "@%p1 bra $L_join;"
    assert needs([], region) == {"%r1", "%p1", "%r9"}


def test_unguarded_ret_does_not_fall_through():
    region = ["mov.u32 %r6, %r1;", "ret;", "add.s32 %r6, %r9, 1;"]
    assert needs([], region) == {"%r1"}
    # after an unguarded ret nothing reaches the region's end: no read-back is needed
    assert needs([], ["ret;"], live_at_exit={"%r7"}) == set()
    assert needs([], ["@%p1 ret;"], live_at_exit={"%r7"}) == {"%p1", "%r7"}


def test_values_read_back_but_not_always_written_are_needed():
    region = ["@%p1 bra $L_a;", "mov.u32 %r7, %r1;", "$L_a:"]
    assert needs([], region, live_at_exit={"%r7"}) == {"%p1", "%r1", "%r7"}
    region = ["mov.u32 %r7, %r1;"]
    assert needs([], region, live_at_exit={"%r7"}) == {"%r1"}


def test_kernel_parameter_read_becomes_the_passed_copy():
    want, got, o = run_both(["ld.param.u32 %r13, [k_param_1];"],
                            ["ld.param.u32 %r5, [k_param_1];", "add.s32 %r6, %r5, 1;"],
                            ["%r13"], ["%r6"])
    assert got == want == [PARAM1 + 1]
    assert o.kernel_params == [o.region[0]]


def test_kernel_parameter_read_without_a_passed_copy_is_refused():
    mod, fn, rng, call, ext = kernel(["mov.u32 %r13, 5;"],
                                     ["ld.param.u32 %r5, [k_param_1];", "add.s32 %r6, %r5, 1;"],
                                     ["%r13"], ["%r6"])
    with pytest.raises(OutlineError, match="reads a kernel parameter"):
        build_outline(mod, fn, rng, call, ext)


def test_branch_out_of_the_region_is_refused():
    prefix = ["$L_top:"]
    mod, fn, rng, call, ext = kernel(prefix, ["add.s32 %r6, %r1, 1;", "@%p1 bra $L_top;"],
                                     ["%r1"], ["%r6"])
    with pytest.raises(OutlineError, match="outside the region"):
        build_outline(mod, fn, rng, call, ext)
    assert G  # the global base the interpreter uses is nonzero (addresses are distinct)


def test_pair_load_after_the_other_results_definition_in_program_order_is_refused():
    # control reaches the region through the pair load (s5) and THEN the later value of
    # %r6 (s2, earlier in the text, reached by a backward branch). Copying the recomputed
    # statements in text order would run s2 before s5, and s5 would overwrite %r6
    prefix = ["bra $L_D;", "$L_S:", "add.s32 %r6, %r1, 5;", "bra $L_R;", "$L_D:",
              "ld.global.nc.v2.u32 {%r5, %r6}, [%rd2+8];", "bra $L_S;", "$L_R:"]
    region = ["add.s32 %r7, %r5, %r6;"]
    try:
        want, got, _ = run_both(prefix, region, ["%rd2", "%r1"], ["%r7"])
    except OutlineError as exc:
        assert "overwrite %r6" in str(exc)
    else:
        assert got == want


def test_definition_reading_the_carry_flag_is_not_recomputed():
    # addc reads the carry of the add.cc before it: copying it alone would read a carry
    # the body never set
    prefix = ["add.cc.u32 %r8, %r1, 1;", "addc.u32 %r5, %r1, 0;"]
    mod, fn, rng, call, ext = kernel(prefix, ["add.s32 %r6, %r5, 1;"], ["%r1"], ["%r6"])
    with pytest.raises(OutlineError, match="s5 .* is not a pure computation"):
        build_outline(mod, fn, rng, call, ext)


def test_passed_sources_are_taken_from_the_call_not_recomputed():
    # %r3 comes from writable memory (not recomputable) but the call passes it
    prefix = ["ld.global.u32 %r3, [%rd2+4];", "add.s32 %r5, %r3, 1;"]
    want, got, o = run_both(prefix, ["add.s32 %r6, %r5, %r3;"], ["%rd2", "%r3"], ["%r6"])
    assert o.recomputed == ["%r5"] and got == want


def test_guarded_parameter_read_is_not_a_passed_copy():
    prefix = ["setp.lt.u32 %p1, %r1, 3;", "mov.u32 %r13, 0;",
              "@%p1 ld.param.u32 %r13, [k_param_1];"]
    mod, fn, rng, call, ext = kernel(prefix, ["ld.param.u32 %r5, [k_param_1];",
                                              "add.s32 %r6, %r5, 1;"], ["%r13"], ["%r6"])
    with pytest.raises(OutlineError, match="reads a kernel parameter"):
        build_outline(mod, fn, rng, call, ext)


def test_parameters_at_an_offset_are_loaded_from_that_offset():
    text_prefix = ["add.s32 %r3, %r1, 40;"]
    mod, fn, rng, _, _ = kernel(text_prefix, ["add.s32 %r6, %r1, %r3;"], ["%r1"], ["%r6"])
    call = "\n".join(["{", "\t.param .align 4 .b8 a0[8];", "\tst.param.b32 [a0+0], %r1;",
                      "\tst.param.b32 [a0+4], %r3;", "\t.param .align 4 .b8 rv[4];",
                      "\tcall.uni (rv), body, (a0);", "\tld.param.b32 %r6, [rv+0];", "}"])
    ext = (".extern .func (.param .align 4 .b8 body_ret[4]) body\n"
           "(\n\t.param .align 4 .b8 body_a0[8]\n)\n;\n")
    o = build_outline(mod, fn, rng, call, ext)
    k = fresh_machine(1)
    run(fn, k, 1, rng.last)
    body = [f for f in parse(o.ptx.decode()).functions if f.name == "body"][0]
    b = Machine()
    b.symbols.update({"body_a0": ("param", None), "body_ret": ("param", None)})
    b.mem["param"] = {("body_a0", 0): k.regs["%r1"], ("body_a0", 4): k.regs["%r3"]}
    assert run(body, b) == "ret"
    assert b.mem["param"][("body_ret", 0)] == k.regs["%r6"] == 2 * k.regs["%r1"] + 40


def test_kernel_register_also_declared_in_a_scoped_block_is_recomputed():
    prefix = ["{", ".reg .b32 %r5;", "mov.u32 %r5, 1;", "}", "add.s32 %r5, %r1, 3;"]
    want, got, o = run_both(prefix, ["add.s32 %r6, %r5, 1;"], ["%r1"], ["%r6"])
    assert "%r5" in o.recomputed and got == want


def test_region_needs_refuses_a_branch_to_a_label_that_is_not_an_exit():
    # the body's liveness walk meets a branch to a label before the region: unless the
    # caller names it as an exit the call text dispatches on, there is nowhere to go
    with pytest.raises(OutlineError, match="outside the region"):
        needs(["$L_top:"], ["add.s32 %r6, %r1, 1;", "@%p1 bra $L_top;"])
    mod, fn, rng, _, _ = kernel(["$L_top:"], ["add.s32 %r6, %r1, 1;", "@%p1 bra $L_top;"],
                                ["%r1"], ["%r6"])
    # named as an exit, the same branch is a way out of the body: %r6 is read at it
    got = region_needs(fn, rng, {"%r6"}, exit_labels=frozenset({"$L_top"}))
    assert set(got) == {"%r1", "%p1"}
