"""`recipe new` writes a recipe only when it checks clean, and says what it is doing on a
terminal while ptxas runs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from rrsplice.check import CheckFailed
from rrsplice.cli import main
from rrsplice.workflow.scaffold import new_recipe

# lines 23-25 (s6-s7) begin inside the `{ .reg .b32 %r2; ... }` block of lines 20-24: the
# scaffolded recipe fails check with cut-scope (a range holding the block whole would be
# widened to its braces and check clean)
SCOPES = FIXTURES / "small" / "scopes.ptx"


@pytest.mark.parametrize("abi", ["scratch", "param"])
def test_a_recipe_with_check_errors_is_not_written(tmp_path, abi):
    out = tmp_path / "sc.py"
    with pytest.raises(CheckFailed) as exc:
        new_recipe("sc", SCOPES, "s6-s7", abi=abi, out=out)
    assert "cut-scope" in {f.code for f in exc.value.report.errors}
    assert str(out) in str(exc.value) and "nothing written" in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_cli_exit_1_names_the_module_and_leaves_an_old_file_alone(tmp_path):
    out = tmp_path / "sc.py"
    out.write_text("# the user's own file\n")
    r = CliRunner().invoke(main, ["recipe", "new", "sc", "--module", str(SCOPES), "--range",
                                  "s6-s7", "-o", str(out), "--force"])
    assert r.exit_code == 1, r.output
    assert "3 error(s): nothing written" in r.stdout
    assert f"{SCOPES}:23:2: error:" in r.stderr and "[cut-scope]" in r.stderr
    assert "rrsplice-new-" not in r.stderr          # the trial copy is never named
    assert out.read_text() == "# the user's own file\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sc.py"]
    r = CliRunner().invoke(main, ["recipe", "new", "sc", "--module", str(SCOPES), "--range",
                                  "s6-s7", "-o", str(tmp_path / "j.py"), "--json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["error"]["report"]["errors"] == 3
    assert not (tmp_path / "j.py").exists()


def test_a_clean_recipe_is_written_with_its_module_reference_for_its_place(tmp_path):
    # the trial copy lies elsewhere: the written recipe must still name the module relative
    # to where it is written, and check clean there
    from rrsplice.check import check_recipe
    from rrsplice.workflow.recipe import load_recipe
    d = tmp_path / "deep" / "er"
    res = new_recipe("sc", SCOPES, "s4-s7", abi="param", out=d / "sc.py")
    rec = load_recipe(res.path)
    assert not rec.const("MODULE").startswith("/")
    assert check_recipe(res.path).ok
    assert sorted(p.name for p in d.iterdir()) == ["sc.py"]


def test_progress_steps_are_named(tmp_path):
    steps = []
    new_recipe("sc", SCOPES, "s4-s7", abi="param", out=tmp_path / "sc.py", progress=steps.append)
    assert steps == ["recipe new sc: checking the recipe"]


@pytest.mark.slow
def test_progress_shows_on_a_terminal_only(tmp_path):
    # stderr on a pseudo-terminal: the spinner names the step; piped, nothing but the notes
    import os
    import pty
    import subprocess
    import sys
    argv = [sys.executable, "-c", "from rrsplice.cli import main; main()", "recipe", "new",
            "sc", "--module", str(SCOPES), "--range", "s4-s7", "--abi", "param"]
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    master, slave = pty.openpty()
    try:
        p = subprocess.run(argv + ["-o", str(tmp_path / "a.py")], stdout=subprocess.PIPE,
                           stderr=slave, env=env, timeout=120)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert p.returncode == 0
    assert b"recipe new sc" in seen
    p = subprocess.run(argv + ["-o", str(tmp_path / "b.py")], capture_output=True, env=env,
                       timeout=120)
    assert p.returncode == 0 and b"recipe new sc" not in p.stderr
