"""Faults: a writer killed mid-write, writers racing for one output, and cache entries
cut short. The output is always the old file or a whole new one; the cache always gives
the right answer. (Figures for docs/reliability.md come from these.)"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rrsplice.infra import cache
from rrsplice.ptx.parser import parse_bytes

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "corpus_fixtures" / "small" / "cfg_loops.ptx"
SIZE = 8 << 20

_WRITER = r"""
import sys
from rrsplice.infra.fsutil import write_atomic
target, start = sys.argv[1], int(sys.argv[2])
i = start
print("ready", flush=True)
while True:
    write_atomic(target, bytes([i % 251]) * SIZE)
    i += 1
""".replace("SIZE", str(SIZE))


def _whole(p: Path) -> bool:
    data = p.read_bytes()
    return len(data) == SIZE and data.count(data[:1]) == SIZE


@pytest.mark.slow
def test_a_writer_killed_mid_write_never_leaves_a_partial_output(tmp_path):
    target = tmp_path / "out.ptx"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    kills = 0
    for n in range(12):
        proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(target), str(n)],
                                env=env, stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.05 + 0.037 * n)              # land at different points of a write
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        if target.exists():
            assert _whole(target), f"partial output after kill {n}"
    assert kills == 12 and target.exists()


@pytest.mark.slow
def test_concurrent_writers_leave_one_whole_output_and_no_temporary_files(tmp_path):
    target = tmp_path / "out.ptx"
    code = ("import sys\nfrom rrsplice.infra.fsutil import write_atomic\n"
            f"for _ in range(3): write_atomic(sys.argv[1], bytes([int(sys.argv[2])]) * {SIZE})\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(target), str(i)], env=env)
             for i in range(8)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    assert _whole(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ptx"]


def test_a_cache_entry_cut_short_anywhere_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    src = tmp_path / "m.ptx"
    shutil.copy(SMALL, src)
    truth = [(s.text, s.operands, s.line) for s in
             parse_bytes(SMALL.read_bytes(), "t").functions[0].statements]
    cache.load_module(src)
    entry = cache.entry_path(src)
    whole = entry.read_bytes()
    for cut in sorted({0, 1, 10, 17, 80, 81, 82, len(whole) // 3, len(whole) // 2,
                       len(whole) - 2, len(whole) - 1}):
        entry.write_bytes(whole[:cut])
        cache.forget_loaded()          # read the damaged entry, not this process's model
        m = cache.load_module(src)
        assert [(s.text, s.operands, s.line) for s in m.functions[0].statements] == truth
        assert entry.read_bytes() == whole          # rewritten whole
