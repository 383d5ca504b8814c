"""`rrsplice apply` and `recipe new`: byte-exact splices, atomic writes, ptxas acceptance."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.check import CheckFailed, check_recipe
from rrsplice.cli import main
from rrsplice.infra.cache import load_module
from rrsplice.infra.tools import ptxas
from rrsplice.ptx.emit import line_byte_offsets
from rrsplice.ptx.parser import parse
from rrsplice.workflow.recipe import BUNDLED_CORPUS, load_recipe
from rrsplice.workflow.scaffold import ScaffoldError, new_recipe
from rrsplice.workflow.splice import ApplyError, apply, default_output

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "recipes" / "seed" / "swin_dec2_recipe.py"
DEC2 = BUNDLED_CORPUS / "0021-PREPASS_ENTRYPOINT_NAME.ptx"
REPO_RECIPES = sorted((ROOT / "recipes").glob("*.py"))
# the three real-compiler kernels (their variant family has tests of its own: test_port.py)
REAL = sorted(p for p in BUNDLED_CORPUS.glob("swin_*_sm*.ptx")
              if re.fullmatch(r"swin_(big|small|tiny)_sm\d+\.ptx", p.name))
BAD = ROOT / "tests" / "recipes_bad"


def archs_for(ptx: Path) -> list:
    """sm_89 and sm_120, except where the module's .target is above sm_89."""
    target = re.search(rb"^\.target\s+sm_(\d+)", ptx.read_bytes(), re.M)
    sm = int(target.group(1)) if target else 89
    return [a for a in ("sm_89", "sm_120") if int(a[3:]) >= sm]


@pytest.mark.slow
def test_seed_output_is_input_with_the_cut_replaced(tmp_path):
    res = apply(SEED, out=tmp_path / "seed.ptx")
    data = DEC2.read_bytes()
    offs = line_byte_offsets(data)
    rec = load_recipe(SEED)
    fn_line = load_module(DEC2).functions[0].line          # `.visible .entry ...`
    ext = rec.extern.encode()
    expected = (data[:offs[fn_line - 1]] + ext + b"\n" + data[offs[fn_line - 1]:offs[1534]]
                + rec.call.encode() + b"\n" + data[offs[36892]:])
    assert res.output.read_bytes() == expected
    assert res.report.facts.statements == "s452-s15510"
    parse(res.output)                                        # re-parses


@pytest.mark.slow
def test_output_outside_the_edits_is_byte_identical(tmp_path):
    res = apply(ROOT / "recipes" / "swin_dec1.py", out=tmp_path / "d1.ptx")
    src = (BUNDLED_CORPUS / "0022-PREPASS_ENTRYPOINT_NAME.ptx").read_bytes()
    out = res.output.read_bytes()
    (ext, cut) = sorted(res.edits, key=lambda e: e.start)
    assert out[:ext.start] == src[:ext.start]
    tail = src[cut.end:]
    assert out.endswith(tail)
    assert out.count(b".extern .func d4r_swin_dec1") == 1


def test_extern_goes_before_the_calling_function(tmp_path):
    out = apply(SEED, out=tmp_path / "o.ptx").output.read_text()
    assert out.index(".extern .func d4r_swin_dec2") < out.index(".visible .entry")
    assert out.index(".extern .func d4r_swin_dec2") > out.index(".address_size")


@pytest.mark.slow
def test_default_output_and_never_over_the_input(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    shutil.copyfile(DEC2, corpus / DEC2.name)
    res = apply(ROOT / "recipes" / "swin_dec2.py", corpus=corpus)
    assert res.output == corpus / "out" / "0021-PREPASS_ENTRYPOINT_NAME.swin_dec2.ptx"
    assert res.output == default_output(corpus / DEC2.name, load_recipe(
        ROOT / "recipes" / "swin_dec2.py"))
    assert (corpus / DEC2.name).read_bytes() == DEC2.read_bytes()
    with pytest.raises(ApplyError, match="refusing to write over the input"):
        apply(ROOT / "recipes" / "swin_dec2.py", corpus=corpus, out=corpus / DEC2.name)
    # -o naming a directory: the default name inside it
    d = tmp_path / "dir"
    d.mkdir()
    assert apply(ROOT / "recipes" / "swin_dec2.py", out=d).output.parent == d
    assert not list(d.glob(".*.tmp"))                     # no temporary file left behind


def test_errors_write_nothing(tmp_path):
    with pytest.raises(CheckFailed) as ei:
        apply(BAD / "mma_pair.py", out=tmp_path / "x.ptx")
    assert not (tmp_path / "x.ptx").exists()
    assert "mma-pair" in str(ei.value)


def test_applying_twice_is_refused_by_apply(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    once = apply(ROOT / "recipes" / "swin_dec2.py", out=tmp_path / "once.ptx").output
    shutil.copyfile(once, corpus / DEC2.name)
    with pytest.raises(CheckFailed, match="applying twice is refused"):
        apply(ROOT / "recipes" / "swin_dec2.py", corpus=corpus, out=tmp_path / "twice.ptx")


def _small_recipe(tmp_path, name, expr):
    p = tmp_path / name
    p.write_text(f"F = {str(BAD / 'scratch_live.ptx')!r}\n\ndef recipe():\n    return {expr}\n")
    return p


def test_legacy_forms_apply(tmp_path):
    src = (BAD / "scratch_live.ptx").read_bytes()
    lines = src.split(b"\n")
    r = apply(_small_recipe(tmp_path, "base.py", "dict(file=F)"), out=tmp_path / "a.ptx")
    assert r.output.read_bytes() == src
    r = apply(_small_recipe(tmp_path, "cut.py", "dict(file=F, cut_after=24, cut_check="
                            "'st.shared.u32', tail='\\tret;\\n}\\n')"), out=tmp_path / "b.ptx")
    assert r.output.read_bytes() == b"\n".join(lines[:24]) + b"\n\tret;\n}\n"
    r = apply(_small_recipe(tmp_path, "del.py", "dict(file=F, delete=(26, 29), delete_check="
                            "('ld.global', 'mul.lo'), insert='\\tmov.u32 %r7, 0;')"),
              out=tmp_path / "c.ptx")
    assert r.output.read_bytes() == b"\n".join(lines[:25] + [b"\tmov.u32 %r7, 0;"]
                                               + lines[28:])
    r = apply(_small_recipe(tmp_path, "body.py", "dict(file=F, replace_body='scratch_live', "
                            "stub='\\tret;')"), out=tmp_path / "d.ptx")
    assert b"{\n\tret;\n}\n" in r.output.read_bytes()
    parse(r.output)
    r = apply(_small_recipe(tmp_path, "dbg.py", "dict(file=F, debug=(28, ['%r7']), "
                            "debug_block=lambda regs: '\\t// store ' + ' '.join(regs))"),
              out=tmp_path / "e.ptx")
    assert r.output.read_bytes() == b"\n".join(lines[:28] + [b"\t// store %r7"] + lines[28:])


def test_legacy_checks_fail_on_wrong_text(tmp_path):
    p = _small_recipe(tmp_path, "del.py", "dict(file=F, delete=(26, 29), delete_check="
                      "('add.s32', 'mul.lo'), insert='')")
    assert "cut-text" in {f.code for f in check_recipe(p).errors}
    p = _small_recipe(tmp_path, "cut.py", "dict(file=F, cut_after=25, cut_check='ret;', "
                      "tail='\\tret;\\n}\\n')")
    assert "cut-text" in {f.code for f in check_recipe(p).errors}


def test_crlf_module_keeps_crlf(tmp_path):
    crlf = BUNDLED_CORPUS / "small" / "crlf.ptx"
    data = crlf.read_bytes()
    n = data.count(b"\n")
    # a one-line insertion after the last line that ends a statement before the body end
    m = parse(crlf)
    st = [s for s in m.functions[0].statements if s.line == s.end_line][2]
    p = tmp_path / "r.py"
    p.write_text(f"def recipe():\n    return dict(file={str(crlf)!r}, debug=({st.end_line}, "
                 "[]), debug_block=lambda r: '// a\\n// b')\n")
    out = apply(p, out=tmp_path / "o.ptx").output.read_bytes()
    assert out.count(b"\n") == n + 2 and out.count(b"\r\n") == n + 2


@pytest.mark.slow
@pytest.mark.parametrize("recipe", REPO_RECIPES, ids=lambda p: p.name)
def test_repository_recipes_apply_and_assemble(recipe, tmp_path, ptxas_path):
    res = apply(recipe, out=tmp_path / "out.ptx")
    assert res.report.ok
    parse(res.output)
    for arch in archs_for(res.input):
        r = ptxas(res.output, arch, verbose=False, out=tmp_path / f"{arch}.cubin")
        assert r.ok, (arch, r.log[-2000:])


@pytest.mark.slow
def test_seed_output_is_rejected_by_ptxas_and_reported(tmp_path, ptxas_path):
    r = CliRunner().invoke(main, ["apply", str(SEED), "-o", str(tmp_path / "s.ptx"),
                                  "--ptxas", "sm_89"])
    assert r.exit_code == 1
    assert "FAILED" in r.output and "Special register argument not allowed" in r.output
    assert "Traceback" not in r.output
    r = CliRunner().invoke(main, ["apply", str(SEED), "-o", str(tmp_path / "s.ptx"),
                                  "--ptxas", "sm_89", "--json"])
    data = json.loads(r.output)
    assert data["ok"] is False and data["ptxas"][0]["ok"] is False


@pytest.mark.slow
def test_cli_apply_summary_and_json(tmp_path):
    r = CliRunner().invoke(main, ["apply", str(ROOT / "recipes" / "swin_dec2.py"), "-o",
                                  str(tmp_path / "o.ptx")])
    assert r.exit_code == 0, r.output
    for word in ("1535-36892", "s452-s15510", "726", "38 phase", "%r19360", "wrote"):
        assert word in r.output
    r = CliRunner().invoke(main, ["apply", str(ROOT / "recipes" / "swin_dec2.py"), "-o",
                                  str(tmp_path / "o.ptx"), "--json"])
    data = json.loads(r.output)
    assert data["ok"] and data["output"] == str(tmp_path / "o.ptx")
    assert data["mma"] == 726 and data["phases"] == 38 and len(data["passed"]) == 62
    assert data["returned"] == ["%r19360", "%r19361", "%r19370", "%r19371"]
    r = CliRunner().invoke(main, ["apply", str(BAD / "mma_pair.py"), "-o",
                                  str(tmp_path / "x.ptx")])
    assert r.exit_code == 1 and "nothing written" in r.output


# ------------------------------------------------------------------ recipe new

def _mma_range(ptx: Path) -> str:
    fn = [f for f in load_module(ptx).functions if f.has_body and f.is_entry][0]
    ms = [s for s in fn.statements if s.base == "mma"]
    return f"s{ms[0].index}-s{ms[-1].index}"


@pytest.mark.parametrize("abi", ["scratch", "param"])
@pytest.mark.slow
def test_scaffold_dec2_matches_the_seed_and_checks(tmp_path, abi):
    sc = new_recipe("swin_dec2", DEC2, "s452-s15510", abi=abi, out=tmp_path / "swin_dec2.py")
    seed = load_recipe(SEED)
    assert sc.a_regs == seed.const("A_REGS")
    assert sc.c_regs == seed.const("C_REGS")
    assert sc.other_regs == ["%rd32", "%rd7"]
    assert sc.ret_regs == seed.const("RET_REGS")
    rec = load_recipe(sc.path)
    assert rec.cut_call == (1535, 36893) and rec.layer == "dec2"
    assert "48x96x128" in rec.doc and "+49152..+49328" in rec.doc
    rep = check_recipe(sc.path)
    assert rep.ok, [f.render() for f in rep.errors]
    assert "special-operand" not in {f.code for f in rep.warnings}
    if abi == "param":
        assert "call.uni (rv), d4r_swin_dec2" in rec.call
        assert rec.extern.count(".param .align 8 .b8") == 1


@pytest.mark.slow
@pytest.mark.parametrize("ptx", REAL, ids=lambda p: p.name)
def test_scaffold_every_real_fixture_checks_and_assembles(ptx, tmp_path, ptxas_path):
    for abi in ("scratch", "param"):
        sc = new_recipe(f"r_{abi}", ptx, _mma_range(ptx), abi=abi, out=tmp_path / f"{abi}.py")
        rep = check_recipe(sc.path)
        assert rep.ok, (abi, [f.render() for f in rep.errors])
        res = apply(sc.path, out=tmp_path / f"{abi}.ptx")
        for arch in archs_for(ptx):
            r = ptxas(res.output, arch, verbose=False, out=tmp_path / f"{abi}{arch}.cubin")
            assert r.ok, (abi, arch, r.log[-2000:])


@pytest.mark.slow
def test_scaffold_refuses_existing_file_and_bad_names(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("")
    with pytest.raises(ScaffoldError, match="exists"):
        new_recipe("x", DEC2, "s452-s15510", out=p)
    with pytest.raises(ScaffoldError, match="identifier"):
        new_recipe("not-a-name", DEC2, "s452-s15510", out=tmp_path / "y.py")


def test_cli_recipe_new(tmp_path):
    out = tmp_path / "swin_tiny.py"
    tiny = BUNDLED_CORPUS / "swin_tiny_sm89.ptx"
    r = CliRunner().invoke(main, ["recipe", "new", "swin_tiny", "--module", str(tiny),
                                  "--range", _mma_range(tiny), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["recipe"] == str(out)
    assert CliRunner().invoke(main, ["check", str(out)]).exit_code == 0
