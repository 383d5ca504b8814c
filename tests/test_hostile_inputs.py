"""The parser is linear and bounded on hostile PTX, and a path that is not a readable file
is a typed error (exit 2), never a syntax error in the path's text or a hang.

Each case runs in a child process with a generous timeout as a hang guard (the old
quadratic paths took minutes); memory is the child's peak RSS against the bound
"20x the input plus the constant of parsing a small file".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rrsplice
from rrsplice.ptx.errors import RRSpliceError

ROOT = Path(__file__).resolve().parent.parent
SMALL = (ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx").read_text()
BODY_END = SMALL.rindex("}")

_PROBE = r"""
import json, resource, sys
from rrsplice.ptx.errors import RRSpliceError
from rrsplice.ptx.parser import parse_bytes
data = open(sys.argv[1], "rb").read()
try:
    parse_bytes(data, sys.argv[1]); out = {"ok": True}
except RRSpliceError as e:
    out = {"ok": False, "error": e.diagnostic().splitlines()[0]}
out["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def probe(tmp_path, text: str, timeout=60) -> dict:
    p = tmp_path / "h.ptx"
    p.write_text(text)
    r = subprocess.run([sys.executable, "-c", _PROBE, str(p)], capture_output=True, text=True,
                       timeout=timeout, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    out["size"] = p.stat().st_size
    return out


def in_body(extra: str) -> str:
    return SMALL[:BODY_END] + extra + SMALL[BODY_END:]


@pytest.fixture(scope="module")
def baseline_kb(tmp_path_factory):
    return probe(tmp_path_factory.mktemp("base"), SMALL)["rss_kb"]


@pytest.mark.parametrize("comment", ["// " + "x" * 200_000 + "\n",
                                     "/* " + "x" * 200_000 + " */\n",
                                     "// c\n" * 40_000],
                         # short ids: pytest puts the id in the child's environment
                         # (PYTEST_CURRENT_TEST), and one over 128 KiB fails the exec
                         ids=["line comment", "block comment", "40,000 comment lines"])
def test_a_long_comment_at_the_end_of_a_body_parses_at_normal_speed(tmp_path, comment):
    out = probe(tmp_path, in_body(comment), timeout=30)
    assert out["ok"], out


def test_a_long_comment_in_call_text_is_linear():
    from rrsplice.check.text import parse_splice_text
    sp = parse_splice_text("\t// " + "x" * 200_000 + "\n\tret;\n" + "/*" * 50_000)
    assert sp.error is not None          # the unclosed /* is an error, quickly
    sp = parse_splice_text("\t// " + "x" * 200_000 + "\n\tret;\n")
    assert sp.error is None and sp.escape is None


CASES = {
    "deep braces": ("{" * 1000 + "\n" + "}" * 1000 + "\n", "nested more than"),
    "unbalanced braces": ("{" * 200_000 + "\n", "nested more than"),
    "deep parens": ("add.s32 %r1, " + "(" * 1000 + "1" + ")" * 1000 + ", 2;\n",
                    "nested too deeply"),
    "huge decimal operand": ("add.s32 %r1, %r1, " + "9" * 5000 + ";\n", "longer than"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_nesting_and_integers_are_typed_errors(tmp_path, case):
    extra, message = CASES[case]
    out = probe(tmp_path, in_body(extra), timeout=30)
    assert not out["ok"] and message in out["error"], out
    assert ":129:" in out["error"] or ":128:" in out["error"], out


def test_huge_integers_in_declarations_are_typed_errors(tmp_path):
    for decl in (".reg .b32 %zz<" + "9" * 5000 + ">;\n", ".shared .b8 q[" + "9" * 5000 + "];\n"):
        text = SMALL.replace(".reg .b32", decl + ".reg .b32", 1)
        out = probe(tmp_path, text, timeout=30)
        assert not out["ok"] and "longer than" in out["error"], out


@pytest.mark.slow
def test_a_huge_operand_list_stays_in_the_memory_bound(tmp_path, baseline_kb):
    out = probe(tmp_path, in_body("add.s32 %r1, " + ", ".join(["%r1"] * 500_000) + ";\n"),
                timeout=120)
    assert out["ok"], out
    grown = (out["rss_kb"] - baseline_kb) * 1024
    assert grown <= 20 * out["size"], (grown / out["size"], out)


def test_lone_surrogates_in_recipe_text_are_a_recipe_error(tmp_path):
    (tmp_path / "m.ptx").write_text(SMALL)
    r = tmp_path / "r.py"
    r.write_text("def recipe():\n    return dict(file='m.ptx', cut_call=(93, 114),\n"
                 "                call='\\tcall.uni f;\\n// \\ud800\\n', extern='.extern .func f;')\n")
    res = subprocess.run([sys.executable, "-m", "rrsplice", "check", str(r), "--corpus",
                          str(tmp_path)], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "\\ud800" in res.stderr and "'call'" in res.stderr, res.stderr


def _cli_parse(path, cwd):
    return subprocess.run([sys.executable, "-m", "rrsplice", "parse", str(path)], cwd=cwd,
                          capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


@pytest.mark.slow
def test_paths_that_are_not_readable_files_are_typed_errors(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    cases = {"nope.ptx": "no such PTX file", "fifo": "not a regular file",
             "l1": "symlink loop", "n" * 300 + ".ptx": "file name too long"}
    for name, message in cases.items():
        r = _cli_parse(name, tmp_path)
        assert r.returncode == 2, (name, r.stdout, r.stderr)
        assert message in r.stderr and "Traceback" not in r.stderr, (name, r.stderr)
        assert "expected:" not in r.stderr                 # not parsed as PTX text
        with pytest.raises(RRSpliceError, match=message):
            rrsplice.parse(str(tmp_path / name) if name != "n" * 300 + ".ptx" else name)


@pytest.mark.slow
def test_recipe_paths_and_module_names_that_are_not_files_are_typed_errors(tmp_path):
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "l1.py").symlink_to(tmp_path / "l2.py")
    (tmp_path / "l2.py").symlink_to(tmp_path / "l1.py")
    (tmp_path / "long.py").write_text("def recipe():\n    return dict(file='n' * 300)\n")
    cases = {"fifo.py": "not a regular file", "l1.py": "symlink loop",
             "r" * 300 + ".py": "file name too long", "long.py": "file name too long"}
    for name, message in cases.items():
        r = subprocess.run([sys.executable, "-m", "rrsplice", "check", name], cwd=tmp_path,
                           capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert r.returncode == 2 and message in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr
