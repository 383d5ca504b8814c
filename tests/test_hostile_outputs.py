"""Outputs nobody asked to be written where they land: `body new` onto its own inputs or
through a planted `rr_mma.h` link, a default output path (no `-o`) through a link or into a
directory someone else controls, concurrent `stages new` on one recipe, and SIGTERM while
an output is being flushed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rrsplice.workflow.scaffold import new_recipe

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"
TINY = ROOT / "corpus_fixtures" / "swin_tiny_sm89.ptx"
ROOTED = hasattr(os, "geteuid") and os.geteuid() == 0


def cli(*args, cwd=None, timeout=120, env=None):
    env = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def project(tmp_path):
    shutil.copy(SMALL, tmp_path / "m.ptx")
    # debug stages store through a pointer the recipe names (the kernel reads through its
    # only one, so the recipe says why that is acceptable here)
    (tmp_path / "r.py").write_text('DEBUG_PARAM = "cfg_loops_param_0+0"\n'
                                   'DEBUG_ALIAS_OK = "a test of file writes, never run"\n\n'
                                   'def recipe():\n    return dict(file="m.ptx")\n')
    return tmp_path


@pytest.fixture(scope="module")
def phase(tmp_path_factory):
    """tiny's phase 1 as a scratch recipe beside its own copy of the module."""
    d = tmp_path_factory.mktemp("phase")
    shutil.copy(TINY, d / "tiny.ptx")
    new_recipe("p1", d / "tiny.ptx", "s342-s405", abi="scratch", out=d / "p1.py",
               occupancy=False)
    return d


def _fresh(phase, tmp_path) -> Path:
    d = tmp_path / "w"
    shutil.copytree(phase, d)
    return d


# ------------------------------------------------------------------ body new (23.4)

@pytest.mark.slow
@pytest.mark.parametrize("victim", ["p1.py", "tiny.ptx"])
def test_body_new_refuses_to_write_over_its_recipe_or_module(phase, tmp_path, victim):
    d = _fresh(phase, tmp_path)
    before = (d / victim).read_bytes()
    r = cli("body", "new", d / "p1.py", "-o", d / victim, cwd=d)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "output-is-input" in r.stderr and "Traceback" not in r.stderr
    assert (d / victim).read_bytes() == before
    assert not (d / "rr_mma.h").exists()          # nothing written, the header neither


@pytest.mark.slow
def test_body_new_never_writes_through_a_planted_header_link(phase, tmp_path):
    d = _fresh(phase, tmp_path)
    other = tmp_path / "precious.txt"
    other.write_text("keep me\n")
    (d / "rr_mma.h").symlink_to(other)
    r = cli("body", "new", d / "p1.py", "-o", d / "b.cu", cwd=d)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "rr_mma.h" in r.stderr and "symlink" in r.stderr
    assert other.read_text() == "keep me\n" and (d / "rr_mma.h").is_symlink()
    assert not (d / "b.cu").exists()
    # the header linked onto the recipe: refused as well, the recipe intact
    (d / "rr_mma.h").unlink()
    (d / "rr_mma.h").symlink_to(d / "p1.py")
    before = (d / "p1.py").read_bytes()
    r = cli("body", "new", d / "p1.py", "-o", d / "b.cu", cwd=d)
    assert r.returncode == 2 and (d / "p1.py").read_bytes() == before


@pytest.mark.slow
def test_body_new_default_output_is_not_written_through_a_link(phase, tmp_path):
    d = _fresh(phase, tmp_path)
    other = tmp_path / "precious.txt"
    other.write_text("keep me\n")
    (d / "d4r_p1.cu").symlink_to(other)
    r = cli("body", "new", d / "p1.py", cwd=d)
    assert r.returncode == 2 and "output-is-link" in r.stderr, r.stderr
    assert other.read_text() == "keep me\n"
    (d / "d4r_p1.cu").unlink()
    r = cli("body", "new", d / "p1.py", cwd=d)        # a plain default path: written
    assert r.returncode == 0, r.stderr
    assert "d4r_p1" in (d / "d4r_p1.cu").read_text()


# ------------------------------------------------------------------ default outputs (23.5)

def test_apply_default_output_refuses_a_planted_link(project, tmp_path):
    victim = tmp_path / "victim.ptx"
    victim.write_text("// someone's file\n")
    (project / "out").mkdir()
    (project / "out" / "m.r.ptx").symlink_to(victim)
    r = cli("apply", project / "r.py", "--corpus", project)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "m.r.ptx" in r.stderr and "output-is-link" in r.stderr
    assert victim.read_text() == "// someone's file\n"
    # named with -o, the link is the user's choice: written through, the link kept
    r = cli("apply", project / "r.py", "--corpus", project, "-o", project / "out" / "m.r.ptx")
    assert r.returncode == 0, r.stderr
    assert ".entry" in victim.read_text() and (project / "out" / "m.r.ptx").is_symlink()


def test_apply_default_output_refuses_an_out_directory_that_is_a_link(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "out").symlink_to(elsewhere)
    r = cli("apply", project / "r.py", "--corpus", project)
    assert r.returncode == 2 and "output-is-link" in r.stderr, r.stderr
    assert list(elsewhere.iterdir()) == []


def test_apply_default_output_refuses_a_directory_open_to_others(project):
    (project / "out").mkdir()
    os.chmod(project / "out", 0o777)
    r = cli("apply", project / "r.py", "--corpus", project)
    assert r.returncode == 2 and "untrusted-directory" in r.stderr, r.stderr
    assert "writable by others" in r.stderr
    assert list((project / "out").iterdir()) == []
    r = cli("apply", project / "r.py", "--corpus", project, "-o", project / "out")
    assert r.returncode == 0, r.stderr               # named: the user's choice
    os.chmod(project / "out", 0o755)
    r = cli("apply", project / "r.py", "--corpus", project)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(not ROOTED, reason="giving a directory to another user needs root")
def test_apply_default_output_refuses_a_directory_of_another_user(project):
    (project / "out").mkdir()
    os.chown(project / "out", 4242, 4242)
    r = cli("apply", project / "r.py", "--corpus", project)
    assert r.returncode == 2 and "owned by uid 4242" in r.stderr, r.stderr
    assert list((project / "out").iterdir()) == []


# ------------------------------------------------------------------ stages new (23.7)

# Each process sleeps between reading the recipe and writing it back (inside the write), so
# without a lock every one of them reads the table before any writes it.
_SLOW_WRITER = r"""
import sys, time
import rrsplice.infra.fsutil as f
real = f.write_atomic
def slow(*a, **k):
    time.sleep(0.4)
    return real(*a, **k)
f.write_atomic = slow
import rrsplice.workflow.splice as s
s.write_atomic = slow
from rrsplice.cli import main
sys.argv = ["rrsplice"] + sys.argv[1:]
main()
"""


@pytest.mark.slow
def test_six_concurrent_stages_new_keep_all_six_stages(project):
    env = dict(os.environ, PYTHONPATH=str(ROOT), RRSPLICE_NO_CACHE="1")
    procs = []
    for i in range(3, 9):       # staggered: some open the recipe after it was replaced
        procs.append(subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, "stages", "new",
                                       str(project / "r.py"), "--at", f"s{i}", "--regs",
                                       "%r1", "--corpus", str(project)],
                                      env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        time.sleep(0.35)
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, outs
    from rrsplice.workflow.recipe import load_recipe
    assert set(load_recipe(project / "r.py").stages()) == {f"r.s{i}" for i in range(3, 9)}
    assert not list(project.glob(".*.tmp"))


# SIGTERM arrives while the output is being flushed to disk.
_TERM_IN_FSYNC = r"""
import os, signal, sys, time
def fsync(fd):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
os.fsync = fsync
from rrsplice.cli import main
sys.argv = ["rrsplice"] + sys.argv[1:]
main()
"""


@pytest.mark.parametrize("command", [["stages", "new", "r.py", "--at", "s3", "--regs", "%r1"],
                                     ["apply", "r.py", "-o", "o.ptx"]])
def test_sigterm_during_fsync_leaves_no_temporary_file(project, command):
    before = (project / "r.py").read_bytes()
    env = dict(os.environ, PYTHONPATH=str(ROOT), RRSPLICE_NO_CACHE="1")
    p = subprocess.run([sys.executable, "-c", _TERM_IN_FSYNC, *command, "--corpus", "."],
                       cwd=project, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == -signal.SIGTERM, p.stderr
    assert not [q.name for q in project.iterdir() if q.name.endswith(".tmp")]
    assert (project / "r.py").read_bytes() == before and not (project / "o.ptx").exists()


@pytest.mark.slow
def test_body_new_in_a_directory_open_to_others_needs_o(phase, tmp_path):
    d = _fresh(phase, tmp_path)
    os.chmod(d, 0o777)
    r = cli("body", "new", d / "p1.py", cwd=d)
    assert r.returncode == 2 and "untrusted-directory" in r.stderr, r.stderr
    assert not (d / "d4r_p1.cu").exists() and not (d / "rr_mma.h").exists()
    r = cli("body", "new", d / "p1.py", "-o", d / "b.cu", cwd=d)    # named: the user's choice
    assert r.returncode == 0, r.stderr
    assert (d / "b.cu").is_file() and (d / "rr_mma.h").is_file()
