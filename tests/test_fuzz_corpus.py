"""Fuzz: hostile corpus directories (tests/fuzzing.py::hostile_corpus) through the two
commands that walk a corpus, `rrsplice descriptor --all DIR --json` (the survey) and
`rrsplice apply RECIPE --all DIR`. Each ends within the timeout (a FIFO is never opened),
exits 0, 1 or 2 without a traceback, surveys every regular fixture, names every special
entry it skips in a diagnostic with its code, and writes nothing into the corpus."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import stat
import subprocess
import sys

import pytest

from fuzzing import ROOT, hostile_corpus

TIMEOUT = 120


def _listing(root) -> dict:
    """name -> what the entry is (mode, link target or content hash), read without opening
    anything that is not a regular file."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(os.fsencode(root)):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            what = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode))
            if stat.S_ISLNK(st.st_mode):
                what += (os.readlink(p),)
            elif stat.S_ISREG(st.st_mode):
                try:
                    with open(p, "rb") as f:
                        what += (hashlib.sha256(f.read()).hexdigest(),)
                except OSError:
                    what += (st.st_size, st.st_mtime_ns)
            out[p] = what
    return out


def _run(args, tmp_path):
    env = dict(os.environ, RRSPLICE_MAX_INPUT_MB="1", RRSPLICE_NO_CACHE="1",
               XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    try:
        r = subprocess.run([sys.executable, "-m", "rrsplice", *args], cwd=ROOT, env=env,
                           capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"rrsplice {' '.join(args)} did not finish in {TIMEOUT} s (a FIFO read?)")
    stderr = r.stderr.decode("utf-8", "surrogateescape")
    assert r.returncode in (0, 1, 2), (r.returncode, stderr[-2000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    return r.returncode, r.stdout, stderr


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hostile_corpus_is_walked_without_hangs_tracebacks_or_writes(tmp_path, seed):
    corpus = tmp_path / "corpus"
    entries = hostile_corpus(random.Random(seed), corpus)
    assert {e["kind"] for e in entries} >= {"fixture", "fifo", "symlink-loop", "directory",
                                            "dangling-symlink", "empty", "over-limit"}
    before = _listing(corpus)
    full = {e["name"]: os.fsencode(corpus) + b"/" + e["name"] for e in entries}
    try:
        # the survey: one row per entry of every regular module, errors as rows
        code, out, _err = _run(["descriptor", "--all", str(corpus), "--json"], tmp_path)
        doc = json.loads(out)
        by_module: dict = {}
        for row in doc["rows"]:
            by_module.setdefault(os.fsencode(row["module"]), []).append(row)
        assert set(by_module) <= set(full.values()), "a row for something not in the corpus"
        for e in entries:
            rows = by_module.get(full[e["name"]], [])
            if e["survey"] == "absent":
                assert not rows, (e, rows)
            elif e["survey"] == "ok":
                assert rows and all(r["error"] is None and r["entry"] for r in rows), (e, rows)
            else:
                assert len(rows) == 1 and rows[0]["error"], (e, rows)
        assert doc["failed"] == sum(e["survey"] == "error" for e in entries)

        # the family walk: every *.ptx read or named in a skip warning with its code
        code, _out, err = _run(["apply", "recipes/tiny_family.py", "--all", str(corpus)],
                               tmp_path)
        assert code == 0, err[-2000:]
        lines = err.splitlines()
        for e in entries:
            p = os.fsdecode(full[e["name"]])
            named = [ln for ln in lines if ln.startswith(p + ":")]
            if e["family"] == "read":
                assert not named, (e, named)
            else:
                pat = re.compile(re.escape(p) + r"(:\d+:\d+)?: warning: .+ \["
                                 + re.escape(e["code"]) + r"\]$")
                assert any(pat.match(ln) for ln in named), (e, named)
        assert _listing(corpus) == before, "the corpus directory changed"
    finally:
        locked = corpus / "locked.ptx"
        if locked.exists():
            os.chmod(locked, 0o600)
