"""Debug stages store through a pointer chosen by role: DEBUG_PARAM / --debug-param, else the
first pointer the kernel only writes; `check` refuses a debug pointer the kernel reads through
or one past its parameter's end (corpus_fixtures/frag, ground truth beside each kernel)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from rrsplice.analysis.paramroles import pointer_uses, write_only_pointer
from rrsplice.check import check_recipe
from rrsplice.cli.app import main
from rrsplice.infra import cache
from rrsplice.ptx.select import select_function
from rrsplice.workflow.splice import apply

FRAG = FIXTURES / "frag"


def _last_mma(stem):
    m = cache.load_module(FRAG / f"{stem}.ptx")
    fn, _ = select_function(m, None)
    mma = [st for st in fn.statements if not st.is_label and st.base == "mma"][-1]
    reg = mma.operands[0].items[0].name
    return m, fn, mma.end_line, reg


def _recipe(tmp_path, stem, extra=""):
    _m, _fn, line, reg = _last_mma(stem)
    p = tmp_path / "fs.py"
    p.write_text(f"F = 'frag/{stem}.ptx'\n{extra}\n\ndef recipe():\n    return dict(file=F)\n\n"
                 f"def stages():\n    return {{'fs.d': ({line}, [{reg!r}])}}\n")
    return p


def _roles(stem):
    truth = json.loads((FRAG / f"{stem}.truth.json").read_text())
    return {(p["name"], f["offset"]): f["role"] for p in truth["params"] for f in p["fields"]}


@pytest.mark.parametrize("stem", ["frag_struct", "frag_triton", "frag_breload"])
def test_default_debug_pointer_is_the_output_the_kernel_only_writes(stem):
    m, fn, _line, _reg = _last_mma(stem)
    fa = cache.load_analysis(m, fn)
    ref = write_only_pointer(fa)
    assert _roles(stem)[(ref.name, ref.offset)] == "out"
    # and every pointer the kernel reads through is an input of the generator's table
    for r, use in pointer_uses(fa).items():
        if use["read"] is not None:
            assert _roles(stem)[(r.name, r.offset)] in ("A", "B", "bias")


def test_default_stage_checks_and_stores_through_the_output(tmp_path):
    p = _recipe(tmp_path, "frag_struct")
    rep = check_recipe(p, stage="fs.d")
    assert rep.ok, [f.message for f in rep.errors]
    out = apply(p, stage="fs.d", out=tmp_path / "dbg.ptx")
    text = out.output.read_text()
    assert "ld.param.u64 %rrdbgd0, [frag_struct_param_0+16];" in text


@pytest.mark.parametrize("extra, code, words", [
    ("DEBUG_PARAM_OFFSET = 8", "debug-alias", "frag_struct_param_0+8"),   # the bias pointer
    ("DEBUG_PARAM = '+24'", "debug-alias", "frag_struct_param_0+24"),     # the weights
    ("DEBUG_PARAM = '+40'", "debug-param", "past its end"),               # 40-byte struct
    ("DEBUG_PARAM = '+36'", "debug-param", "past its end"),
])
def test_check_refuses_a_debug_pointer_that_aliases_an_input_or_overruns(tmp_path, extra,
                                                                        code, words):
    p = _recipe(tmp_path, "frag_struct", extra)
    rep = check_recipe(p, stage="fs.d")
    errs = [f for f in rep.errors if f.code == code]
    assert errs and words in errs[0].message, [f.message for f in rep.findings]


def test_cli_debug_param_overrides_the_recipe(tmp_path):
    p = _recipe(tmp_path, "frag_triton")
    r = CliRunner().invoke(main, ["check", str(p), "--debug", "fs.d", "--debug-param", "1"])
    assert r.exit_code == 1 and "[debug-alias]" in r.output, r.output    # param_1 is B
    r = CliRunner().invoke(main, ["check", str(p), "--debug", "fs.d", "--debug-param", "3"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["check", str(p), "--debug", "fs.d", "--debug-param",
                                  "frag_triton_param_0+8"])
    assert r.exit_code == 1 and "past its end" in r.output, r.output
    out = tmp_path / "o.ptx"
    r = CliRunner().invoke(main, ["apply", str(p), "--debug", "fs.d", "--debug-param", "3",
                                  "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "[frag_triton_param_3];" in out.read_text()


def test_debug_param_naming_no_parameter_is_a_recipe_error(tmp_path):
    p = _recipe(tmp_path, "frag_struct", "DEBUG_PARAM = 'nope+8'")
    r = CliRunner().invoke(main, ["check", str(p), "--debug", "fs.d"])
    assert r.exit_code != 0 and "no parameter 'nope'" in r.output and "Traceback" not in r.output


@pytest.mark.slow
def test_debug_build_assembles(tmp_path, ptxas_path):
    from rrsplice.infra.tools import ptxas
    p = _recipe(tmp_path, "frag_struct")
    out = apply(p, stage="fs.d", out=tmp_path / "dbg.ptx")
    r = ptxas(out.output, "sm_89", verbose=False, out=tmp_path / "dbg.cubin")
    assert r.ok, r.log[-2000:]


def test_an_acknowledged_alias_is_a_warning_with_the_reason(tmp_path):
    p = _recipe(tmp_path, "frag_struct", "DEBUG_PARAM = '+8'\nDEBUG_ALIAS_OK = 'past the bias'")
    rep = check_recipe(p, stage="fs.d")
    assert rep.ok
    w = [f for f in rep.warnings if f.code == "debug-alias"]
    assert w and "past the bias" in w[0].message
    p = _recipe(tmp_path, "frag_struct", "DEBUG_PARAM = '+40'\nDEBUG_ALIAS_OK = 'x'")
    assert [f.code for f in check_recipe(p, stage="fs.d").errors] == ["debug-param"]
