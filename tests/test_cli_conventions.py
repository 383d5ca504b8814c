"""The command line behaves like a compiler tool: complete output in pipes, data printed
literally, diagnostics on stderr, strict inputs, tool provenance, documented surface.

These run `python -m rrsplice` as a subprocess with stdout and stderr redirected to pipes,
as a user's `| grep` or a CI log would see them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, RECIPES, ROOT

from rrsplice.cli import main
from rrsplice.cli.app import COMMAND_MODULES

DEC2 = FIXTURES / "0021-PREPASS_ENTRYPOINT_NAME.ptx"
TINY = FIXTURES / "swin_tiny_sm89.ptx"
TINY120 = FIXTURES / "swin_tiny_sm120.ptx"
BAD = ROOT / "tests" / "recipes_bad"

# `path:line:col: severity: message [code]`, or `path: severity: message` without a line
DIAG = re.compile(r"^(?P<path>[^\s:][^:]*?)(?::(?P<line>\d+):(?P<col>\d+))?: "
                  r"(?P<sev>error|warning|note): (?P<msg>.+?)(?: \[(?P<code>[a-z-]+)\])?$")


def cli(*args, env=None, cwd=ROOT):
    full = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd,
                          env=full, capture_output=True, text=True, timeout=600)


# ------------------------------------------------------------------------------ pipes

@pytest.mark.slow
def test_piped_mma_table_is_complete(model):
    r = cli("mma", DEC2)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout and "..." not in r.stdout
    data = json.loads(cli("mma", DEC2, "--json").stdout)
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"^s\d+ ", ln)]
    assert len(rows) == data["count"] == 726
    for row, m in zip(rows, data["mma"], strict=False):
        # every fragment whole, on its statement's line: no cut, no wrap, no split name
        for key in ("d", "a", "b", "c"):
            assert "{" + ", ".join(m[key]) + "}" in row, (row, key)
    for ln in r.stdout.splitlines():
        assert not re.search(r"%r\d*$", ln.rstrip()) or ln.rstrip().endswith("}"), ln


@pytest.mark.slow
def test_piped_liveness_lists_every_register_on_its_row():
    r = cli("liveness", "--range", "s452-s15510")
    assert r.returncode == 0, r.stderr
    data = json.loads(cli("liveness", "--range", "s452-s15510", "--json").stdout)
    lines = r.stdout.splitlines()
    for row in data["live_in"]:
        [ln] = [x for x in lines if x.startswith(row["register"] + " ")]
        for d in row["reaching_defs"]:
            assert f"{d['sid']} (L{d['line']})" in ln
    assert "…" not in r.stdout and "+1 more" not in r.stdout


def test_long_paths_and_markup_in_data_are_printed_literally(tmp_path):
    name = "[bold]x[red] :x: :warning:" + "d" * 150 + ".ptx"
    p = tmp_path / name
    shutil.copyfile(FIXTURES / "small" / "calls.ptx", p)
    r = cli("parse", p)
    assert r.returncode == 0, r.stderr
    [row] = [ln for ln in r.stdout.splitlines() if "calls" in ln or name in ln]
    assert str(p) in row and "identical" in row
    broken = tmp_path / "[red]bad[bold] :x:.ptx"
    broken.write_text(".version 8.7\n.target sm_89\n.entry k()\n{\n\tmov.u32 %r1 1;\n}\n")
    r = cli("mma", broken)
    assert r.returncode == 2
    assert r.stderr.startswith(f"{broken}:5:")
    # a terminal-width console would wrap at 80 columns: the rich path must not either
    assert "\n" not in r.stderr.split("\n")[0]


# -------------------------------------------------------------------------- diagnostics

@pytest.mark.slow
def test_check_findings_are_compiler_diagnostics_on_stderr():
    recipe = BAD / "live_out.py"
    r = cli("check", recipe)
    assert r.returncode == 1
    data = json.loads(cli("check", recipe, "--json").stdout)
    errors = [f for f in data["findings"] if f["severity"] == "error"]
    assert errors
    diags = [DIAG.match(ln) for ln in r.stderr.splitlines()]
    assert all(diags), r.stderr
    got = [(d["sev"], d["code"], int(d["line"]) if d["line"] else None) for d in diags]
    for f in errors:
        assert ("error", f["code"], f["line"]) in got
    for d in diags:
        if d["line"]:
            assert d["path"] == data["module"]
        elif d["sev"] != "note":
            assert d["path"] == data["recipe"]
        else:           # a remark about the run itself (which corpus, which function)
            assert d["path"] in (data["recipe"], "rrsplice")
    # the summary is data: stdout
    assert "error(s)" in r.stdout and "error(s)" not in r.stderr.replace("[", "")


def test_errors_are_one_diagnostic_line(tmp_path):
    r = cli("show", TINY, "s45x2")
    assert r.returncode == 2
    assert DIAG.match(r.stderr.strip())
    assert r.stderr == f"{TINY}: error: malformed statement id 's45x2': write it as sN, " \
                       "e.g. s452\n"


# ------------------------------------------------------------------------ strict inputs

@pytest.mark.parametrize("args,needle", [
    (["show", TINY, "s45x2"], "malformed statement id 's45x2'"),
    (["show", TINY, "s999999"], "statement s999999 does not exist: rrswin_tiny_kernel has s1-"),
    (["liveness", TINY, "--range", "s20-s10"], "is reversed: s20 comes after s10"),
    (["liveness", TINY, "--range", "s10-s999999"], "is outside rrswin_tiny_kernel, which has"),
    (["liveness", TINY, "--lines", "847-999999"], "reach outside rrswin_tiny_kernel"),
    (["liveness", TINY, "--lines", "900-800"], "is reversed: line 900 comes after line 800"),
    (["mma", "no/such/file.ptx"], "no/such/file.ptx: error: no such PTX file"),
    (["parse", "no/such/*.ptx"], "no/such/*.ptx: error: no such PTX file"),
    (["functions", "no/such.ptx"], "no/such.ptx: error: no such PTX file"),
    (["check", RECIPES / "swin_dec2.py", "--corpus", "no/such/dir"],
     "--corpus no/such/dir: no such directory"),
    (["apply", RECIPES / "swin_tiny_sm89.py", "--ptxas", "sm_999"],
     "unknown architecture 'sm_999'"),
    (["apply", RECIPES / "swin_tiny_sm120.py", "--ptxas", "sm_89"],
     ".target is sm_120; ptxas cannot assemble it for sm_89"),
    (["verify", RECIPES / "swin_tiny_sm120.py", "--arch", "sm_89"],
     ".target is sm_120; ptxas cannot assemble it for sm_89"),
])
@pytest.mark.slow
def test_bad_input_is_exit_2_with_a_clear_message(args, needle, tmp_path):
    r = cli(*args, "-o", tmp_path / "out.ptx") if args[0] == "apply" else cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out.ptx").exists()


def test_corpus_from_the_environment_must_exist():
    r = cli("check", RECIPES / "swin_dec2.py", env={"RRSPLICE_CORPUS": "/no/such/corpus"})
    assert r.returncode == 2
    assert "$RRSPLICE_CORPUS /no/such/corpus: no such directory" in r.stderr


@pytest.mark.slow
def test_a_typod_module_is_an_error_unless_any_module(tmp_path):
    text = (RECIPES / "swin_dec2.py").read_text()
    typo = tmp_path / "swin_dec2.py"
    typo.write_text(text.replace('MODULE = "0021-PREPASS', 'MODULE = "0031-PREPASS'))
    out = tmp_path / "o.ptx"
    r = cli("apply", typo, "-o", out)
    assert r.returncode == 2 and not out.exists()
    assert "module '0031-PREPASS_ENTRYPOINT_NAME.ptx' not found" in r.stderr
    assert "--any-module" in r.stderr
    r = cli("apply", typo, "-o", out, "--any-module")
    assert r.returncode == 0, r.stderr
    assert "as --any-module allows" in r.stderr and out.exists()
    # the recipe may ask for the fallback itself
    typo.write_text(typo.read_text() + "\nANY_MODULE = True\n")
    assert cli("check", typo).returncode == 0


def test_apply_without_an_assembler_writes_nothing(tmp_path):
    out = tmp_path / "o.ptx"
    r = cli("apply", RECIPES / "swin_dec2.py", "-o", out, "--ptxas", "sm_89",
            env={"RRSPLICE_PTXAS": str(tmp_path / "no-ptxas")})
    assert r.returncode == 2 and not out.exists()
    assert "ptxas not found" in r.stderr and "nvidia-cuda-nvcc" in r.stderr


@pytest.mark.slow
def test_scaffolded_recipe_for_a_module_elsewhere_checks_without_flags(tmp_path):
    mods = tmp_path / "kernels"
    mods.mkdir()
    shutil.copyfile(TINY, mods / "tiny.ptx")
    out = tmp_path / "recipes" / "tiny.py"
    r = cli("recipe", "new", "tiny", "--module", mods / "tiny.ptx", "--range", "s556-s2656",
            "-o", out, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "MODULE = '../kernels/tiny.ptx'" in out.read_text()
    r = cli("check", out, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "not in the corpus" not in r.stderr
    # phases are numbered as `rrsplice phases` numbers them: the cut starts at phase 2
    text = out.read_text()
    assert "Phase 2 (s556-s563" in text and "(2-7 as `rrsplice phases` numbers them)" in text
    phases = json.loads(cli("phases", TINY, "--json").stdout)["phases"]
    assert (phases[1]["index"], phases[1]["statements"][0]) == (2, 556)
    r = cli("stages", "new", out, "--phase", "2", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["name"] == "tiny.p2_out"


# --------------------------------------------------------------------- provenance, docs

def test_version_names_the_tools(ptxas_path, nvlink_path):
    r = CliRunner().invoke(main, ["--version"])
    assert r.exit_code == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("rrsplice ")
    assert lines[1].startswith(f"ptxas: {ptxas_path} (") and "release" in lines[1]
    assert lines[2].startswith(f"nvlink: {nvlink_path} (") and "found via" in lines[2]


def test_doctor_says_what_is_missing_and_how_to_get_it(tmp_path, ptxas_path):
    r = cli("doctor", "--json")
    assert r.returncode == 0, r.stdout
    checks = {c["check"]: c for c in json.loads(r.stdout)["checks"]}
    assert {"python", "lark", "ptxas", "nvlink", "cache", "default module"} <= set(checks)
    r = cli("doctor", env={"RRSPLICE_PTXAS": str(tmp_path / "none"),
                           "RRSPLICE_NVLINK": str(tmp_path / "none")})
    assert r.returncode == 1
    assert "ptxas           MISSING" in r.stdout
    assert "pip install 'rrsplice[ptxas]'" in r.stdout


def test_every_command_has_help_examples():
    names = sorted(set(COMMAND_MODULES) - {"recipe", "stages", "cache", "body"})
    names += ["recipe new", "recipe port", "stages new", "body new"]
    for name in names:
        r = CliRunner().invoke(main, [*name.split(), "--help"])
        assert r.exit_code == 0, name
        assert "Examples:" in r.output and "  rrsplice " in r.output, name


def test_shell_completion_script():
    r = cli(env={"_RRSPLICE_COMPLETE": "bash_source"})
    assert r.returncode == 0 and "_rrsplice_completion" in r.stdout


def test_readme_documents_every_environment_variable_and_exit_code():
    readme = (ROOT / "README.md").read_text()
    used = set()
    for p in (ROOT / "rrsplice").rglob("*.py"):
        used |= set(re.findall(r"RRSPLICE_[A-Z_]+", p.read_text()))
    assert used and all(f"`{v}`" in readme for v in used), used
    assert "### Exit codes" in readme and "### Shell completion" in readme
    assert (ROOT / "rrsplice" / "py.typed").is_file()


def _help_examples() -> list:
    out = []
    names = sorted(set(COMMAND_MODULES) - {"recipe", "stages", "cache", "body"})
    names += ["recipe new", "recipe port", "stages new", "body new"]
    for name in names:
        text = CliRunner().invoke(main, [*name.split(), "--help"]).output
        out += [ln.strip() for ln in text.split("Examples:", 1)[-1].splitlines()
                if ln.strip().startswith("rrsplice ")]
    return out


@pytest.mark.slow
def test_read_only_help_examples_run():
    """Every example in --help that only reads (no -o, no writer command) works as written."""
    import shlex
    writers = ("apply", "verify", "outline", "recipe", "stages")
    ran = 0
    for example in _help_examples():
        args = []
        for a in shlex.split(example.split("|")[0])[1:]:
            args += sorted(str(p) for p in ROOT.glob(a)) if "*" in a else [a]
        if args[0] in writers or "-o" in args or "--all" in args:
            continue
        r = cli(*args)
        assert r.returncode == 0, (example, r.stderr[-2000:])
        ran += 1
    assert ran >= 15
