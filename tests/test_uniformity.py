"""`call.uni` under divergent control flow: `check` reports a cut whose first statement is
control-dependent on a per-lane branch (`divergent-call`), on nvcc's own output of kernels
written for it (corpus_fixtures/src/divergent_call.cu), and the repository's real cuts
stay clean because their entries really are uniform."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, RECIPES

import rrsplice
from rrsplice.analysis.dataflow import analyze
from rrsplice.analysis.uniformity import uniformity
from rrsplice.check import check_recipe
from rrsplice.cli import main
from rrsplice.ptx.select import lines_to_range
from rrsplice.workflow.scaffold import new_recipe

DIV = FIXTURES / "edge" / "divergent_call_sm89.ptx"
LINES = DIV.read_text().splitlines()
MODULE = rrsplice.parse(DIV)


def _marked(fn):
    """The statements between the function's first `// rr-begin` and `// rr-end`."""
    inside = range(fn.body.line, fn.body.end_line)
    b = next(n for n in inside if "rr-begin" in LINES[n - 1])
    e = next(n for n in inside if n > b and "rr-end" in LINES[n - 1])
    return lines_to_range(fn, b, e)


# kernel -> (the per-lane value its cut's entry depends on, the branch's source text)
DIVERGENT = {
    "lane_guarded": ("%tid.x", "@%p1 bra \t$L__BB0_2;"),
    "data_guarded": ("a load from global memory", "@%p1 bra \t$L__BB1_2;"),
    "lane_loop": ("a load from global memory", "@%p2 bra \t$L__BB3_4;"),
}


@pytest.mark.parametrize("kernel", sorted(DIVERGENT))
def test_a_cut_under_a_per_lane_branch_is_reported(tmp_path, kernel):
    fn = MODULE.function(kernel)
    rng = _marked(fn)
    # recipe new scaffolds a plain `call` there, which checks clean ...
    res = new_recipe(kernel, DIV, str(rng), abi="param", entry=kernel, out=tmp_path / "r.py")
    text = res.path.read_text()
    assert "CALL_OPCODE = 'call'" in text and "per-lane branch" in text
    assert not [f for f in check_recipe(res.path).errors if f.code == "divergent-call"]
    # ... and the same recipe asking for call.uni is refused
    res.path.write_text(text.replace("CALL_OPCODE = 'call'", "CALL_OPCODE = 'call.uni'"))
    rep = check_recipe(res.path)
    (f,) = [f for f in rep.errors if f.code == "divergent-call"]
    source, branch = DIVERGENT[kernel]
    assert f.statement == f"s{rng.first}"
    assert f"`{branch.strip()}`" in f.message and f"reads {source}" in f.message
    # the chain walks from the branch's predicate back to the per-lane source
    u = uniformity(analyze(fn))
    index, why = u.divergence_at(rng.first, outside=rng)
    assert fn.statements[index - 1].text == branch
    assert u.chain(why)[-1][1] == source


def test_a_per_lane_early_return_is_a_warning(tmp_path):
    # `if (t >= n) return;`: the lanes that leave meet the others again only at nvcc's
    # shared `ret`, so the call's lanes arrive together -- without the ones that left
    fn = MODULE.function("early_return")
    rng = _marked(fn)
    res = new_recipe("er", DIV, str(rng), abi="param", entry="early_return",
                     out=tmp_path / "er.py")
    rep = check_recipe(res.path)
    assert rep.ok
    (f,) = [f for f in rep.warnings if f.code == "divergent-call"]
    assert "early exit" in f.message and "reads %tid.x" in f.message
    u = uniformity(analyze(fn))
    index, _why = u.divergence_at(rng.first, outside=rng)
    assert fn.statements[index - 1].text == "@%p1 bra \t$L__BB2_2;"
    assert u.only_exits(u.cfg.block_of[index])
    assert u.divergence_at(rng.first, outside=rng, exits=False) is None
    lg = MODULE.function("lane_guarded")
    ul = uniformity(analyze(lg))
    assert not ul.only_exits(ul.cfg.block_of[ul.divergence_at(_marked(lg).first)[0]])


def test_a_cut_under_uniform_branches_is_clean(tmp_path):
    # `if (blockIdx.x < nb)` and a loop over the parameter k: both branches are uniform
    fn = MODULE.function("block_guarded")
    rng = _marked(fn)
    res = new_recipe("bg", DIV, str(rng), abi="param", entry="block_guarded",
                     out=tmp_path / "bg.py")
    rep = check_recipe(res.path)
    assert rep.ok
    (f,) = [f for f in rep.findings if f.code == "divergent-call"]
    assert f.severity == "info"
    u = uniformity(analyze(fn))
    over = [fn.statements[u.cfg.blocks[b].last - 1].text for b in u.branches_over(rng.first)]
    assert "@%p3 bra \t$L__BB4_6;" in over         # blockIdx.x >= nb || k < 1
    assert not any(b in u.divergent for b in u.branches_over(rng.first))
    # the same function's %tid-derived index is per-lane, its parameters are not
    assert "%r7" not in u.per_lane and u.per_lane  # %r7 = k (ld.param)


def test_cli_reports_the_finding_on_stderr(tmp_path):
    fn = MODULE.function("lane_guarded")
    rng = _marked(fn)
    out = tmp_path / "lg.py"
    r = CliRunner().invoke(main, ["recipe", "new", "lg", "--module", str(DIV), "--range",
                                  str(rng), "--entry", "lane_guarded", "--abi", "param",
                                  "-o", str(out)])
    assert r.exit_code == 0, r.stderr
    out.write_text(out.read_text().replace("CALL_OPCODE = 'call'", "CALL_OPCODE = 'call.uni'"))
    r = CliRunner().invoke(main, ["check", str(out)])
    assert r.exit_code == 1
    line = fn.statements[rng.first - 1].line
    assert f"{DIV.name}:{line}:" in r.stderr and "[divergent-call]" in r.stderr
    assert "s6 (line " in r.stderr and "reads %tid.x" in r.stderr


REPO = sorted(p for p in RECIPES.glob("*.py") if "cut_call" in p.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("recipe", REPO, ids=[p.stem for p in REPO])
def test_repository_cuts_are_reached_in_uniform_control_flow(recipe):
    rep = check_recipe(recipe)
    assert not [f for f in rep.errors if f.code == "divergent-call"]
    t = rep.target
    u = uniformity(rep.analysis)
    over = u.branches_over(t.rng.first, outside=t.rng)
    if recipe.stem.startswith("loops_"):
        # each loop cut sits behind nvcc's `n < 1` test of the kernel parameter n
        (b,) = over
        br = t.fn.statements[u.cfg.blocks[b].last - 1]
        assert br.text.startswith("@%p1 bra") and b not in u.divergent
    else:
        assert over == []          # the swin cuts: straight-line code from the entry


def test_uniform_sources_are_a_table():
    from rrsplice.analysis.uniformity import UNIFORM_SPECIALS
    assert {"%ctaid", "%nctaid", "%ntid"} <= UNIFORM_SPECIALS
    assert not {"%tid", "%laneid", "%clock", "%warpid", "%smid"} & UNIFORM_SPECIALS


def test_early_exit_and_guarded_ret_make_control_dependence(tmp_path):
    # `@%p ret` (hand-written: nvcc branches to a shared ret) also ends lanes early
    src = Path(tmp_path / "g.ptx")
    src.write_text(
        ".version 8.7\n.target sm_89\n.address_size 64\n\n"
        ".visible .entry g(.param .u64 g_param_0)\n{\n"
        "\t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\n"
        "\tld.param.u64 %rd1, [g_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
        "\tmov.u32 %r1, %laneid;\n\tsetp.gt.u32 %p1, %r1, 7;\n\t@%p1 ret;\n"
        "\tadd.u32 %r2, %r1, 1;\n\tst.global.u32 [%rd2], %r2;\n\tret;\n}\n")
    fn = rrsplice.parse(src).function("g")
    u = uniformity(analyze(fn))
    at = u.divergence_at(6)
    assert at is not None and fn.statements[at[0] - 1].text == "@%p1 ret;"
    assert u.chain(at[1])[-1][1] == "%laneid"


def test_a_value_set_under_a_per_lane_branch_is_per_lane(tmp_path):
    # %r2 is 0 or 1 depending on which way the lane went at `@%p1 bra` (each def is a
    # constant): the branch on it is per-lane, though no per-lane value flows into it
    src = Path(tmp_path / "s.ptx")
    src.write_text(
        ".version 8.7\n.target sm_89\n.address_size 64\n\n"
        ".visible .entry s(.param .u64 s_param_0)\n{\n"
        "\t.reg .pred %p<3>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<3>;\n\n"
        "\tld.param.u64 %rd1, [s_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
        "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\tmov.u32 %r2, 0;\n"
        "\t@%p1 bra $L1;\n\tmov.u32 %r2, 1;\n$L1:\n\tsetp.eq.u32 %p2, %r2, 0;\n"
        "\t@%p2 bra $L2;\n\tadd.u32 %r3, %r2, 1;\n\tst.global.u32 [%rd2], %r3;\n"
        "$L2:\n\tret;\n}\n")
    fn = rrsplice.parse(src).function("s")
    add = next(st for st in fn.statements if st.base == "add")
    u = uniformity(analyze(fn))
    at = u.divergence_at(add.index)
    assert at is not None and fn.statements[at[0] - 1].text == "@%p2 bra $L2;"
    assert [w for _, w in u.chain(at[1])][:3] == ["%p2", "%r2", "control at s6"]
