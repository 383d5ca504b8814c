"""One diagnostic type and one registry of codes: the code table in docs/diagnostics.md is
the registry's, every code the source can emit is registered (read from the source, and
collected from what the command line prints on bad inputs), errors carry their place as
fields, and the command line prints them from those fields."""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rrsplice.cli import main
from rrsplice.ptx.diagnostic import SEVERITIES, Diagnostic, at
from rrsplice.ptx.errors import ParseError, RRSpliceError

ROOT = Path(__file__).resolve().parent.parent
BAD_PTX = sorted((ROOT / "corpus_fixtures" / "bad").glob("*.ptx"))
BAD_RECIPES = sorted(p for p in (ROOT / "tests" / "recipes_bad").glob("*.py")
                     if not p.name.startswith("_"))


def _script():
    spec = importlib.util.spec_from_file_location("diagnostic_codes",
                                                  ROOT / "scripts" / "diagnostic_codes.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def codes() -> dict:
    return _script().registered_codes()


# ------------------------------------------------------------------------ the code table

def test_the_docs_code_table_is_the_registrys():
    gen = _script()
    assert gen.documented((ROOT / "docs" / "diagnostics.md").read_text()) == gen.table(), \
        "docs/diagnostics.md is stale: run python scripts/diagnostic_codes.py --write"


def test_every_code_has_a_one_line_description(codes):
    assert len(codes) > 60
    for c in codes.values():
        assert c.description and "\n" not in c.description, c
        assert c.kind in ("check", "lint", "error"), c


# ------------------------------------------------------------ codes read from the source

_CODE = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
# `... [code]` written into a message by hand (cache warnings, skipped family members)
_IN_TEXT = re.compile(r" \[([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\]\n?$")


@functools.cache
def _trees() -> list:
    """(path relative to the checkout, AST) of every module of rrsplice/, parsed once."""
    return [(p.relative_to(ROOT), ast.parse(p.read_text()))
            for p in sorted((ROOT / "rrsplice").rglob("*.py"))]


def _str(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) \
        else None


@functools.cache
def source_codes() -> dict:
    """code -> places of every code literal in rrsplice/: a severity and a code passed to a
    call (`rep.add("error", "cut-range", ...)`, `Diagnostic("error", "x", ...)`), a `code=`
    argument, a `@lint("x")`, a class's `code = "x"`, a parameter `code` with a default, and
    a ` [x]` closing a message's text."""
    out: dict = {}

    def add(code, where):
        if code:
            out.setdefault(code, []).append(where)

    for rel, tree in _trees():
        for n in ast.walk(tree):
            where = f"{rel}:{getattr(n, 'lineno', 0)}"
            if isinstance(n, ast.Call):
                a = n.args
                if len(a) >= 2 and _str(a[0]) in SEVERITIES:
                    add(_str(a[1]), where)
                for k in n.keywords:
                    if k.arg == "code":
                        add(_str(k.value), where)
                if isinstance(n.func, ast.Name) and n.func.id == "lint" and a:
                    add(_str(a[0]), where)
            elif isinstance(n, ast.ClassDef):
                for s in n.body:
                    if isinstance(s, ast.Assign | ast.AnnAssign) and s.value is not None:
                        names = [t.id for t in (s.targets if isinstance(s, ast.Assign)
                                                else [s.target]) if isinstance(t, ast.Name)]
                        if "code" in names:
                            add(_str(s.value), where)
            elif isinstance(n, ast.FunctionDef):
                args = n.args.args + n.args.kwonlyargs
                defaults = [None] * (len(n.args.args) - len(n.args.defaults)) \
                    + list(n.args.defaults) + list(n.args.kw_defaults)
                for arg, d in zip(args, defaults, strict=True):
                    if arg.arg == "code" and d is not None:
                        add(_str(d), where)
            elif (s := _str(n)) is not None:
                m = _IN_TEXT.search(s)
                if m:
                    add(m.group(1), where)
    return out


def test_every_code_in_the_source_is_registered(codes):
    found = source_codes()
    # the scan sees the codes of every kind: checks, lints, errors, a code written in text
    assert {"cut-range", "live-in", "empty-args", "rewrite-round", "arch", "no-such-file",
            "lift-unsupported", "cache-untrusted", "ptxas"} <= set(found)
    missing = {c: w[:3] for c, w in sorted(found.items()) if c not in codes}
    assert not missing, f"codes emitted but not registered: {missing}"
    assert all(_CODE.fullmatch(c) for c in found), sorted(found)


def test_every_registered_code_is_emitted_somewhere(codes):
    unused = sorted(set(codes) - set(source_codes()))
    assert not unused, f"registered but never emitted: {unused}"


# ---------------------------------------------------- codes the command line prints

def _printed_codes(r) -> set:
    """Codes of the diagnostics in a CLI result: `[code]` closing a stderr line, and the
    codes of JSON findings and errors."""
    out = set()
    for line in r.stderr.splitlines():
        m = re.search(r" \[([a-z][a-z0-9-]*)\]$", line)
        if m and re.match(r"^\S.*?: (?:error|warning|note): ", line):
            out.add(m.group(1))
    try:
        data = json.loads(r.stdout)
    except ValueError:
        return out
    for f in data.get("findings", []):
        out.add(f["code"])
    err = data.get("error")
    if isinstance(err, dict) and err.get("code"):
        out.add(err["code"])
    return out


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_codes_printed_on_bad_ptx_and_hostile_paths_are_registered(codes, tmp_path):
    loop = tmp_path / "loop.ptx"
    loop.symlink_to(loop)
    fifo = tmp_path / "fifo.ptx"
    os.mkfifo(fifo)
    runs = [("liveness", p, "--range", "s1-s2") for p in BAD_PTX]
    runs += [("parse", p) for p in BAD_PTX]
    runs += [("parse", tmp_path / "missing.ptx"), ("functions", tmp_path),
             ("functions", loop), ("functions", fifo), ("functions", "x" * 300 + ".ptx")]
    seen: set = set()
    for args in runs:
        r = _run(*args)
        assert r.exit_code != 0, (args, r.output)
        assert "Traceback" not in r.output, (args, r.output)
        seen |= _printed_codes(r)
    assert {"no-such-file", "not-a-file", "symlink-loop", "name-too-long"} <= seen
    assert seen <= set(codes), sorted(seen - set(codes))


@pytest.mark.slow
@pytest.mark.parametrize("target", ["ptxas", "zluda"])
def test_codes_printed_on_the_bad_recipes_are_registered(codes, target):
    seen: set = set()
    for p in BAD_RECIPES:
        r = _run("check", p, "-v", "--target", target)     # -v: info findings too
        assert r.exit_code in (0, 1, 2), (p, r.output)
        assert "Traceback" not in r.output, (p, r.output)
        seen |= _printed_codes(r)
    assert {"live-in", "live-out", "cut-range", "scratch-race"} <= seen
    assert seen <= set(codes), sorted(seen - set(codes))


# ------------------------------------------------------------- fields, not message text

_ERROR = re.compile(r"(Error|Failed|NotFound|Target)$")
_PATHISH = re.compile(r"path|file|recipe|module|root|dir|target|dest|body", re.I)


def test_no_error_puts_a_path_into_its_message():
    """An error names its file with `path=`, never as `f"{path}: ..."` in the message."""
    bad = []
    for rel, tree in _trees():
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                    and _ERROR.search(n.func.id) and n.args):
                continue
            s = n.args[0]
            while isinstance(s, ast.BinOp):
                s = s.left
            if isinstance(s, ast.JoinedStr) and len(s.values) > 1 \
                    and isinstance(s.values[0], ast.FormattedValue) \
                    and (_str(s.values[1]) or "").startswith(":") \
                    and _PATHISH.search(ast.unparse(s.values[0].value)):
                bad.append(f"{rel}:{n.lineno}")
    assert not bad, bad


def test_an_error_prints_from_its_fields():
    e = RRSpliceError("no such module", path="a/b.ptx", code="corpus")
    assert str(e) == "a/b.ptx: no such module"
    assert e.diagnostic() == "a/b.ptx: error: no such module [corpus]"
    assert RRSpliceError("bad thing").diagnostic() == "rrsplice: error: bad thing"
    e = RRSpliceError("cannot lift `x`", path="m.ptx", line=7, column=3, code="lift-unsupported")
    assert e.diagnostic() == str(e) == "m.ptx:7:3: error: cannot lift `x` [lift-unsupported]"
    # a message that merely starts like a path is not taken apart
    assert RRSpliceError("x.ptx: y").diagnostic() == "rrsplice: error: x.ptx: y"


def test_a_parse_error_keeps_its_source_line_and_caret():
    e = ParseError("missing ';'", file="k.ptx", line=12, column=5, line_text="\tadd x\n",
                   expected=["SEMI"])
    assert e.diagnostic() == str(e) == ("k.ptx:12:5: error: missing ';'\n"
                                        "    12 |  add x\n"
                                        "       |     ^\n"
                                        "expected: SEMI")
    assert (e.diag.path, e.diag.line, e.diag.column) == ("k.ptx", 12, 5)


def test_a_finding_prints_with_its_statement_and_every_register():
    class St:
        sid, line, column = "s45", 5210, 2
    d = Diagnostic("warning", "control", "`bar` inside the region", path="m.ptx",
                   registers=[f"%r{i}" for i in range(14)], **at(St()))
    assert d.format() == ("m.ptx:5210:2: warning: s45: `bar` inside the region (14: "
                          + " ".join(f"%r{i}" for i in range(14)) + ") [control]")
    assert Diagnostic("info", "module", "using x.ptx", path="r.py").format() == \
        "r.py: note: using x.ptx [module]"
    assert d.render().endswith("[%r0 %r1 %r2 %r3 %r4 %r5 %r6 %r7 %r8 %r9 %r10 %r11 +2]")


def test_the_cli_prints_a_recipe_error_at_the_recipe(tmp_path):
    p = tmp_path / "r.py"
    p.write_text("def recipe():\n    return dict(file='nowhere.ptx', cut_call=(1, 2))\n")
    r = _run("check", p)
    assert r.exit_code == 2
    assert r.stderr.startswith(f"{p}: error: "), r.stderr
    assert "Traceback" not in r.output


@pytest.mark.parametrize("onto", ["m.ptx", "r.py"])
def test_apply_onto_an_input_is_refused_at_the_output(tmp_path, onto):
    shutil.copy(ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx", tmp_path / "m.ptx")
    (tmp_path / "r.py").write_text('def recipe():\n    return dict(file="m.ptx")\n')
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    r = _run("apply", tmp_path / "r.py", "--corpus", tmp_path, "-o", tmp_path / onto)
    assert r.exit_code == 2
    line = r.stderr.strip()
    assert line.startswith(f"{tmp_path / onto}: error: refusing to write over the "), line
    assert line.endswith("; choose another -o [output-is-input]"), line
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
