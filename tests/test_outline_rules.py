"""The one edit layer: the outliner's region rewrites are statement rules of the same
protocol as the recipe rewrites (rrsplice.rewrite.rules), run by the same planner and
span applier.

Expected texts are written out by hand from the kernel text (the rename of a `.shared`
array to the passed register, the widening of a 64-bit use), not derived with the code
under test."""

from __future__ import annotations

import pytest
from test_bites_outline import kernel
from test_outline_oracle import HEAD

from rrsplice.outline import OutlineError, build_outline
from rrsplice.ptx.emit import emit
from rrsplice.ptx.parser import parse
from rrsplice.ptx.select import StatementRange
from rrsplice.rewrite.rules import FirstMatch, Replacement, RewritePlan, StatementRule
from rrsplice.rewrite.user import UserRule


class _Recording(StatementRule):
    def __init__(self, name, opcodes, seen):
        self.name, self.opcodes, self.seen = name, opcodes, seen

    def matches(self, st):
        return st.base in self.opcodes

    def rewrite(self, fn, st, plan):
        self.seen.append((self.name, st.sid))


def test_first_match_gives_each_statement_to_the_first_matching_rule_in_program_order():
    mod = parse(HEAD + "\tadd.s32 %r1, %r2, 1;\n\tmul.lo.s32 %r3, %r1, 2;\n"
                "\tadd.s32 %r4, %r3, 1;\n\tret;\n}\n")
    fn = mod.functions[0]
    seen: list = []
    rule = FirstMatch(_Recording("adds", {"add"}, seen),
                      _Recording("arith", {"add", "mul"}, seen))
    plan = RewritePlan()
    rule.run(fn, plan, lambda st: "outside" if st.base == "ret" else None)
    assert seen == [("adds", "s4"), ("arith", "s5"), ("adds", "s6")]
    # one rule alone is a FirstMatch of one; `skip` keeps statements as they are
    seen.clear()
    _Recording("arith", {"add", "mul"}, seen).run(fn, plan, lambda st: "cut" if st.index == 5
                                                  else None)
    assert seen == [("arith", "s4"), ("arith", "s6")]
    assert [(k, s.sid, w) for k, s, w in plan.skipped] == [("arith", "s5", "cut")]


def test_a_replacement_of_parts_leaves_the_rest_of_the_statement_byte_exact():
    text = HEAD + "\tld.shared.u32  %r6, [smem+4];   // keep me\n\tret;\n}\n"
    mod = parse(text)
    fn = mod.functions[0]
    st = fn.statements[3]
    at = text.index("smem+4")
    plan = RewritePlan(replacements=[Replacement("rename", st, "", fn,
                                                 parts=((at, at + 4, "%r9"),))])
    out = emit(mod, plan.edits(mod)).decode()
    assert out == text.replace("[smem+4]", "[%r9+4]")
    assert Replacement("rename", st, "", fn, parts=((at, at + 4, "%r9"),)).spans() == \
        [(at, at + 4, "%r9")]


def _shared_kernel(region: list, call_pre: str = "\tmov.u32 %r9, smem;\n"):
    """A kernel whose call passes %r9, holding smem's address, and %r1; returns %r6. The
    region starts at s4, line 20, after the three statements of HEAD."""
    text = HEAD + "".join(f"\t{s}\n" for s in region) \
        + "\tret;\n}\n"
    mod = parse(text)
    call = ("{\n" + call_pre + "\t.param .b32 a0;\n\tst.param.b32 [a0+0], %r9;\n"
            "\t.param .b32 a1;\n\tst.param.b32 [a1+0], %r1;\n"
            "\t.param .align 4 .b8 rv[4];\n\tcall.uni (rv), body, (a0, a1);\n"
            "\tld.param.b32 %r6, [rv+0];\n}\n")
    ext = (".extern .func (.param .align 4 .b8 body_ret[4]) body\n"
           "(\n\t.param .b32 body_a0,\n\t.param .b32 body_a1\n)\n;\n")
    return mod, mod.functions[0], StatementRange(4, 3 + len(region)), call, ext


def test_shared_array_becomes_the_passed_register_and_a_64_bit_use_is_widened():
    mod, fn, rng, call, ext = _shared_kernel([
        "ld.shared.u32 %r6, [smem+4];",
        "mov.u64 %rd3, smem;",
        "st.shared.u32 [smem], %r1;"])
    o = build_outline(mod, fn, rng, call, ext)
    body = o.ptx.decode()
    assert o.symbols == {"smem": "%r9"}
    # %r9 is a kernel register: the body copies it before the region (which could change
    # it), and widens the copy for the 64-bit use
    assert "\t// values taken before the region runs\n\tmov.b32 %rrsor0, %r9;\n" \
           "\tcvt.u64.u32 %rrsod0, %rrsor0;\n" in body
    assert "\tld.shared.u32 %r6, [%rrsor0+4];\n\tmov.u64 %rd3, %rrsod0;\n" \
           "\tst.shared.u32 [%rrsor0], %r1;\n" in body


@pytest.mark.parametrize("stmt,msg", [
    ("mov.u64 %rd3, k_param_0;", "s4 (line 20) takes the address of kernel parameter "
     "k_param_0 ('mov.u64 %rd3, k_param_0;'): a .func cannot see the entry's parameters; "
     "pass the value instead"),
    ("ld.shared.u32 %r6, [smem+4];", "s4 (line 20) uses the .shared array smem, which a "
     "separate .func cannot name; the call must pass its address (`mov.u32 %x, smem;` "
     "then `st.param.b32 [pN+0], %x;`)"),
])
def test_refusals_keep_their_texts(stmt, msg):
    mod, fn, rng, call, ext = _shared_kernel([stmt, "add.s32 %r6, %r1, 1;"], call_pre="")
    with pytest.raises(OutlineError) as exc:
        build_outline(mod, fn, rng, call, ext)
    assert str(exc.value) == msg


def test_a_recipe_rule_on_a_statement_the_outliner_rewrites_is_an_overlap():
    mod, fn, rng, call, ext = _shared_kernel(["ld.shared.u32 %r6, [smem+4];"])
    rule = UserRule(["ld.shared.u32"], "{guard}ld.volatile.shared.u32 {0}, {1};")
    with pytest.raises(OutlineError, match="overlapping rewrites"):
        build_outline(mod, fn, rng, call, ext, rules=[rule])


def test_recipe_rules_and_the_outliners_rules_share_one_plan():
    """A recipe rule rewrites the region's copy in the body (with its declaration), next
    to the outliner's own rename on another statement."""
    mod, fn, rng, call, ext = _shared_kernel(["ld.shared.u32 %r6, [smem+4];",
                                              "add.s32 %r6, %r6, %r1;"])
    rule = UserRule(["add.s32"], "{guard}call.uni trace, ({0});",
                    extern=".extern .func trace(.param .b32 x);")
    o = build_outline(mod, fn, rng, call, ext, rules=[rule])
    body = o.ptx.decode()
    assert "\tld.shared.u32 %r6, [%rrsor0+4];\n\tcall.uni trace, (%r6);\n" in body
    assert body.count(".extern .func trace(.param .b32 x);") == 1


def test_kernel_parameter_read_becomes_a_copy_of_the_passed_value():
    mod, fn, rng, call, ext = kernel(["ld.param.u32 %r5, [k_param_1];"],
                                     ["ld.param.u32 %r7, [k_param_1];",
                                      "add.s32 %r6, %r7, 1;"], ["%r5"], ["%r6"])
    o = build_outline(mod, fn, rng, call, ext)
    assert o.kernel_params == [rng.first]
    assert "\tmov.b32 %r7, %rrsor0;\n\tadd.s32 %r6, %r7, 1;\n" in o.ptx.decode()


def test_a_branch_out_of_the_region_is_retargeted_by_a_rule_of_the_same_plan():
    """`@%p1 bra $L_after` (the statement right after the region) becomes a branch to the
    body's exit label, only the label's characters changed (comment and spacing kept); the
    rule's replacement sits in the plan next to the outliner's other rules."""
    from rrsplice.outline.body import _context, _region_rewrites
    from rrsplice.outline.exit_branches import ExitBranches
    region = ["add.s32 %r6, %r1, 1;", "setp.gt.s32 %p1, %r1, 3;",
              "@%p1  bra   $L_after;  // leave early", "add.s32 %r6, %r6, 1;"]
    mod, fn, rng, call, ext = kernel(["add.s32 %r1, %r1, 0;"], region + ["$L_after:"],
                                     ["%r1"], ["%r6"])
    rng = StatementRange(rng.first, rng.last - 1)        # the label stays outside
    o = build_outline(mod, fn, rng, call, ext)
    body = o.ptx.decode()
    assert "\t@%p1  bra   $L__rrsplice_exit0;  // leave early\n" in body
    assert "$L__rrsplice_exit0:\n" in body and "$L_after" not in body
    ctx = _context(mod, fn, rng, call, ext, None, None)
    _edits, _decls, plan, exits = _region_rewrites(ctx, [])
    (r,) = [r for r in plan.replacements if r.kind == ExitBranches.name]
    assert r.statement.text.strip().startswith("@%p1  bra") and len(r.parts) == 1
    assert exits.exit_of == {"$L_after": 0}


def test_a_recipe_rule_error_is_reported_before_an_exit_the_call_text_cannot_take():
    region = ["add.s32 %r6, %r1, 1;", "bra $L_far;", "add.s32 %r6, %r6, 1;"]
    mod, fn, rng, call, ext = kernel(["add.s32 %r1, %r1, 0;"],
                                     region + ["add.s32 %r7, %r6, 1;", "$L_far:"],
                                     ["%r1"], ["%r6"])
    rng = StatementRange(rng.first, rng.last - 2)
    with pytest.raises(OutlineError, match=r"branches to \$L_far .*outside the region"):
        build_outline(mod, fn, rng, call, ext)
    rule = UserRule(["add.s32"], "{guard}add.s32 {0}, {9};")      # no operand 9
    with pytest.raises(OutlineError, match=r"rewrite-rule: s\d+: the template") as exc:
        build_outline(mod, fn, rng, call, ext, rules=[rule])
    assert "$L_far" not in str(exc.value)
