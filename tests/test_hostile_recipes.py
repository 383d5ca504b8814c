"""Recipe code cannot fake a result, and splice text stays inside its function.

Each recipe here is written into a private tmp_path next to a copy of a small module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"
TINY = ROOT / "corpus_fixtures" / "swin_tiny_sm89.ptx"

BASE = 'def recipe():\n    return dict(file="m.ptx")\n'


def cli(*args, cwd=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def project(tmp_path, text: str) -> Path:
    shutil.copy(SMALL, tmp_path / "m.ptx")
    p = tmp_path / "r.py"
    p.write_text(text)
    return p


EXITS = {
    "import sys.exit(0)": "import sys\nsys.exit(0)\n" + BASE,
    "recipe() sys.exit(0)": "import sys\ndef recipe():\n    sys.exit(0)\n",
    "recipe() KeyboardInterrupt": "def recipe():\n    raise KeyboardInterrupt\n",
    "recipe() os-level SystemExit(3)": "def recipe():\n    raise SystemExit(3)\n",
    "import GeneratorExit": "raise GeneratorExit\n" + BASE,
}


@pytest.mark.parametrize("case", sorted(EXITS))
def test_an_exit_in_recipe_code_is_a_clean_error_naming_the_recipe(tmp_path, case):
    r = project(tmp_path, EXITS[case])
    res = cli("check", r, "--corpus", tmp_path)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert str(r) in res.stderr and "Traceback" not in res.stderr
    assert res.stdout == ""


@pytest.mark.slow
def test_an_exit_in_stages_and_debug_block_is_a_clean_error(tmp_path):
    r = project(tmp_path, BASE + "import sys\ndef stages():\n    sys.exit(0)\n")
    res = cli("apply", r, "--corpus", tmp_path, "--debug", "s1", "-o", tmp_path / "o.ptx")
    assert res.returncode == 2 and "stages()" in res.stderr and str(r) in res.stderr
    r.write_text(BASE + "import sys\ndef stages():\n    return {'s1': (84, ['%r1'])}\n"
                 "def debug_block(regs):\n    raise SystemExit(0)\n")
    res = cli("apply", r, "--corpus", tmp_path, "--debug", "s1", "-o", tmp_path / "o.ptx")
    assert res.returncode == 2 and "debug_block" in res.stderr, res.stderr
    assert not (tmp_path / "o.ptx").exists()


def test_the_hook_turns_a_recipe_exit_into_a_hook_error(tmp_path):
    from rrsplice.workflow.hook import HookError, apply_recipe
    r = project(tmp_path, EXITS["recipe() sys.exit(0)"])
    with pytest.raises(HookError) as ei:
        apply_recipe(r, corpus=tmp_path, out=tmp_path / "o.ptx")
    assert ei.value.kind == "recipe" and not (tmp_path / "o.ptx").exists()


def test_a_recipes_prints_go_to_stderr_so_json_stays_one_document(tmp_path):
    r = project(tmp_path, 'print("at import")\ndef recipe():\n    print("in recipe()")\n'
                '    return dict(file="m.ptx")\n')
    res = cli("check", r, "--corpus", tmp_path, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["errors"] == 0
    assert "at import" in res.stderr and "in recipe()" in res.stderr


@pytest.mark.parametrize("name", ["../../evil", "a/b", "..", "x\\y"])
def test_debug_stage_names_cannot_leave_out(tmp_path, name):
    r = project(tmp_path, BASE + f"def stages():\n    return {{{name!r}: (84, ['%r1'])}}\n")
    res = cli("apply", r, "--corpus", tmp_path, "--debug", name)
    assert res.returncode == 2
    assert "stage name" in res.stderr and "Traceback" not in res.stderr
    written = list(tmp_path.rglob("*.debug.ptx"))
    assert written == []


ESCAPES = {
    "closes and opens an entry": "}\n.visible .entry x(\n\t.param .u64 x_p\n)\n{\n",
    "closes and declares a global": "}\n.global .u32 g;\n.visible .func y()\n{\n",
    "closes and reopens the probe's own name": (
        "}\n.visible .entry __rrsplice_probe(\n\t.param .u64 p\n)\n{\n"),
}


@pytest.mark.parametrize("case", sorted(ESCAPES))
@pytest.mark.slow
def test_call_text_that_leaves_its_function_fails_check(tmp_path, case):
    shutil.copy(TINY, tmp_path / TINY.name)
    src = (ROOT / "recipes" / "swin_tiny_sm89.py").read_text()
    evil = (src + "\n\n_orig_recipe = recipe\n\n\ndef recipe():\n    d = _orig_recipe()\n"
            f"    d['call'] = d['call'].rstrip('\\n') + '\\n' + {ESCAPES[case]!r}\n"
            "    return d\n")
    r = tmp_path / "swin_tiny_sm89.py"
    r.write_text(evil)
    res = cli("check", r, "--corpus", tmp_path, "--json", timeout=300)
    assert res.returncode == 1, res.stdout[-2000:] + res.stderr
    codes = [f["code"] for f in json.loads(res.stdout)["findings"] if f["severity"] == "error"]
    assert "splice-escapes" in codes
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx", timeout=300)
    assert res.returncode != 0 and not (tmp_path / "o.ptx").exists()


def test_the_unmodified_call_text_stays_inside(tmp_path):
    from rrsplice.check.text import parse_splice_text
    assert parse_splice_text("\tcall.uni f, (%r1);\n").escape is None
    assert parse_splice_text("{\n\t.reg .b32 t;\n\tmov.b32 t, 1;\n}\n").escape is None
    # a comment holding braces is not an escape
    assert parse_splice_text("\t// }\n\t/* } { */\n\tret;\n").escape is None


def test_a_recipes_project_settings_come_from_its_own_location(tmp_path):
    """[tool.rrsplice] corpus is read from the pyproject.toml above the recipe, not from the
    working directory's project (which names another module of the same file name)."""
    for proj, src in (("a", SMALL), ("b", ROOT / "corpus_fixtures" / "small" / "crlf.ptx")):
        (tmp_path / proj / "corpus").mkdir(parents=True)
        shutil.copy(src, tmp_path / proj / "corpus" / "m.ptx")
        (tmp_path / proj / "pyproject.toml").write_text(
            '[tool.rrsplice]\ncorpus = "corpus"\n')
    (tmp_path / "a" / "recipes").mkdir()
    r = tmp_path / "a" / "recipes" / "r.py"
    r.write_text(BASE)
    res = cli("apply", r, "-o", tmp_path / "out.ptx", "--json", cwd=tmp_path / "b")
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert Path(out["input"]) == tmp_path / "a" / "corpus" / "m.ptx"
    assert (tmp_path / "out.ptx").read_bytes() == SMALL.read_bytes()
    assert str(tmp_path / "a" / "pyproject.toml") in out["note"]


_RECIPES_BAD = sorted(p for p in (ROOT / "tests" / "recipes_bad").glob("*.py")
                      if not p.name.startswith("_"))


@pytest.mark.slow
@pytest.mark.parametrize("path", _RECIPES_BAD, ids=lambda p: p.name)
def test_outline_without_the_check_ends_in_a_body_or_a_typed_error(path):
    """`outline --no-check` / `verify --no-check` go on past check findings, but a recipe
    whose cut, call text or extern does not resolve is a clean error, never a crash."""
    from rrsplice.check import CheckFailed
    from rrsplice.ptx.errors import RRSpliceError
    from rrsplice.workflow.verify import prepare
    try:
        _rec, _path, _data, body, _rep = prepare(path, check=False)
    except CheckFailed as exc:
        assert exc.report.errors, path
    except RRSpliceError as exc:
        assert str(exc), path
    else:
        assert body.ptx.startswith(b"//") and b".func" in body.ptx
