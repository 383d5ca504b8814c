"""The cache under attack: planted pickles (Lark's temp-dir cache, a shared cache
directory), flipped bits, JSON of the wrong shape, edited sources, and the size bound.

Every scenario runs against private temporary directories (TMPDIR and RRSPLICE_CACHE_DIR
point into pytest's tmp_path), never the real /tmp or the user's cache.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rrsplice.infra import cache

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"


class _Evil:
    """Unpickling this runs code: it writes the marker file."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def _env(tmp_path: Path, **extra) -> dict:
    env = dict(os.environ)
    env.pop("RRSPLICE_NO_CACHE", None)
    env.update({"PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp"),
                "RRSPLICE_CACHE_DIR": str(tmp_path / "cache")})
    env.update(extra)
    (tmp_path / "tmp").mkdir(mode=0o700, exist_ok=True)
    return env


def _cli(env, *args):
    return subprocess.run([sys.executable, "-m", "rrsplice", *args], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_pickle_planted_in_the_temp_directory_is_never_loaded(tmp_path):
    env = _env(tmp_path)
    marker = tmp_path / "pwned"
    src = tmp_path / "m.ptx"
    shutil.copy(SMALL, src)
    assert _cli(env, "parse", str(src)).returncode == 0
    written = list((tmp_path / "tmp").glob(".lark*"))
    # plant one at every name a temp-dir grammar cache could use, then parse again
    evil = b"0" * 64 + b"\n" + pickle.dumps(_Evil(marker))
    for p in written or [tmp_path / "tmp" / ".lark_cache_planted.tmp"]:
        p.write_bytes(evil)
    r = _cli(env, "parse", str(src))
    assert r.returncode == 0, r.stderr
    assert not marker.exists(), "a pickle planted in the temp directory ran"
    assert written == [], "the parser wrote a cache into the shared temp directory"


def _plant_entry(tmp_path, mode_dir: int, chown: bool = False) -> tuple[Path, Path, dict]:
    """A cache directory with a (sealed, well-formed) evil module entry for `m.ptx`."""
    env = _env(tmp_path)
    marker = tmp_path / "pwned"
    src = tmp_path / "m.ptx"
    shutil.copy(SMALL, src)
    cdir = tmp_path / "cache"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RRSPLICE_CACHE_DIR", str(cdir))
        mp.delenv("RRSPLICE_NO_CACHE", raising=False)
        entry = cache.entry_path(src)
    entry.parent.mkdir(parents=True, exist_ok=True)
    seal = getattr(cache, "_seal", lambda b: b)
    entry.write_bytes(seal(pickle.dumps(_Evil(marker))))
    for d in (cdir, entry.parent):
        os.chmod(d, mode_dir)
    if chown:
        os.chown(entry, 65534, 65534)
        os.chmod(entry, 0o644)
    return src, marker, env


def test_a_cache_directory_others_can_write_is_refused(tmp_path):
    src, marker, env = _plant_entry(tmp_path, 0o777)
    r = _cli(env, "liveness", str(src), "--range", "s15-s35")
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    assert "writable by group or others" in r.stderr and "[cache-untrusted]" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="handing a file to another user needs root")
def test_an_entry_owned_by_another_user_is_refused(tmp_path):
    src, marker, env = _plant_entry(tmp_path, 0o700, chown=True)
    r = _cli(env, "liveness", str(src), "--range", "s15-s35")
    assert r.returncode == 0, r.stderr
    assert not marker.exists()
    assert "not by the current user" in r.stderr


def test_the_cache_directory_is_created_private(tmp_path, monkeypatch):
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "fresh" / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    cache.load_module(SMALL)
    for d in (tmp_path / "fresh" / "c", tmp_path / "fresh" / "c" / "modules"):
        assert (d.stat().st_mode & 0o777) == 0o700


def _fresh_statements(path):
    from rrsplice.ptx.parser import parse_bytes
    m = parse_bytes(Path(path).read_bytes(), str(path))
    return [(s.text, s.operands) for s in m.functions[0].statements]


def test_a_flipped_byte_in_an_entry_is_a_miss_not_a_wrong_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    src = tmp_path / "m.ptx"
    shutil.copy(SMALL, src)
    cache.load_module(src)
    entry = cache.entry_path(src)
    blob = entry.read_bytes()
    # a register name string as pickled (SHORT_BINUNICODE, length 3): still a valid pickle
    needle = b"\x8c\x03%r5"
    assert needle in blob
    entry.write_bytes(blob.replace(needle, b"\x8c\x03%r6", 1))
    m = cache.load_module(src)
    assert [(s.text, s.operands) for s in m.functions[0].statements] == \
        _fresh_statements(src)


@pytest.mark.slow
def test_json_of_the_wrong_shape_is_a_miss(tmp_path):
    env = _env(tmp_path)
    src = tmp_path / "m.ptx"
    shutil.copy(SMALL, src)
    first = _cli(env, "liveness", str(src), "--range", "s15-s35", "--json")
    assert first.returncode == 0, first.stderr
    reports = tmp_path / "cache" / "reports"
    entries = list(reports.iterdir())
    assert entries
    for p in entries:
        p.write_text("[1, 2, 3]")
    again = _cli(env, "liveness", str(src), "--range", "s15-s35", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)


def test_editing_any_source_file_changes_every_key(tmp_path, monkeypatch):
    """provenance.py was missing from the hand-written source lists: editing it left
    `check` serving the old answer."""
    from rrsplice.ptx.parser import parse_bytes
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    pkg = tmp_path / "pkg" / "rrsplice"
    shutil.copytree(ROOT / "rrsplice", pkg, ignore=shutil.ignore_patterns("__pycache__"))

    def forget():
        for name in ("_code_hash", "_keys"):
            getattr(cache, name).clear()

    monkeypatch.setattr(cache, "_PKG", pkg)
    forget()
    m = parse_bytes(SMALL.read_bytes(), str(SMALL))
    assert cache.remember_module_fact(m, "fact", lambda: 1) == 1
    assert cache.remember_module_fact(m, "fact", lambda: 2) == 1   # a hit
    with open(pkg / "analysis" / "provenance.py", "a") as f:
        f.write("\n# an edit\n")
    forget()
    assert cache.remember_module_fact(m, "fact", lambda: 2) == 2
    forget()


def test_the_cache_stays_under_its_size_limit_evicting_the_oldest(tmp_path, monkeypatch):
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    monkeypatch.setenv("RRSPLICE_CACHE_MAX_MB", str(30_000 / 1024 / 1024))
    area = tmp_path / "c" / "reports"
    for i in range(12):
        cache.remember_json("reports", f"k{i}", lambda: "x" * 4000)
        for p in area.iterdir():            # older entries look older, in write order
            st = p.stat()
            os.utime(p, (st.st_atime, st.st_mtime - 10))
    info = cache.info()
    assert 0 < info["bytes"] <= 30_000
    assert 1 <= info["areas"]["reports"]["entries"] < 12
    # the newest survives (served without computing), the oldest is gone (computed again)
    assert cache.remember_json("reports", "k11", lambda: "recomputed") == "x" * 4000
    assert cache.remember_json("reports", "k0", lambda: "recomputed") == "recomputed"
    n = cache.info()["entries"]
    assert n > 0 and cache.clear() == n
    assert cache.info()["entries"] == 0


@pytest.mark.slow
def test_cache_info_and_clear_commands(tmp_path):
    env = _env(tmp_path)
    src = tmp_path / "m.ptx"
    shutil.copy(SMALL, src)
    assert _cli(env, "liveness", str(src), "--range", "s15-s35").returncode == 0
    info = json.loads(_cli(env, "cache", "info", "--json").stdout)
    assert info["directory"] == str(tmp_path / "cache") and info["trusted"] is True
    assert info["areas"]["modules"]["entries"] == 1 and info["entries"] >= 3
    text = _cli(env, "cache", "info").stdout
    assert str(tmp_path / "cache") in text and "in use" in text
    (tmp_path / "cache" / "keep.txt").write_text("not the cache's")
    r = _cli(env, "cache", "clear")
    assert r.returncode == 0 and f"removed {info['entries']} entries" in r.stdout
    assert json.loads(_cli(env, "cache", "info", "--json").stdout)["entries"] == 0
    assert (tmp_path / "cache" / "keep.txt").exists()
    os.chmod(tmp_path / "cache", 0o777)
    assert "NOT used: writable by group or others" in _cli(env, "cache", "info").stdout
