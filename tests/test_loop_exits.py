"""Cuts around nvcc loops whose exits leave the region (corpus_fixtures/loops/): a branch to
the statement after the region is the body's return; other exit targets come back as an
exit index the call text dispatches on (rrsplice.analysis.exits)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from rrsplice import parse
from rrsplice.analysis.exits import read_dispatch, region_exits, return_labels
from rrsplice.check import check_recipe
from rrsplice.outline import OutlineError, outline_recipe
from rrsplice.ptx.select import StatementRange
from rrsplice.workflow.splice import apply

ROOT = Path(__file__).resolve().parent.parent
LOOPS = ROOT / "corpus_fixtures" / "loops" / "loops_sm90.ptx"
RECIPES = ["loops_early_break", "loops_nested", "loops_search"]


def _ptxas(path: Path, *extra) -> None:
    exe = shutil.which("ptxas")
    if exe is None:
        assert os.environ.get("RRSPLICE_REQUIRE_PTXAS") != "1", "ptxas not found"
        pytest.skip("ptxas not installed")
    subprocess.run([exe, "-arch=sm_90", "-c", str(path), "-o", os.devnull, *extra],
                   check=True, capture_output=True)


def _fn(name):
    return parse(LOOPS).function(name)


def test_exits_of_the_search_loop():
    fn = _fn("search")
    rng = StatementRange(17, 42)
    assert fn.statement(17).label == "$L__BB2_2" and fn.statement(42).opcode == "bra.uni"
    assert return_labels(fn, rng) == {"$L__BB2_7"}
    assert [(e.sid, e.label) for e in region_exits(fn, rng)] == [
        ("s24", "$L__BB2_7"), ("s37", "$L__BB2_6"), ("s42", "$L__BB2_8")]


@pytest.mark.parametrize("name", RECIPES)
def test_loop_recipes_pass_check(name):
    rep = check_recipe(ROOT / "recipes" / f"{name}.py")
    assert rep.ok, [f.render() for f in rep.errors]


def test_early_break_body_returns_at_the_label_after_the_loop(tmp_path):
    body, _p, _r = outline_recipe(ROOT / "recipes" / "loops_early_break.py")
    text = body.ptx.decode()
    # `@%p2 bra $L__BB0_4;` (the break) leaves to the label right after the cut
    assert "@%p2 bra \t$L__rrsplice_exit0;" in text
    assert "$L__BB0_4" not in text
    region_end = text.index("// ---- end of region ----")
    assert text.index("$L__rrsplice_exit0:") > region_end
    assert "%rrsx" not in text                 # one way out: no exit index
    path = tmp_path / "early.body.ptx"
    path.write_bytes(body.ptx)
    _ptxas(path)


def test_search_body_returns_an_exit_index(tmp_path):
    body, _p, _r = outline_recipe(ROOT / "recipes" / "loops_search.py")
    text = body.ptx.decode()
    assert "@%p2 bra \t$L__rrsplice_exit0;" in text      # $L__BB2_7: right after the cut
    assert "@%p7 bra \t$L__rrsplice_exit1;" in text      # $L__BB2_6: EXITS[0]
    assert "bra.uni \t$L__rrsplice_exit2;" in text       # $L__BB2_8: EXITS[1]
    tail = text[text.index("// ---- end of region ----"):]
    for k in range(3):
        assert f"$L__rrsplice_exit{k}:\n\tmov.u32 %rrsx, {k};" in tail
    assert "st.param.b32 [d4r_loops_search_ret+8], %rrsx;" in tail
    path = tmp_path / "search.body.ptx"
    path.write_bytes(body.ptx)
    _ptxas(path)


def test_applied_search_dispatches_after_the_call(tmp_path):
    res = apply(ROOT / "recipes" / "loops_search.py", out=tmp_path / "patched.ptx")
    text = res.output.read_text()
    call = text[text.index("call.uni"):]
    assert re.search(r"ld\.param\.b32 %rrsx, \[rv\+8\];\s*"
                     r"setp\.eq\.u32 %rrsq, %rrsx, 1;\s*@%rrsq bra \$L__BB2_6;\s*"
                     r"setp\.eq\.u32 %rrsq, %rrsx, 2;\s*@%rrsq bra \$L__BB2_8;", call)
    _ptxas(res.output)


def _undispatched(tmp_path: Path) -> Path:
    """loops_search with the dispatch on $L__BB2_6 left out of the call text."""
    src = (ROOT / "recipes" / "loops_search.py").read_text()
    src = src.replace('MODULE = "loops/loops_sm90.ptx"', f"MODULE = {str(LOOPS)!r}")
    src = src.replace("EXITS = [\n    \"$L__BB2_6\",\n    \"$L__BB2_8\",\n]",
                      "EXITS = [\n    \"$L__BB2_8\",\n]")
    path = tmp_path / "search_undispatched.py"
    path.write_text(src)
    return path


@pytest.mark.slow
def test_an_exit_the_call_text_does_not_dispatch_is_an_error(tmp_path):
    path = _undispatched(tmp_path)
    rep = check_recipe(path)
    (f,) = [f for f in rep.errors if f.code == "branch-exit"]
    assert f.statement == "s37" and "$L__BB2_6" in f.message
    with pytest.raises(OutlineError, match=r"s37 \(line \d+\) branches to \$L__BB2_6"):
        outline_recipe(path)


def _stmts(text):
    src = textwrap.dedent(f"""\
        .version 8.7
        .target sm_89
        .address_size 64
        .visible .entry k()
        {{
        .reg .b32 %r<4>;
        .reg .pred %p<4>;
        {text}
        }}
        """)
    return parse(src).functions[0].statements


def test_read_dispatch_pairs_and_errors():
    d = read_dispatch(_stmts("setp.eq.u32 %p1, %r1, 1;\n@%p1 bra $A;\n"
                             "setp.ne.s32 %p2, %r1, 2;\n@!%p2 bra $B;\n$A:\n$B:"))
    assert d.register == "%r1" and d.targets == {"$A": 1, "$B": 2}
    bad = {
        "setp.eq.u32 %p1, %r1, 1;\n@%p1 bra $A;\nsetp.eq.u32 %p2, %r2, 2;\n@%p2 bra $B;":
            "both %r1 and %r2",
        "setp.eq.u32 %p1, %r1, 1;\n@!%p1 bra $A;": "NOT 1",
        "setp.eq.u32 %p1, %r1, 0;\n@%p1 bra $A;": "0 is the return",
        "setp.eq.u32 %p1, %r1, 1;\n@%p1 bra $A;\nsetp.eq.u32 %p2, %r1, 2;\n@%p2 bra $A;":
            "indices 1 and 2 to \\$A",
    }
    for text, msg in bad.items():
        with pytest.raises(ValueError, match=msg):
            read_dispatch(_stmts(text + "\n$A:\n$B:"))


def test_scratch_abi_delivers_the_exit_index_through_the_scratch_slot(tmp_path):
    from rrsplice.workflow.scaffold import new_recipe
    path = tmp_path / "search_scratch.py"
    new_recipe("search_scratch", LOOPS, "s17-s42", abi="scratch", entry="search", out=path)
    src = path.read_text()
    assert 'EXITS = [\n    "$L__BB2_6",\n    "$L__BB2_8",\n]' in src
    rep = check_recipe(path)
    assert rep.ok, [f.render() for f in rep.errors]
    body, _p, _r = outline_recipe(path)
    text = body.ptx.decode()
    tail = text[text.index("// ---- end of region ----"):]
    assert re.search(r"st\.shared\.b32 \[%\w+\+8\], %rrsx;", tail)
    out = tmp_path / "body.ptx"
    out.write_bytes(body.ptx)
    _ptxas(out)


HEAD_ENTERED = """.version 8.7
.target sm_89
.address_size 64

.visible .entry k(
	.param .u64 k_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	ld.global.u32 	%r1, [%rd2];
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 bra 	$L1;
	add.s32 	%r1, %r1, 5;
$L1:
	add.s32 	%r2, %r1, 7;
	mul.lo.s32 	%r3, %r2, %r2;
	st.global.u32 	[%rd2+4], %r3;
	ret;
}
"""


def test_a_head_label_entered_from_outside_stays_in_front_of_the_call(tmp_path):
    from rrsplice.workflow.scaffold import new_recipe
    mod = tmp_path / "k.ptx"
    mod.write_text(HEAD_ENTERED)
    path = tmp_path / "head.py"
    new_recipe("head", mod, "s7-s9", abi="param", out=path)   # $L1: .. mul.lo
    src = path.read_text()
    assert 'HEAD_LABELS = [\n    "$L1",\n]' in src
    assert check_recipe(path).ok
    res = apply(path, out=tmp_path / "patched.ptx")
    text = res.output.read_text()
    assert re.search(r"@%p1 bra \t\$L1;\s*add\.s32 \t%r1, %r1, 5;\s*\$L1:\s*\{", text)
    _ptxas(res.output)
    body, _p, _r = outline_recipe(path)
    out = tmp_path / "body.ptx"
    out.write_bytes(body.ptx)
    _ptxas(out)
    # without the label in the splice text the branch would dangle: check says so
    bad = tmp_path / "head_dropped.py"
    bad.write_text(src.replace('HEAD_LABELS = [\n    "$L1",\n]', "HEAD_LABELS = []"))
    (f,) = check_recipe(bad).errors
    assert f.code == "label-entry" and "must begin with `$L1:`" in f.message
