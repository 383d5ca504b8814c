"""Statement rewrites (sust, rz_round, a recipe's own rules): hand-written statements, the
real-compiler surface/roundf fixture (byte-exact outside the rewritten statements, ptxas
accepts), combination with a cut, and the recipe options' validation."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from rrsplice.check import CheckFailed, check_recipe
from rrsplice.infra.tools import ptxas
from rrsplice.ptx.parser import parse_bytes
from rrsplice.rewrite import RzRoundRule, SustRule, plan_rewrites
from rrsplice.rewrite.sust import SUST_KINDS, reference_bodies
from rrsplice.workflow.recipe import BUNDLED_CORPUS, RecipeError, load_recipe
from rrsplice.workflow.splice import apply

ROOT = Path(__file__).resolve().parent.parent
SURFACE = BUNDLED_CORPUS / "surface_round_sm89.ptx"

HAND = textwrap.dedent("""\
    .version 8.0
    .target sm_89
    .address_size 64

    .visible .entry k(.param .u64 k_s, .param .u64 k_o)
    {
    \t.reg .pred %p<3>;
    \t.reg .b16 %rs<5>;
    \t.reg .b32 %r<9>;
    \t.reg .f32 %f<12>;
    \t.reg .b64 %rd<4>;
    \tld.param.u64 %rd1, [k_s];
    \tld.param.u64 %rd2, [k_o];
    \tmov.u32 %r1, %tid.x;
    \tmov.u32 %r2, %tid.y;
    \tcvt.u16.u32 %rs1, %r1;
    \tcvt.u16.u32 %rs2, %r2;
    \tmov.b32 %f1, %r1;
    \tsetp.lt.u32 %p1, %r1, 7;
    \tsust.b.2d.v2.b16.zero [%rd1, {%r1, %r2}], {%rs1, %rs2};
    \t@%p1 sust.b.2d.b32.zero [%rd1, {%r1, %r2}], {%r1};
    \tsust.b.2d.v4.b16.zero [%rd1, {%r1, 0}], {%rs1, %rs2, %rs1, %rs2};
    \tsust.p.2d.v4.b32.zero [%rd1, {%r1, %r2}], {%f1, %f1, %f1, %f1};
    \tsust.b.2d.b32.trap [%rd1, {%r1, %r2}], {%r2};
    \tmov.f32 %f2, 0f3F000000;
    \tcopysign.f32 %f3, %f1, %f2;
    \tadd.rz.ftz.f32 %f4, %f1, %f3;
    \tmul.f32 %f9, %f1, %f1;
    \tcvt.rzi.f32.f32 %f5, %f4;
    \tst.global.f32 [%rd2], %f5;
    \tret;
    }
    """)


def _module(text: str):
    return parse_bytes(text.encode(), "hand.ptx")


def _plan(text: str, rules):
    m = _module(text)
    return m, plan_rewrites(m, rules, [f for f in m.functions if f.has_body])


def test_sust_every_kind_on_hand_written_statements(tmp_path, ptxas_path):
    m, plan = _plan(HAND, [SustRule(True)])
    assert plan.ok, plan.issues
    assert plan.counts == {"sust.b32": 1, "sust.p_v4b32": 1, "sust.v2b16": 1, "sust.v4b16": 1}
    by_kind = {r.kind: r.text for r in plan.replacements}
    assert by_kind["sust.v2b16"] == (
        "{ .param .b64 sust_s; .param .b32 sust_x; .param .b32 sust_y; .param .b16 sust_v0; "
        ".param .b16 sust_v1; st.param.b64 [sust_s], %rd1; st.param.b32 [sust_x], %r1; "
        "st.param.b32 [sust_y], %r2; st.param.b16 [sust_v0], %rs1; st.param.b16 [sust_v1], "
        "%rs2; call d4r_sust_v2b16, (sust_s, sust_x, sust_y, sust_v0, sust_v1); }")
    # the guard moves onto the call; an immediate coordinate is stored as it is
    assert "@%p1 call d4r_sust_b32," in by_kind["sust.b32"]
    assert "st.param.b32 [sust_y], 0;" in by_kind["sust.v4b16"]
    # the .trap store is not one of the shapes: left alone and said so
    assert [(k, s.opcode) for k, s, _ in plan.skipped] == [("sust", "sust.b.2d.b32.trap")]
    assert sorted(plan.declarations) == sorted(k.helper for k in SUST_KINDS.values())
    out = _emit(m, plan)
    assert out.count(b"call d4r_sust_") == 4 and b"sust.b.2d.b32.trap" in out
    p = tmp_path / "hand.ptx"
    p.write_bytes(out)
    assert ptxas(p, "sm_89", out=tmp_path / "hand.o", verbose=False).ok


def _emit(m, plan) -> bytes:
    from rrsplice.ptx.emit import emit
    return emit(m, plan.edits(m))


def test_sust_selected_kinds_only():
    _, plan = _plan(HAND, [SustRule(["b32", "p_v4b32"])])
    assert plan.counts == {"sust.b32": 1, "sust.p_v4b32": 1}
    assert sorted(k for k, _s, why in plan.skipped if why == "kind not selected") == \
        ["sust.v2b16", "sust.v4b16"]


@pytest.mark.parametrize("old,new,msg", [
    ("{%rs1, %rs2}];", None, None),
    ("sust.b.2d.v2.b16.zero [%rd1, {%r1, %r2}], {%rs1, %rs2};",
     "sust.b.2d.v2.b16.zero [%rd1, {%r1, %r2}], {%r1, %rs2};", "value %r1 is not 2 bytes"),
    ("sust.b.2d.v2.b16.zero [%rd1, {%r1, %r2}], {%rs1, %rs2};",
     "sust.b.2d.v2.b16.zero [%r1, {%r1, %r2}], {%rs1, %rs2};", "not declared 64-bit"),
    ("sust.b.2d.v2.b16.zero [%rd1, {%r1, %r2}], {%rs1, %rs2};",
     "sust.b.2d.v2.b16.zero [surf, {%r1, %r2}], {%rs1, %rs2};", "not a 64-bit register"),
])
def test_sust_operands_are_checked(old, new, msg):
    if new is None:
        return
    _, plan = _plan(HAND.replace(old, new), [SustRule(True)])
    errs = [i for i in plan.issues if i.severity == "error"]
    assert len(errs) == 1 and errs[0].code == "rewrite-operand" and msg in errs[0].message


def test_rz_round_pairs_through_other_statements():
    m, plan = _plan(HAND, [RzRoundRule()])
    assert plan.ok and plan.counts == {"rz_round": 1}
    r = plan.replacements[0]
    assert r.statement.opcode == "cvt.rzi.f32.f32" and [f.opcode for f in r.folded] == \
        ["add.rz.ftz.f32"]
    assert r.text.startswith("{ .reg .f32 %rzr_t, %rzr_u; .reg .pred %rzr_p; "
                             "cvt.rzi.f32.f32 %rzr_t, %f1; sub.f32 %rzr_u, %f1, %rzr_t;")
    assert r.text.endswith("selp.f32 %f5, %rzr_u, %rzr_t, %rzr_p; }")
    out = _emit(m, plan).decode()
    assert ".rz." not in out and "mul.f32 %f9, %f1, %f1;" in out


@pytest.mark.parametrize("edit,msg", [
    (("\tcvt.rzi.f32.f32 %f5, %f4;\n", "\tcvt.rn.f32.f32 %f5, %f4;\n"), "a lone `add.rz`"),
    (("copysign.f32 %f3, %f1, %f2;", "mul.f32 %f3, %f1, %f2;"), "copysign(0.5, %f1)"),
    (("mov.f32 %f2, 0f3F000000;", "mov.f32 %f2, 0f3F800000;"), "copysign(0.5, %f1)"),
    (("mul.f32 %f9, %f1, %f1;", "mul.f32 %f1, %f9, %f9;"), "redefined by"),
    (("st.global.f32 [%rd2], %f5;", "st.global.f32 [%rd2], %f4;"), "also read by"),
])
def test_rz_round_refuses_what_it_cannot_prove(edit, msg):
    _, plan = _plan(HAND.replace(*edit), [RzRoundRule()])
    errs = [i for i in plan.issues if i.code == "rewrite-round"]
    assert len(errs) == 1 and msg in errs[0].message and not plan.replacements


def _recipe(tmp_path, body: str, name="r.py") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def test_fixture_byte_exact_outside_rewritten_statements(tmp_path, ptxas_path):
    res = apply(ROOT / "recipes" / "zluda_surface_round.py", out=tmp_path / "o.ptx")
    plan = res.report.facts.rewrites
    assert plan.counts == {"rz_round": 5, "sust.b32": 1, "sust.p_v4b32": 1,
                           "sust.v2b16": 1, "sust.v4b16": 1}
    old = SURFACE.read_text().splitlines(keepends=True)
    new = (tmp_path / "o.ptx").read_text().splitlines(keepends=True)
    # oracle from the text alone: the declarations are inserted before the first entry,
    # every other input line is either untouched or one of the rewritten statements
    first_fn = next(i for i, ln in enumerate(old) if ".entry" in ln)
    decls = new[first_fn:first_fn + len(new) - len(old)]
    assert [d.split("(")[0] for d in decls if d.strip()] == sorted(
        f".extern .func {k.helper}" for k in SUST_KINDS.values())
    body = new[:first_fn] + new[first_fn + len(decls):]
    assert len(body) == len(old)
    rewritten = re.compile(r"^\s*(sust\.|add\.rz\.ftz\.f32|cvt\.rzi\.f32\.f32)")
    changed = [i for i, (a, b) in enumerate(zip(old, body, strict=False)) if a != b]
    assert changed == [i for i, a in enumerate(old) if rewritten.match(a)]
    assert len(changed) == 14
    assert all(ln.strip() == "" for ln in body if ln not in old and "{" not in ln)
    assert not re.search(r"\bsust\.|\.rz\.", "".join(body))
    for arch in ("sm_89", "sm_90"):
        assert ptxas(tmp_path / "o.ptx", arch, out=tmp_path / f"{arch}.o", verbose=False).ok
    # the reference helper bodies link with it
    (tmp_path / "h.ptx").write_text(reference_bodies())
    assert ptxas(tmp_path / "h.ptx", "sm_90", out=tmp_path / "h.o", verbose=False).ok


def test_rewrites_combine_with_a_cut(tmp_path, ptxas_path):
    """The repository's whole-region recipe of swin_tiny plus sust=True and rz_round=True:
    the cut and the epilogue's surface store are both applied, nothing else changes."""
    src = ROOT / "recipes" / "swin_tiny_sm89.py"
    p = _recipe(tmp_path, f"""\
        import importlib.util
        _s = importlib.util.spec_from_file_location("base", {str(src)!r})
        _m = importlib.util.module_from_spec(_s)
        _s.loader.exec_module(_m)
        def recipe():
            return dict(_m.recipe(), sust=True, rz_round=True)
        """, "tiny_zluda.py")
    apply(src, out=tmp_path / "base.ptx")
    both = apply(p, out=tmp_path / "both.ptx")
    assert both.report.facts.rewrites.counts == {"sust.v4b16": 1}
    a = (tmp_path / "base.ptx").read_text()
    b = (tmp_path / "both.ptx").read_text()
    assert a.count("sust.b.2d.v4.b16.zero") == 1 and "sust." not in b.replace("sust_", "")
    la, lb = a.splitlines(), b.splitlines()
    extra = [ln for ln in lb if ln not in la]
    assert len(extra) == 2 and extra[0].startswith(".extern .func d4r_sust_v4b16(")
    assert "call d4r_sust_v4b16" in extra[1]
    assert ptxas(tmp_path / "both.ptx", "sm_89", out=tmp_path / "b.o", verbose=False).ok


def test_rewrites_skip_statements_inside_the_cut(tmp_path):
    text = HAND.replace("\tret;\n", "\tret;\n")
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(text)
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines, 1) if "sust.b.2d.v2.b16" in ln)
    p = _recipe(tmp_path, f"""\
        def recipe():
            return dict(file="hand.ptx", delete=({first}, {first + 1}), insert="\\tmov.u32 %r3, 0;",
                        sust=True)
        """)
    rep = check_recipe(p, corpus)
    assert rep.ok, [f.render() for f in rep.errors]
    assert rep.facts.rewrites.counts == {"sust.b32": 1, "sust.p_v4b32": 1,
                                               "sust.v4b16": 1}
    assert any(f.code == "rewrite" and "inside the cut" in f.message for f in rep.findings)
    apply(p, corpus=corpus, out=tmp_path / "o.ptx")
    assert "sust.b.2d.v2.b16" not in (tmp_path / "o.ptx").read_text()


def test_recipe_own_rule(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(HAND)
    p = _recipe(tmp_path, """\
        def recipe():
            return dict(file="hand.ptx", rewrites=[dict(
                opcode="sust.b.2d.b32.trap", name="trap_store",
                replace="{guard}call my_store, ({0}, {1});",
                extern=".extern .func my_store(.param .b64 a, .param .b32 b);")])
        """)
    rep = check_recipe(p, corpus)
    assert rep.facts.rewrites.counts == {"trap_store": 1}
    out = apply(p, corpus=corpus, out=tmp_path / "o.ptx").output.read_text()
    assert "call my_store, ([%rd1, {%r1, %r2}], {%r2});" in out
    assert out.count(".extern .func my_store") == 1


def test_lone_add_rz_fails_the_check(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(HAND.replace("cvt.rzi.f32.f32 %f5, %f4;",
                                                  "cvt.rn.f32.f32 %f5, %f4;"))
    p = _recipe(tmp_path, 'def recipe():\n    return dict(file="hand.ptx", rz_round=True)\n')
    with pytest.raises(CheckFailed, match="lone `add.rz`"):
        apply(p, corpus=corpus, out=tmp_path / "o.ptx")
    assert not (tmp_path / "o.ptx").exists()


def test_nothing_to_rewrite_is_a_warning(tmp_path):
    p = _recipe(tmp_path, 'def recipe():\n    return dict(file="swin_tiny_sm89.ptx", '
                          'rz_round=True)\n')
    rep = check_recipe(p)
    assert rep.ok and [f.code for f in rep.warnings] == ["rewrite-none"]


@pytest.mark.parametrize("opts,key,msg", [
    ("sust='yes'", "sust", "expected True, False or a list"),
    ("sust=['v2b16', 'v8b16']", "sust", "unknown surface-store kind 'v8b16'"),
    ("rz_round=1", "rz_round", "expected True or False"),
    ("rewrites=[dict(opcode='x')]", "rewrites[0]", "a rule is dict"),
    ("rewrites=[dict(opcode='x', replace='y', when=1)]", "rewrites[0]", "unknown rule key"),
    ("entries='(unclosed'", "entries", "not a regular expression"),
])
def test_option_validation(tmp_path, opts, key, msg):
    p = _recipe(tmp_path, f"def recipe():\n    return dict(file='x.ptx', {opts})\n")
    with pytest.raises(RecipeError) as ei:
        load_recipe(p)
    assert ei.value.key == key and msg in ei.value.message


# ---------------------------------------------------------------- the zluda profile's lints

def test_zluda_lints_name_what_the_rewrites_leave(tmp_path):
    p = _recipe(tmp_path, "def recipe():\n    return dict(file='surface_round_sm89.ptx', "
                          "sust=['b32'])\n")
    rep = check_recipe(p, target="zluda")
    left = [f for f in rep.findings if f.code == "sust-left"]
    assert sorted(f.message.split("`")[1].split()[0] for f in left) == [
        "sust.b.2d.v2.b16.zero", "sust.b.2d.v4.b16.zero", "sust.p.2d.v4.b32.zero"]
    rounding = [f for f in rep.findings if f.code == "explicit-rounding"]
    assert len(rounding) == 5 and all(".rz rounding mode" in f.message for f in rounding)
    assert all(f.severity == "warning" for f in left + rounding)
    # the ptxas profile does not care
    assert not {"sust-left", "explicit-rounding"} & {f.code for f in
                                                     check_recipe(p, target="ptxas").findings}


def test_zluda_lints_are_quiet_when_everything_is_rewritten():
    rep = check_recipe(ROOT / "recipes" / "zluda_surface_round.py", target="zluda")
    assert rep.ok
    assert not {"sust-left", "explicit-rounding", "undeclared-call"} & \
        {f.code for f in rep.findings}


def test_zluda_lint_undeclared_call_from_a_rule(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(HAND)
    p = _recipe(tmp_path, """\
        def recipe():
            return dict(file="hand.ptx", rewrites=[dict(
                opcode="sust.b.2d.b32.trap", replace="call my_store, ({1});")])
        """)
    for target in ("zluda", "ptxas"):
        rep = check_recipe(p, corpus, target=target)
        errs = [f for f in rep.errors if f.code == "undeclared-call"]
        assert len(errs) == 1 and "calls my_store" in errs[0].message


def _form_cases():
    lines = HAND.replace("\tret;\n", "\tmov.u32 %r5, 7;\n\tret;\n").splitlines()
    mov = next(i for i, ln in enumerate(lines, 1) if "mov.u32 %r5, 7;" in ln)
    store = next(i for i, ln in enumerate(lines, 1) if "st.global.f32" in ln)
    all4 = {"sust.b32": 1, "sust.p_v4b32": 1, "sust.v2b16": 1, "sust.v4b16": 1}
    return "\n".join(lines) + "\n", [
        ("baseline", "", dict(all4, rz_round=1)),
        ("cut_call", f"cut_call=({mov}, {mov + 1}), call='\\tcall.uni dummy;', "
                     "extern='.extern .func dummy;'", dict(all4, rz_round=1)),
        ("delete", f"delete=({mov}, {mov + 1}), delete_check=('mov.u32', None), "
                   "insert='\\tmov.u32 %r5, 8;'", dict(all4, rz_round=1)),
        ("cut_after", f"cut_after={store}, cut_check='st.global', tail='\\tret;\\n}}\\n'",
         dict(all4, rz_round=1)),
        ("debug", f"debug=({store}, ['%r1']), debug_block='\\t// debug %r1'",
         dict(all4, rz_round=1)),
        ("replace_body", "replace_body='k', stub='\\tret;'", {}),
    ]


@pytest.mark.parametrize("form", [c[0] for c in _form_cases()[1]])
def test_rewrites_combine_with_every_form(form, tmp_path, ptxas_path):
    text, cases = _form_cases()
    keys, counts = next((k, c) for f, k, c in cases if f == form)
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(text)
    p = _recipe(tmp_path, "def recipe():\n    return dict(file='hand.ptx', sust=True, "
                          f"rz_round=True{', ' + keys if keys else ''})\n")
    rec = load_recipe(p)
    assert rec.form == form and rec.sust is True and rec.rz_round is True
    res = apply(p, corpus=corpus, out=tmp_path / "o.ptx")
    got = res.report.facts.rewrites.counts
    assert got == counts
    out = (tmp_path / "o.ptx").read_text()
    if counts:
        assert ".rz." not in out and out.count("call d4r_sust_") == 4
    else:                               # the whole body is replaced: nothing left to rewrite
        assert "rewrite-none" in {f.code for f in res.report.warnings}
    assert ptxas(tmp_path / "o.ptx", "sm_89", out=tmp_path / "o.o", verbose=False).ok


def test_outline_applies_the_rewrites_to_the_region(tmp_path, ptxas_path, nvlink_path):
    """A cut over the surface stores and the roundf idioms with sust=True, rz_round=True:
    `apply` leaves the region alone (the cut removes it), the outlined body's copy of the
    region gets the same rewrites, and the two link."""
    from rrsplice.workflow.verify import verify
    m = load_recipe(ROOT / "recipes" / "zluda_surface_round.py")
    lines = SURFACE.read_text().splitlines()
    # from the first copysign to the last statement before the rounded-value store's guard
    first = next(i for i, ln in enumerate(lines, 1) if "copysign.f32" in ln)
    last = next(i for i, ln in enumerate(lines, 1) if "sust.p.2d" in ln)
    assert m.sust is True and first < last
    from rrsplice.ptx.parser import parse
    from rrsplice.workflow.scaffold import new_recipe
    fn = next(f for f in parse(SURFACE).functions if f.name == "rrsurf_round_kernel")
    a = next(s for s in fn.statements if s.line >= first)
    b = [s for s in fn.statements if s.end_line <= last][-1]
    sc = new_recipe("surf_cut", SURFACE, f"s{a.index}-s{b.index}", abi="param",
                    entry="rrsurf_round_kernel", out=tmp_path / "surf_cut.py")
    text = sc.path.read_text().replace("extern=extern())",
                                       "extern=extern(), sust=True, rz_round=True)")
    sc.path.write_text(text)
    v = verify(sc.path, "sm_90", keep=tmp_path / "v", original=False)
    steps = {x["name"]: x for x in v.to_json()["steps"]}
    assert steps["ptxas patched"]["ok"] and steps["ptxas body"]["ok"]
    body = Path(v.files["body"]).read_text()
    assert body.count("call d4r_sust_") == 4 and ".rz." not in body
    assert ".extern .func d4r_sust_v2b16(" in body
    assert "sust." not in Path(v.files["patched"]).read_text().replace("sust_", "")
    # the body calls the helpers: linked with their reference bodies it resolves
    (tmp_path / "h.ptx").write_text(reference_bodies())
    assert ptxas(tmp_path / "h.ptx", "sm_90", out=tmp_path / "h.o", verbose=False).ok
    import subprocess
    objs = sorted(str(o) for o in (tmp_path / "v").glob("*.sm_90.o"))
    r = subprocess.run([str(nvlink_path), "-arch=sm_90", *objs, str(tmp_path / "h.o"), "-o",
                        str(tmp_path / "l.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_rz_round_idiom_straddling_the_cut_is_an_error(tmp_path):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(HAND)
    cvt = next(i for i, ln in enumerate(HAND.splitlines(), 1) if "cvt.rzi.f32.f32" in ln)
    p = _recipe(tmp_path, f"def recipe():\n    return dict(file='hand.ptx', rz_round=True, "
                          f"delete=({cvt}, {cvt + 1}), insert='\\tmov.f32 %f5, 0f00000000;')\n")
    rep = check_recipe(p, corpus)
    assert [f.code for f in rep.errors] == ["rewrite-round"]
    assert "straddles the edge of the cut" in rep.errors[0].message


def test_cli_check_reports_rewrite_counts():
    from click.testing import CliRunner

    from rrsplice.cli import main
    r = CliRunner().invoke(main, ["check", str(ROOT / "recipes" / "zluda_surface_round.py")])
    assert r.exit_code == 0, r.output
    assert re.search(r"^rewrites\s+rz_round 5, sust.b32 1, sust.p_v4b32 1, sust.v2b16 1, "
                     r"sust.v4b16 1 \(14 statement\(s\) touched\)$", r.output, re.M)


@pytest.mark.parametrize("replace,msg", [
    ("lambda op, ops, guard: exit(3)", "raised SystemExit"),
    ("lambda op, ops, guard: 1 / 0", "raised ZeroDivisionError"),
    ("'call f, ({7});'", "does not fit"),
])
def test_recipe_rule_failures_are_findings(tmp_path, replace, msg):
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "hand.ptx").write_text(HAND)
    p = _recipe(tmp_path, f"""\
        def recipe():
            return dict(file="hand.ptx", rewrites=[dict(opcode="sust.b.2d.b32.trap",
                                                        replace={replace})])
        """)
    rep = check_recipe(p, corpus)
    errs = [f for f in rep.errors if f.code == "rewrite-rule"]
    assert len(errs) == 1 and msg in errs[0].message, [f.render() for f in rep.errors]
    with pytest.raises(CheckFailed):
        apply(p, corpus=corpus, out=tmp_path / "o.ptx")
    assert not (tmp_path / "o.ptx").exists()
