"""Writing never destroys what it should not: devices, FIFOs, symlinks, the command's own
inputs, file modes, and error messages that name the target, not a temporary file.

The device scenario uses a private character device made in tmp_path (the same major and
minor numbers as /dev/null), never the real /dev/null.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rrsplice.infra.fsutil import WriteError, write_atomic

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"
TINY = ROOT / "corpus_fixtures" / "swin_tiny_sm89.ptx"


@pytest.fixture
def project(tmp_path):
    """A module and a baseline recipe in a private directory."""
    shutil.copy(SMALL, tmp_path / "m.ptx")
    (tmp_path / "r.py").write_text('def recipe():\n    return dict(file="m.ptx")\n')
    return tmp_path


def cli(*args, cwd=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "rrsplice", *map(str, args)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def snapshot(d: Path) -> dict:
    return {p.name: (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
            for p in d.iterdir()}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="making a device node needs root")
def test_apply_to_a_character_device_writes_to_it_and_leaves_it_a_device(project):
    null = project / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    r = cli("apply", project / "r.py", "--corpus", project, "-o", null)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert not list(project.glob(".*.tmp"))


def test_apply_to_a_fifo_writes_into_it(project):
    fifo = project / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = cli("apply", project / "r.py", "--corpus", project, "-o", fifo)
    reader.join(timeout=60)
    assert r.returncode == 0, r.stderr
    assert got == [SMALL.read_bytes()]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_fifo_without_a_reader_is_an_error_not_a_hang(project):
    fifo = project / "pipe"
    os.mkfifo(fifo)
    r = cli("apply", project / "r.py", "--corpus", project, "-o", fifo, timeout=60)
    assert r.returncode == 2
    assert str(fifo) in r.stderr and "Traceback" not in r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(project):
    real = project / "real.ptx"
    real.write_text("old")
    link = project / "link.ptx"
    link.symlink_to(real)
    r = cli("apply", project / "r.py", "--corpus", project, "-o", link)
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_bytes() == SMALL.read_bytes()


def test_apply_refuses_to_overwrite_its_recipe(project):
    before = snapshot(project)
    r = cli("apply", project / "r.py", "--corpus", project, "-o", project / "r.py")
    assert r.returncode == 2
    assert "refusing to write over the recipe" in r.stderr + r.stdout
    assert snapshot(project) == before


def test_apply_refuses_to_overwrite_its_module_through_a_symlink(project):
    (project / "alias.ptx").symlink_to(project / "m.ptx")
    before = snapshot(project)
    r = cli("apply", project / "r.py", "--corpus", project, "-o", project / "alias.ptx")
    assert r.returncode == 2
    assert "refusing to write over the input" in r.stderr + r.stdout
    assert snapshot(project) == before


@pytest.mark.slow
def test_outline_refuses_to_overwrite_its_module(tmp_path):
    shutil.copy(TINY, tmp_path / TINY.name)
    recipe = tmp_path / "swin_tiny_sm89.py"
    shutil.copy(ROOT / "recipes" / "swin_tiny_sm89.py", recipe)
    before = snapshot(tmp_path)
    r = cli("outline", recipe, "--corpus", tmp_path, "-o", tmp_path / TINY.name, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refusing to write over the input" in r.stderr + r.stdout
    assert snapshot(tmp_path) == before


def test_recipe_new_refuses_to_overwrite_its_module(project):
    before = snapshot(project)
    r = cli("recipe", "new", "x", "--module", project / "m.ptx", "--range", "s15-s35", "--abi", "param",
            "-o", project / "m.ptx", "--force")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "refusing to write over the input" in r.stderr + r.stdout
    assert snapshot(project) == before


def test_new_files_get_the_umask_mode_and_replaced_files_keep_theirs(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "new.ptx", b"x")
        assert stat.S_IMODE(os.stat(tmp_path / "new.ptx").st_mode) == 0o644
        kept = tmp_path / "kept.ptx"
        kept.write_bytes(b"old")
        os.chmod(kept, 0o640)
        write_atomic(kept, b"new")
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o640 and kept.read_bytes() == b"new"
    finally:
        os.umask(old)


@pytest.mark.slow
def test_a_write_error_names_the_target_not_the_temporary_file(tmp_path):
    (tmp_path / "afile").write_text("x")
    target = tmp_path / "afile" / "out.ptx"
    with pytest.raises(WriteError) as ei:
        write_atomic(target, b"data")
    assert str(target) in str(ei.value) and ".tmp" not in str(ei.value)
    r = cli("apply", SMALL.parent / ".." / ".." / "recipes" / "swin_tiny_sm89.py", "-o", target)
    assert r.returncode == 2
    assert "out.ptx" in r.stderr and ".tmp" not in r.stderr and "Traceback" not in r.stderr


def test_the_hook_refuses_to_overwrite_the_recipe(project):
    from rrsplice.workflow.hook import HookError, apply_recipe
    before = snapshot(project)
    with pytest.raises(HookError) as ei:
        apply_recipe(project / "r.py", corpus=project, out=project / "r.py")
    assert "refusing to write over the recipe" in str(ei.value)
    assert snapshot(project) == before
