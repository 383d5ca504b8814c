"""`rrsplice check`: each check with a recipe that fails it and one that passes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.check import check_recipe, empty_arg_lists, parse_splice_text
from rrsplice.cli import main
from rrsplice.workflow.recipe import BUNDLED_CORPUS
from rrsplice.workflow.splice import apply

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "recipes_bad"
SEED = ROOT / "recipes" / "seed" / "swin_dec2_recipe.py"


def codes(report, severity="error"):
    return {f.code for f in report.findings if f.severity == severity}


# recipe file -> the error code it must produce (and it must produce no other error)
FAILING = {
    "cut_range.py": "cut-range",
    "cut_block.py": "cut-block",
    "live_in.py": "live-in",
    "live_out.py": "live-out",
    "mma_pair.py": "mma-pair",
    "clobber.py": "clobber",
    "call_parse.py": "call-parse",
    "call_args.py": "call-args",
    "call_types.py": "call-args",
    "callee_order.py": "callee-order",
    "empty_args.py": "empty-args",
    "param_return.py": "param-return",
    "undeclared.py": "undeclared",
    "label_entry.py": "label-entry",
    "branch_exit.py": "branch-exit",
    "scratch_size.py": "scratch-size",
    "scratch_overlap4.py": "scratch-size",
    "scratch_live.py": "scratch-live",
    "scratch_race.py": "scratch-race",
    "shared_base.py": "shared-base",
}
# extra errors a failing recipe cannot avoid
ALSO = {"cut_block.py": {"live-out", "cut-scope", "scope-register"}, "empty_args.py": {"call-args"}}


@pytest.mark.parametrize("name", sorted(FAILING))
@pytest.mark.slow
def test_recipe_fails_its_check(name):
    rep = check_recipe(BAD / name)
    assert not rep.ok
    assert FAILING[name] in codes(rep)
    assert codes(rep) <= {FAILING[name]} | ALSO.get(name, set()), rep.errors
    for f in rep.errors:
        assert f.message


@pytest.mark.parametrize("name", ["good_dec2.py", "good_cfg.py", "good_scratch_race.py",
                                  "good_shared_base.py"])
def test_recipes_that_pass(name):
    rep = check_recipe(BAD / name)
    assert rep.ok, [f.render() for f in rep.errors]


@pytest.mark.parametrize("path", sorted((ROOT / "recipes").glob("*.py")) + [SEED],
                         ids=lambda p: p.name)
@pytest.mark.slow
def test_repository_recipes_pass(path):
    rep = check_recipe(path)
    assert rep.ok, [f.render() for f in rep.errors]
    if path.parent == ROOT / "recipes":
        # generated call text never reads a special register in arithmetic (the seed's
        # %laneid operand is the warning test_seed_laneid_operand_is_a_portability_warning)
        assert "special-operand" not in codes(rep, "warning"), path


def test_mma_pair_message_names_both_halves():
    rep = check_recipe(BAD / "mma_pair.py")
    (f,) = [f for f in rep.errors if f.code == "mma-pair"]
    assert "only %r19360 of mma" in f.message and "{%r19360, %r19361}" in f.message
    assert f.registers == ["%r19361"]
    assert f.statement and f.line          # where the epilogue reads it


def test_live_in_error_names_register_and_definition():
    rep = check_recipe(BAD / "live_in.py")
    (f,) = [f for f in rep.errors if f.code == "live-in"]
    assert f.registers == ["%rd7"] and f.statement == "s1"


def test_live_out_error_names_first_use():
    rep = check_recipe(BAD / "live_out.py")
    (f,) = [f for f in rep.errors if f.code == "live-out"]
    assert f.registers == ["%r6"] and "read at s27" in f.message


def test_label_entry_and_branch_exit_name_the_branch():
    (f,) = [f for f in check_recipe(BAD / "label_entry.py").errors if f.code == "label-entry"]
    assert f.line == 91 and "$L__BB0_3" in f.message
    (g,) = [f for f in check_recipe(BAD / "branch_exit.py").errors if f.code == "branch-exit"]
    assert g.line == 113 and "$L__BB0_8" in g.message


def test_scratch_live_reports_last_access_before_and_first_after():
    rep = check_recipe(BAD / "scratch_live.py")
    (f,) = [f for f in rep.errors if f.code == "scratch-live"]
    assert "written at s7 (line 24)" in f.message and "read at s11 (line 30)" in f.message
    assert rep.facts.scratch.last_before == {"statement": "s7", "line": 24}
    assert rep.facts.scratch.first_after == {"statement": "s11", "line": 30}


def test_scratch_facts_of_the_seed():
    rep = check_recipe(SEED)
    sc = rep.facts.scratch
    assert sc.bytes == 9600 and sc.stride == 16 and sc.last_before is None
    assert sc.first_after["line"] > 36892


def test_seed_laneid_operand_is_a_portability_warning():
    rep = check_recipe(SEED)
    assert rep.ok
    (f,) = [f for f in rep.warnings if f.code == "special-operand"]
    assert "%laneid" in f.message and "ptxas rejects" in f.message
    assert "special-operand" in codes(check_recipe(BAD / "special_operand.py"), "warning")


@pytest.mark.slow
def test_passed_but_not_live_is_a_warning():
    rep = check_recipe(BAD / "passed_unused.py")
    assert rep.ok and "passed-unused" in codes(rep, "warning")


def test_bar_inside_region_is_a_warning():
    assert "control" in codes(check_recipe(BAD / "good_dec2.py"), "warning")


def test_facts_of_the_seed_cut():
    f = check_recipe(SEED).facts
    assert f.lines == [1535, 36892] and f.statements == "s452-s15510"
    assert f.mma == 726 and f.phases == 38
    assert f.live_out == ["%r19360", "%r19361", "%r19370", "%r19371"]
    assert f.returned == f.live_out
    assert len(f.passed) == 62 and f.passed[-2:] == ["%rd32", "%rd7"]
    assert len(f.live_in_classes["derivable"]) == 96


def test_applying_twice_is_refused(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    out = apply(ROOT / "recipes" / "swin_dec2.py", out=tmp_path / "once.ptx").output
    shutil.copyfile(out, corpus / "0021-PREPASS_ENTRYPOINT_NAME.ptx")
    rep = check_recipe(ROOT / "recipes" / "swin_dec2.py", corpus)
    assert "applied" in codes(rep)
    assert any("applying twice is refused" in f.message for f in rep.errors)


def test_call_text_parse_helpers():
    sp = parse_splice_text("{\n.reg .b32 %x<2>;\nmov.u32 %x0, 1;\n}", None)
    assert sp.error is None and len(sp.statements) == 1
    bad = parse_splice_text("{\nadd.s32 %x0, ;\n}", None)
    assert bad.error and "line 2" in bad.error
    assert empty_arg_lists("call.uni f, ();\n// ()\ncall.uni g, (a);") == [1]


def test_cli_check_exit_codes_and_json():
    r = CliRunner().invoke(main, ["check", str(BAD / "mma_pair.py"), "--json"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["ok"] is False
    f = next(x for x in data["findings"] if x["code"] == "mma-pair")
    assert set(f) == {"severity", "code", "message", "statement", "line", "registers"}
    r = CliRunner().invoke(main, ["check", str(BAD / "good_dec2.py")])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["check", str(BAD / "unknown_key.py")])
    assert r.exit_code == 2 and "cutcall" in r.output and "Traceback" not in r.output


def test_cli_check_human_output_mentions_sid_and_line():
    r = CliRunner().invoke(main, ["check", str(BAD / "live_out.py")])
    assert r.exit_code == 1
    assert "live-out" in r.output and "s27" in r.output


def test_scratch_race_names_the_overlap_and_the_fix():
    rep = check_recipe(BAD / "scratch_race.py")
    (f,) = [f for f in rep.errors if f.code == "scratch-race"]
    assert "per thread" in f.message and "bar.sync 0;" in f.message
    assert "of thread 32 (warp 1) writes byte 128" in f.message and "(warp 0)" in f.message
    assert f.statement == "s12" and f.line == 32
    assert rep.facts.scratch.race.startswith("overlap")


def test_scratch_race_with_the_barrier_is_a_fact():
    rep = check_recipe(BAD / "good_scratch_race.py")
    assert "scratch-race" in codes(rep, "info")
    assert rep.facts.scratch.race == "guarded: bar.sync 0;"


def test_scratch_race_per_lane_slots_is_a_warning():
    """The seed's convention (slots per lane): the warps share every slot, so it is the
    native body's business; check warns and does not refuse it."""
    rep = check_recipe(BAD / "scratch_race_lane.py")
    assert rep.ok
    assert {"scratch-race", "scratch-warps"} <= codes(rep, "warning")


@pytest.mark.slow
def test_seed_recipe_race_is_a_warning_and_it_still_applies(tmp_path):
    rep = check_recipe(SEED)
    assert rep.ok and "scratch-race" in codes(rep, "warning")
    (f,) = [f for f in rep.warnings if f.code == "scratch-race"]
    assert "seed recipe's convention" in f.message
    assert apply(SEED, out=tmp_path / "seed.ptx").output.exists()


@pytest.mark.parametrize("name", ["swin_dec1.py", "swin_dec2.py"])
@pytest.mark.slow
def test_dec_recipes_guard_the_scratch_with_a_barrier(name):
    rep = check_recipe(ROOT / "recipes" / name)
    assert rep.ok
    assert not {"scratch-race", "scratch-warps"} & codes(rep, "warning")
    assert rep.facts.scratch.race == "guarded: bar.sync 0;"
    assert rep.facts.scratch.indexed_by == "thread"


def test_shared_base_error_names_the_statement():
    (f,) = [f for f in check_recipe(BAD / "shared_base.py").errors if f.code == "shared-base"]
    assert f.statement == "s14" and "smem" in f.message and "pass" in f.message


def test_scaffold_scratch_emits_the_barrier_and_passes(tmp_path):
    from rrsplice.workflow.recipe import load_recipe
    from rrsplice.workflow.scaffold import new_recipe
    tiny = BUNDLED_CORPUS / "swin_tiny_sm89.ptx"
    sc = new_recipe("swin_tiny_sm89", tiny, "s342-s2656", out=tmp_path / "t.py")
    assert sc.barrier
    rec = load_recipe(sc.path)
    assert rec.call.rstrip().endswith("bar.sync 0;\n}")
    assert "MUST execute a block barrier" in rec.doc
    rep = check_recipe(sc.path)
    assert rep.ok and "scratch-race" in codes(rep, "info")


@pytest.mark.slow
def test_scaffold_param_passes_the_shared_base_and_outlines(tmp_path):
    from rrsplice.outline import outline_recipe
    from rrsplice.workflow.recipe import load_recipe
    from rrsplice.workflow.scaffold import new_recipe
    small = BUNDLED_CORPUS / "swin_small_sm89.ptx"
    # phases 1-4: phase 3's epilogue stages through the kernel's .shared array
    sc = new_recipe("p4", small, "s486-s2519", abi="param", out=tmp_path / "p4.py")
    assert sc.shared == ["_ZZ19rrswin_small_kernelE4smem"] and not sc.barrier
    rec = load_recipe(sc.path)
    assert "mov.u32 %rrsb0, _ZZ19rrswin_small_kernelE4smem;" in rec.call
    assert "d4r_p4_shared0" in rec.extern
    rep = check_recipe(sc.path)
    assert rep.ok, [f.render() for f in rep.errors]
    out, _, _ = outline_recipe(sc.path)
    assert out.ptx


def test_undeclared_register_is_reported_and_never_counted_as_passed():
    # the call text reads %rswin2, which only a `.reg %rswin<3>` would declare: it is an
    # error, and it must not appear among the kernel registers the call hands over
    rep = check_recipe(BAD / "undeclared.py")
    assert [(f.code, f.registers) for f in rep.errors] == [("undeclared", ["%rswin2"])]
    passed = rep.facts.passed
    assert "%rswin2" not in passed
    good = check_recipe(BAD / "good_dec2.py").facts.passed
    assert sorted(passed) == sorted(good)
