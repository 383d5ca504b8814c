"""Recipe code runs in a process of its own and only plain data comes back: no recipe can
end rrsplice, change its verdict or exit code, break its `--json` output, keep it alive,
run it twice or move its relative paths; hostile values are clean errors; a recipe rule's
replacement and extern pass the splice-text checks.

Each recipe is written into a private tmp_path next to a copy of a small module, and run
through the command line in a subprocess (as a user runs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"

# a cut of cfg_loops.ptx that `check` rejects (the callee is declared nowhere, values
# cross the cut that the call does not pass)
FAILING = 'dict(file="m.ptx", cut_call=(93, 114), call="\\tcall.uni f, (%r1);\\n")'
PATCH = ("import sys\nsys.path.insert(0, {root!r})\n"
         "import rrsplice.check.report as _r\n_r.Report.ok = property(lambda self: True)\n")


def cli(*args, cwd=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def project(tmp_path, text: str) -> Path:
    shutil.copy(SMALL, tmp_path / "m.ptx")
    p = tmp_path / "r.py"
    p.write_text(text)
    return p


def assert_clean_error(res, recipe: Path):
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert str(recipe) in res.stderr and "Traceback" not in res.stderr, res.stderr


# ------------------------------------------------------------------ 23.8: no fake results

@pytest.mark.parametrize("how", ["os._exit(0)", "os.kill(os.getpid(), 9)",
                                 "os.abort()"])
def test_a_recipe_that_ends_its_process_is_a_clean_error(tmp_path, how):
    r = project(tmp_path, f"import os\ndef recipe():\n    {how}\n")
    res = cli("check", r, "--corpus", tmp_path)
    assert_clean_error(res, r)
    assert "recipe process" in res.stderr and res.stdout == ""


def test_an_atexit_exit_cannot_turn_a_failing_check_into_success(tmp_path):
    r = project(tmp_path, "import atexit, os\natexit.register(os._exit, 0)\n"
                f"def recipe():\n    return {FAILING}\n")
    res = cli("check", r, "--corpus", tmp_path)
    assert res.returncode == 1 and "error(s)" in res.stdout, (res.stdout, res.stderr)


def test_patching_rrsplice_from_a_recipe_cannot_make_apply_write_a_failing_cut(tmp_path):
    r = project(tmp_path, PATCH.format(root=str(ROOT)) + f"def recipe():\n    return {FAILING}\n")
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert not (tmp_path / "o.ptx").exists()


def test_a_rewrite_function_that_patches_rrsplice_cannot_pass_a_failing_cut(tmp_path):
    r = project(tmp_path, "import sys\n"
                "def rule(op, ops, guard):\n"
                f"    exec({PATCH.format(root=str(ROOT))!r})\n"
                "    return guard + op + ' ' + ', '.join(ops) + ';'\n"
                "def recipe():\n"
                f"    d = {FAILING}\n"
                "    d['rewrites'] = [dict(opcode='add.s32', replace=rule)]\n"  # after the cut
                "    return d\n")
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert not (tmp_path / "o.ptx").exists()


NOISE = {
    "fd 1": "os.write(1, b'{\"errors\": 0}\\n')",
    "a subprocess": "subprocess.run(['echo', 'child output'])",
    "a thread": "threading.Thread(target=lambda: (time.sleep(0.3), print('late'))).start()",
}


@pytest.mark.parametrize("case", sorted(NOISE))
def test_output_of_the_recipe_never_reaches_json_output(tmp_path, case):
    r = project(tmp_path, "import os, subprocess, threading, time\n"
                f"def recipe():\n    {NOISE[case]}\n    return {FAILING}\n")
    res = cli("check", r, "--corpus", tmp_path, "--json")
    assert res.returncode == 1, res.stderr
    doc = json.loads(res.stdout)                # one document, nothing around it
    assert doc["errors"] > 0


def test_a_non_daemon_thread_does_not_keep_rrsplice_alive(tmp_path):
    r = project(tmp_path, "import threading, time\n"
                "def recipe():\n    threading.Thread(target=time.sleep, args=(60,)).start()\n"
                "    return dict(file='m.ptx')\n")
    t0 = time.monotonic()
    res = cli("check", r, "--corpus", tmp_path, timeout=50)
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - t0 < 30


def test_fork_in_a_recipe_does_not_run_the_command_twice(tmp_path):
    r = project(tmp_path, "import os\ndef recipe():\n    os.fork()\n"
                "    return dict(file='m.ptx')\n")
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["ok"] is True          # one document
    assert (tmp_path / "o.ptx").read_bytes() == SMALL.read_bytes()


def test_a_fork_in_a_recipe_with_functions_answers_once(tmp_path):
    """The runner stays up for the rule's function: only its own process answers, so the
    forked copy's reply never stands in for the function's results."""
    r = project(tmp_path, "import os\ndef recipe():\n    os.fork()\n"
                "    return dict(file='m.ptx', rewrites=[dict(opcode='sub.s32', "
                "replace=lambda o, ops, g: g + 'add.s32 ' + ', '.join(ops) + ';')])\n")
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx", "--json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "add.s32 %r10, %r6, %r4;" in (tmp_path / "o.ptx").read_text()


def test_chdir_in_a_recipe_does_not_move_relative_paths(tmp_path):
    project(tmp_path, "import os\ndef recipe():\n    os.chdir('/')\n"
                "    return dict(file='m.ptx')\n")
    res = cli("apply", "r.py", "--corpus", ".", "-o", "o.ptx", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "o.ptx").read_bytes() == SMALL.read_bytes()


def test_the_recipe_never_runs_in_rrsplices_process(tmp_path):
    from rrsplice.workflow.recipe import load_recipe
    r = project(tmp_path, "import os\nPID = os.getpid()\n"
                "def recipe():\n    return dict(file='m.ptx', entry=str(os.getpid()))\n")
    rec = load_recipe(r)
    assert rec.const("PID") != os.getpid() and rec.entry_key == str(rec.module.PID)
    assert not any(k.startswith("_rrsplice_recipe_") for k in sys.modules)


def test_functions_of_a_recipe_are_called_in_its_process(tmp_path):
    from rrsplice.workflow.recipe import load_recipe
    r = project(tmp_path, "import os\ndef recipe():\n    return dict(file='m.ptx', "
                "debug=(84, ['%r1']), debug_block=lambda regs: '// %d %s' % (os.getpid(), "
                "regs))\n")
    rec = load_recipe(r)
    text = rec.debug_block(["%r1", "%r2"])
    pid = int(text.split()[1])
    assert pid != os.getpid() and text.endswith("['%r1', '%r2']")


# ------------------------------------------------------------------ 23.9: hostile values

HOSTILE = {
    "dict subclass": ("class D(dict):\n    def __iter__(self):\n        raise RuntimeError\n"
                      "    def keys(self):\n        raise RuntimeError\n"
                      "def recipe():\n    return D(file='m.ptx')\n", "recipe"),
    "raising __fspath__": ("class P:\n    def __fspath__(self):\n        raise ValueError('no')\n"
                           "def recipe():\n    return dict(file=P())\n", "file"),
    "5000-digit integer": ("def recipe():\n    return dict(file='m.ptx', "
                           "cut_call=(10**5000, 10**5000 + 1), call='ret;')\n", "cut_call"),
    "5000-digit cut_after": ("def recipe():\n    return dict(file='m.ptx', "
                             "cut_after=10**5000, tail='ret;')\n", "cut_after"),
    "str subclass": ("class S(str):\n    def __eq__(self, o):\n        raise RuntimeError\n"
                     "    __hash__ = str.__hash__\n"
                     "def recipe():\n    return dict(file=S('m.ptx'))\n", "file"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_values_are_clean_errors_naming_the_recipe_and_key(tmp_path, case):
    src, key = HOSTILE[case]
    r = project(tmp_path, src)
    res = cli("check", r, "--corpus", tmp_path)
    assert_clean_error(res, r)
    assert f"{key!r}" in res.stderr, res.stderr


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_hook_raises_hook_error_for_hostile_values(tmp_path, case):
    from rrsplice.workflow.hook import HookError, apply_recipe
    r = project(tmp_path, HOSTILE[case][0])
    with pytest.raises(HookError) as ei:
        apply_recipe(r, corpus=tmp_path, out=tmp_path / "o.ptx")
    assert ei.value.kind == "recipe" and str(r) in str(ei.value)
    assert not (tmp_path / "o.ptx").exists()


def test_a_pathlike_file_still_works(tmp_path):
    r = project(tmp_path, "import pathlib\ndef recipe():\n"
                "    return dict(file=pathlib.Path('m.ptx'))\n")
    res = cli("check", r, "--corpus", tmp_path)
    assert res.returncode == 0, res.stderr


# ------------------------------------------------------------------ 23.10: rule texts

RULES = {
    "replacement closes the kernel": (
        "rewrites=[dict(opcode='sub.s32', replace='}} .visible .entry evil() {{ ret;')]",
        "splice-escapes"),
    "replacement function closes the kernel": (
        "rewrites=[dict(opcode='sub.s32', replace=lambda o, ops, g: '} .entry evil() {')]",
        "splice-escapes"),
    "replacement opens a comment": (
        "rewrites=[dict(opcode='sub.s32', replace='/* {0}')]", "call-parse"),
    "replacement uses an undeclared register": (
        "rewrites=[dict(opcode='sub.s32', replace='{guard}sub.s32 %zz9, {1}, {2};')]",
        "undeclared"),
    "replacement calls what nothing declares": (
        "rewrites=[dict(opcode='sub.s32', replace='call.uni nowhere;')]", "callee-order"),
    "rule extern holds a kernel": (
        "rewrites=[dict(opcode='sub.s32', replace='{guard}sub.s32 {0}, {1}, {2};', "
        "extern='.visible .entry e()\\n{\\nret;\\n}')]", "extern-text"),
    "rule extern holds headers": (
        "rewrites=[dict(opcode='sub.s32', replace='{guard}sub.s32 {0}, {1}, {2};', "
        "extern='.version 9.9\\n.target sm_100\\n.extern .func f;')]", "extern-text"),
    "the cut's extern holds headers": (
        "replace_body=True, stub='\\tret;\\n', "
        "extern='.version 9.9\\n.target sm_100\\n.extern .func f;'", "extern-text"),
    "replacement function returns a lone surrogate": (
        "rewrites=[dict(opcode='sub.s32', replace=lambda o, ops, g: 'ret; // \\ud800')]",
        "call-parse"),
}


@pytest.mark.parametrize("case", sorted(RULES))
def test_rule_texts_pass_the_splice_text_checks(tmp_path, case):
    body, code = RULES[case]
    r = project(tmp_path, f"def recipe():\n    return dict(file='m.ptx', {body})\n")
    res = cli("check", r, "--corpus", tmp_path, "--json")
    assert res.returncode == 1, (res.stdout, res.stderr)
    codes = {f["code"] for f in json.loads(res.stdout)["findings"] if f["severity"] == "error"}
    assert code in codes, codes
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx")
    assert res.returncode == 1 and not (tmp_path / "o.ptx").exists(), res.stderr


@pytest.mark.parametrize("field", ["name", "opcode", "extern", "replace"])
def test_lone_surrogates_in_rule_fields_are_clean_errors(tmp_path, field):
    rule = {"opcode": "sub.s32", "replace": "{guard}sub.s32 {0}, {1}, {2};",
            "name": "r", "extern": ".extern .func f;"}
    rule[field] = rule[field] + "\ud800"
    r = project(tmp_path, f"def recipe():\n    return dict(file='m.ptx', rewrites=[{rule!r}])\n")
    for cmd in (["check", r], ["apply", r, "-o", tmp_path / "o.ptx"]):
        res = cli(*cmd, "--corpus", tmp_path)
        assert_clean_error(res, r)
        assert "rewrites" in res.stderr and "surrogates not allowed" in res.stderr
    assert not (tmp_path / "o.ptx").exists()


def test_a_well_behaved_rule_still_rewrites(tmp_path):
    r = project(tmp_path, "def recipe():\n    return dict(file='m.ptx', rewrites=[dict("
                "opcode='sub.s32', replace=lambda o, ops, g: g + 'add.s32 ' + ', '.join(ops) "
                "+ ';', extern='.extern .func (.param .b32 r) helper_f (.param .b32 a);')])\n")
    res = cli("apply", r, "--corpus", tmp_path, "-o", tmp_path / "o.ptx")
    assert res.returncode == 0, res.stderr
    out = (tmp_path / "o.ptx").read_text()
    assert "add.s32 %r10, %r6, %r4;" in out and "sub.s32" not in out
    assert ".extern .func (.param .b32 r) helper_f (.param .b32 a);" in out
