"""The cache's directory under attack (issue 23.6, 23.13): a cache directory of another
user, files in an area that are not entries, an area or the cache directory swapped for a
link, an entry path that is a link, and size limits that are not numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rrsplice.infra import cache

ROOT = Path(__file__).resolve().parent.parent
ROOTED = hasattr(os, "geteuid") and os.geteuid() == 0
HEX = "ab" * 32          # a name shaped like an entry's key


@pytest.fixture
def cdir(tmp_path, monkeypatch):
    d = tmp_path / "c"
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(d))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    monkeypatch.delenv("RRSPLICE_CACHE_MAX_MB", raising=False)
    return d


def _cli(*args, **env):
    e = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    e.pop("RRSPLICE_NO_CACHE", None)
    return subprocess.run([sys.executable, "-m", "rrsplice", *args], env=e,
                          capture_output=True, text=True, timeout=120)


def test_eviction_removes_only_entries_not_other_files(cdir, monkeypatch):
    cache.remember_json("reports", "k0", lambda: "x" * 100)
    area = cdir / "reports"
    notes = area / "notes.txt"
    notes.write_text("y" * 50_000)
    odd = area / "mine.json"                  # a .json, but not named like an entry
    odd.write_text("{}")
    os.utime(notes, (1, 1))                   # the oldest files there
    os.utime(odd, (1, 1))
    monkeypatch.setenv("RRSPLICE_CACHE_MAX_MB", str(1000 / 1024 / 1024))
    for i in range(1, 4):
        cache.remember_json("reports", f"k{i}", lambda: "x" * 400)
    assert notes.read_text() == "y" * 50_000 and odd.exists()
    assert cache.info()["areas"]["reports"]["entries"] >= 1
    assert cache.clear() >= 1
    assert notes.exists() and odd.exists()
    assert not [p for p in area.iterdir() if cache.ENTRY_NAME.match(p.name)]


def test_an_area_that_is_a_link_is_neither_cleared_nor_evicted_through(cdir, tmp_path,
                                                                        monkeypatch):
    cache.remember_json("facts", "k", lambda: 1)        # creates the directory
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    planted = victim / f"{HEX}.json"
    planted.write_text("precious")
    (cdir / "reports").symlink_to(victim)
    monkeypatch.setenv("RRSPLICE_CACHE_MAX_MB", "0")
    cache.remember_json("facts", "k2", lambda: 2)       # evicts everything it may
    cache.clear()
    assert planted.read_text() == "precious"
    # and nothing is stored through it either
    assert cache.remember_json("reports", "r", lambda: 3) == 3
    assert [p.name for p in victim.iterdir()] == [planted.name]


def test_an_entry_path_that_is_a_link_is_not_written_through(cdir, tmp_path):
    cache.remember_json("reports", "other", lambda: 0)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    entry = cache._json_entry("reports", "k")
    entry.symlink_to(victim)
    assert cache.remember_json("reports", "k", lambda: "computed") == "computed"
    assert victim.read_text() == "precious"
    assert entry.is_symlink()


@pytest.mark.skipif(not ROOTED, reason="giving a directory to another user needs root")
def test_cache_clear_refuses_a_directory_of_another_user(tmp_path):
    d = tmp_path / "c" / "reports"
    d.mkdir(parents=True, mode=0o700)
    os.chmod(tmp_path / "c", 0o700)
    entry = d / f"{HEX}.json"
    entry.write_text("theirs")
    os.chown(tmp_path / "c", 4242, 4242)
    r = _cli("cache", "clear", RRSPLICE_CACHE_DIR=str(tmp_path / "c"))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "owned by uid 4242" in r.stderr and "[cache-untrusted]" in r.stderr
    assert "Traceback" not in r.stderr and entry.read_text() == "theirs"


@pytest.mark.skipif(not ROOTED, reason="a link owned by another user needs root")
def test_a_cache_directory_swapped_for_another_users_link_directs_nothing(tmp_path):
    """An others-writable parent lets anyone replace the cache directory with a link to a
    directory the victim owns: the link is someone else's, so it is refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    target = tmp_path / "mine"                    # root-owned, 0700: would pass as trusted
    (target / "reports").mkdir(parents=True, mode=0o700)
    os.chmod(target, 0o700)
    planted = target / "reports" / f"{HEX}.json"
    planted.write_text("precious")
    link = shared / "c"
    link.symlink_to(target)
    os.lchown(link, 4242, 4242)
    r = _cli("cache", "clear", RRSPLICE_CACHE_DIR=str(link))
    assert r.returncode == 2 and "symlink owned by uid 4242" in r.stderr, r.stderr
    r = _cli("liveness", str(ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"),
             "--range", "s15-s35", RRSPLICE_CACHE_DIR=str(link), RRSPLICE_CACHE_MAX_MB="0")
    assert r.returncode == 0 and "cache-untrusted" in r.stderr, r.stderr
    assert planted.read_text() == "precious"
    assert sorted(p.name for p in target.iterdir()) == ["reports"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400", "-5", "lots"])
def test_a_size_limit_that_is_not_a_number_falls_back_to_the_default(value, tmp_path):
    r = _cli("cache", "info", "--json", RRSPLICE_CACHE_DIR=str(tmp_path / "c"),
             RRSPLICE_CACHE_MAX_MB=value)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert json.loads(r.stdout)["max_bytes"] == cache.DEFAULT_MAX_MB * 1024 * 1024
    assert "RRSPLICE_CACHE_MAX_MB" in r.stderr and "[bad-environment]" in r.stderr


def test_a_debug_block_of_many_registers_is_checked_in_linear_time(tmp_path, monkeypatch):
    """The debug block's registers were each looked up by walking the whole block (and kept
    in lists searched per register): quadratic. Counted, not timed: the number of walks of
    the block's declarations must not grow with the registers."""
    from rrsplice.check import check_recipe
    from rrsplice.ptx import model
    n = 3000
    lines = [".version 8.0", ".target sm_89", ".address_size 64", "",
             ".visible .entry k(.param .u64 p)", "{", f".reg .b32 %r<{n + 1}>;",
             ".reg .b64 %rd<2>;", "ld.param.u64 %rd1, [p];"]
    lines += [f"mov.u32 %r{i}, {i};" for i in range(1, n + 1)]
    lines += ["ret;", "}"]
    (tmp_path / "m.ptx").write_text("\n".join(lines) + "\n")
    regs = [f"%r{i}" for i in range(1, n + 1)]
    (tmp_path / "r.py").write_text(
        'DEBUG_PARAM = "p+0"\nDEBUG_ALIAS_OK = "checked, never run"\n\n'
        'def recipe():\n    return dict(file="m.ptx")\n\n\n'
        f'def stages():\n    return {{"r.end": ({len(lines) - 2}, {regs!r})}}\n')
    walks = []
    real = model.Function.decls

    def counted(self):
        walks.append(1)
        return real(self)
    monkeypatch.setattr(model.Function, "decls", counted)
    monkeypatch.setenv("RRSPLICE_NO_CACHE", "1")
    rep = check_recipe(tmp_path / "r.py", tmp_path, stage="r.end")
    assert rep.ok, [f.render() for f in rep.errors]
    assert rep.facts.stage.registers == regs
    assert len(walks) < 50, len(walks)
