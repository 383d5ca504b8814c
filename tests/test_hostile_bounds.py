"""Bounded, and no tracebacks (issue 23.11, 23.12): memory per byte of top-level
whitespace, inputs that never end (`/proc/self/pagemap`, directly, through a recipe's
`file=` or a `*.ptx` link in a corpus), a FIFO in `apply --all`'s directory, a worker that
is killed, and SIGTERM to a command whose workers are busy."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from rrsplice.ptx.parser import parse_bytes

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"
HEAD = ".version 8.0\n.target sm_89\n.address_size 64\n"
PAGEMAP = Path("/proc/self/pagemap")
needs_pagemap = pytest.mark.skipif(not PAGEMAP.exists(), reason="no /proc/self/pagemap")


def cli(*args, cwd=None, timeout=120, **env):
    e = dict(os.environ, PYTHONPATH=str(ROOT), RRSPLICE_NO_CACHE="1", **env)
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd,
                          env=e, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("blank", [" ", "\n", " \t\n// c\n/* x */\n"])
def test_top_level_trivia_costs_no_memory_per_byte(blank):
    """1 MB of blanks between the header and the kernel peaked at ~450 MB (one backtracking
    frame per character in the lexer's trivia pattern); it must stay within a few times
    the text itself."""
    parse_bytes((HEAD + ".visible .entry k()\n{\nret;\n}\n").encode(), "warm")   # the parser
    trivia = blank * ((1 << 20) // len(blank))
    text = (HEAD + trivia + ".visible .entry k()\n{\n.reg .b32 %r<2>;" + trivia
            + "mov.u32 %r1, 1;\nret;\n}\n").encode()
    tracemalloc.start()
    try:
        m = parse_bytes(text, "ws.ptx")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [f.name for f in m.functions] == ["k"] and len(m.functions[0].statements) == 2
    assert peak < 12 * len(text), f"{peak / 1e6:.0f} MB for {len(text) / 1e6:.1f} MB"


def test_an_input_past_the_limit_is_refused_before_it_is_parsed(tmp_path):
    big = tmp_path / "big.ptx"
    big.write_bytes((HEAD + " " * (2 << 20)).encode())
    r = cli("parse", big, RRSPLICE_MAX_INPUT_MB="1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{big}: error: larger than the input limit of 1 MB" in r.stderr
    assert "[input-too-large]" in r.stderr
    assert cli("parse", big, RRSPLICE_MAX_INPUT_MB="3").returncode == 0


@needs_pagemap
def test_parse_of_a_file_that_never_ends_is_a_clear_error():
    r = cli("parse", PAGEMAP, RRSPLICE_MAX_INPUT_MB="4", timeout=60)
    assert r.returncode == 2, r.stderr
    assert "larger than the input limit of 4 MB" in r.stderr and "Traceback" not in r.stderr


@needs_pagemap
def test_a_recipe_whose_module_never_ends_is_a_clear_error(tmp_path):
    (tmp_path / "r.py").write_text(f'def recipe():\n    return dict(file="{PAGEMAP}", '
                                   'entry="k")\n')
    r = cli("check", tmp_path / "r.py", RRSPLICE_MAX_INPUT_MB="4", timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "input limit" in r.stderr and "Traceback" not in r.stderr


@pytest.fixture
def family(tmp_path):
    """Two copies of one kernel and a recipe for it: `apply --all` has two targets."""
    shutil.copy(SMALL, tmp_path / "m.ptx")
    shutil.copy(SMALL, tmp_path / "m2.ptx")
    (tmp_path / "r.py").write_text('def recipe():\n    return dict(file="m.ptx", '
                                   'entry="cfg_loops")\n')
    return tmp_path


@needs_pagemap
def test_apply_all_skips_a_fifo_and_an_endless_link_named_ptx(family):
    os.mkfifo(family / "fifo.ptx")                # no writer: opening it would block
    (family / "pagemap.ptx").symlink_to(PAGEMAP)
    r = cli("apply", family / "r.py", "--all", family, "-j", "1", "--json", timeout=60,
            RRSPLICE_MAX_INPUT_MB="4")
    assert r.returncode == 0, r.stderr
    assert f"{family / 'fifo.ptx'}: warning: not a regular file" in r.stderr
    assert f"{family / 'pagemap.ptx'}: warning: larger than the input limit" in r.stderr
    assert [k["module"] for k in json.loads(r.stdout)["kernels"]] == ["m.ptx", "m2.ptx"]


@needs_pagemap
def test_corpus_survey_reports_an_endless_link_as_a_row_error(family):
    (family / "pagemap.ptx").symlink_to(PAGEMAP)
    from rrsplice.workflow.corpus import modules_of, survey
    os.environ["RRSPLICE_MAX_INPUT_MB"] = "4"
    try:
        rows = survey(modules_of(family), workers=1)
    finally:
        del os.environ["RRSPLICE_MAX_INPUT_MB"]
    by = {Path(r["module"]).name: r for r in rows}
    assert "input limit" in by["pagemap.ptx"]["error"]
    assert by["m.ptx"]["error"] is None and by["m2.ptx"]["error"] is None


# Workers of `apply --all` run this version of _apply_one (the pool forks, so the patch is
# inherited): m2.ptx's worker is killed, or every worker sleeps.
_PATCHED = r"""
import os, signal, sys, time
import rrsplice.workflow.family as fam
real = fam._apply_one
def patched(recipe_path, module, *rest):
    mode = os.environ["RR_TEST_MODE"]
    if mode == "kill" and module.endswith("m2.ptx"):
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "sleep":
        print(os.getpid(), file=open(os.environ["RR_TEST_PIDS"], "a"), flush=True)
        time.sleep(120)
    return real(recipe_path, module, *rest)
fam._apply_one = patched
from rrsplice.cli import main
sys.argv = ["rrsplice"] + sys.argv[1:]
main()
"""


def _patched(family, mode, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), RRSPLICE_NO_CACHE="1", RR_TEST_MODE=mode,
               RR_TEST_PIDS=str(family / "pids"))
    return subprocess.Popen([sys.executable, "-c", _PATCHED, "apply", str(family / "r.py"),
                             "--all", str(family), "-j", "2", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.slow
def test_a_killed_worker_is_a_failed_row_not_a_traceback(family):
    p = _patched(family, "kill")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 1, err
    assert "Traceback" not in err and "BrokenProcessPool" not in err
    rows = {k["module"]: k for k in json.loads(out)["kernels"]}
    assert rows["m2.ptx"]["status"] == "failed"
    assert "worker process died" in rows["m2.ptx"]["message"]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
def test_sigterm_to_apply_all_stops_its_workers(family):
    p = _patched(family, "sleep")
    pids = family / "pids"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not pids.exists()
                                           or len(pids.read_text().split()) < 2):
        time.sleep(0.1)
    workers = [int(x) for x in pids.read_text().split()]
    assert len(workers) == 2 and all(_alive(w) for w in workers)
    try:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)               # stdout closed: no worker holds it open
        assert p.returncode == -signal.SIGTERM
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)]
    finally:
        for w in workers:                        # never leave them behind on failure
            if _alive(w):
                os.kill(w, signal.SIGKILL)
