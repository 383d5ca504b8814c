"""Cache trust for every mode and owner combination (unit: `untrusted_reason`; end to end: a
cache directory or entry of each kind is written to or read from only when trusted), and cache
keys that differ in exactly one field at a time."""

from __future__ import annotations

import itertools
import os
import stat

import pytest

from rrsplice.analysis.dataflow import analyze
from rrsplice.infra import cache

ME = os.geteuid()
MODES = [0o700, 0o750, 0o755, 0o705, 0o770, 0o707, 0o720, 0o702, 0o777, 0o600, 0o640, 0o644,
         0o660, 0o606, 0o620, 0o602, 0o666, 0o400]


def _stat(mode: int, uid: int, kind=stat.S_IFDIR) -> os.stat_result:
    return os.stat_result((kind | mode, 1, 1, 1, uid, 0, 0, 0, 0, 0))


@pytest.mark.parametrize("mode,owner,kind", list(itertools.product(
    MODES, ["me", "other"], [stat.S_IFDIR, stat.S_IFREG])))
def test_trust_for_every_mode_and_owner(mode, owner, kind):
    uid = ME if owner == "me" else ME + 1
    why = cache.untrusted_reason(_stat(mode, uid, kind))
    # written out: trusted only when ours and writable by nobody else
    trusted = owner == "me" and not (mode & stat.S_IWGRP) and not (mode & stat.S_IWOTH)
    assert (why is None) == trusted, (oct(mode), owner, why)
    if owner == "other":
        assert "owned by uid" in why
    elif not trusted:
        assert "writable by group or others" in why


PTX = (".version 8.0\n.target sm_89\n.address_size 64\n\n"
       ".visible .entry a(\n\t.param .u64 a_p\n)\n{\n\t.reg .b32 %r<9>;\n\tmov.u32 %r1, %tid.x;\n"
       "\tadd.s32 %r2, %r1, 1;\n\tmul.lo.s32 %r3, %r2, %r1;\n\tret;\n}\n\n"
       ".visible .entry b(\n\t.param .u64 b_p\n)\n{\n\t.reg .b32 %r<9>;\n\tmov.u32 %r5, %tid.y;\n"
       "\tadd.s32 %r6, %r5, 2;\n\tsub.s32 %r7, %r5, %r6;\n\tret;\n}\n")


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("RRSPLICE_CACHE_DIR", str(d))
    monkeypatch.delenv("RRSPLICE_NO_CACHE", raising=False)
    cache.forget_loaded()
    src = tmp_path / "k.ptx"
    src.write_text(PTX)
    yield d, src
    cache.forget_loaded()


def _entries(d):
    return sorted(p.name for p in d.rglob("*.pickle")) if d.exists() else []


@pytest.mark.parametrize("mode", [0o700, 0o750, 0o755, 0o770, 0o707, 0o777, 0o720, 0o702])
def test_a_cache_directory_is_used_only_when_trusted(fresh, capsys, mode):
    d, src = fresh
    d.mkdir(mode=0o700)
    os.chmod(d, mode)
    cache.load_module(src)
    err = capsys.readouterr().err
    if mode & 0o022:
        assert _entries(d) == [] and "[cache-untrusted]" in err
    else:
        assert len(_entries(d)) == 1 and "cache-untrusted" not in err


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o604, 0o660, 0o620, 0o606, 0o602,
                                  0o666])
def test_an_entry_is_read_only_when_trusted(fresh, mode):
    """A sealed entry whose model differs from a fresh parse (its second function renamed)
    but whose bytes match: loaded as is from a trusted entry, ignored from one that others
    could have written."""
    d, src = fresh
    m = cache.load_module(src)
    (entry,) = list(d.rglob("*.pickle"))
    m.functions[1].name = "zz"
    cache._write(entry, m)                         # the poisoned model under the real key
    os.chmod(entry, mode)
    cache.forget_loaded()
    names = [f.name for f in cache.load_module(src).functions]
    assert names == (["a", "b"] if mode & 0o022 else ["a", "zz"]), oct(mode)


def test_module_key_changes_with_each_field(fresh, monkeypatch):
    data = PTX.encode()
    base = cache.module_key(data)
    assert cache.module_key(data) == base                       # deterministic
    assert cache.module_key(data[:-2] + b" }") != base          # one byte of the module
    monkeypatch.setattr(cache, "__version__", "0.0.0-other")
    assert cache.module_key(data) != base                       # the tool's version
    monkeypatch.undo()
    monkeypatch.setattr(cache, "_FORMAT", cache._FORMAT + 1)
    assert cache.module_key(data) != base                       # the entry format
    monkeypatch.undo()
    monkeypatch.setattr(cache, "_code_fingerprint", lambda pkg=None: "0" * 24)
    assert cache.module_key(data) != base                       # the tool's code
    monkeypatch.undo()
    assert cache.module_key(data) == base


def _du(fa):
    return [(tuple(sorted(x.defs)), tuple(sorted(x.uses))) for x in fa.du]


def test_analysis_entries_are_per_function(fresh):
    """Two functions of one module with the same number of statements: each gets its own
    analysis from the cache, in a later process too (memo forgotten)."""
    _d, src = fresh
    m = cache.load_module(src)
    a, b = [f for f in m.functions if f.has_body]
    assert len(a.statements) == len(b.statements)
    cache.load_analysis(m, a)
    cache.load_analysis(m, b)
    cache.forget_loaded()
    m2 = cache.load_module(src)
    a2, b2 = [f for f in m2.functions if f.has_body]
    fb = cache.load_analysis(m2, b2)
    fa = cache.load_analysis(m2, a2)
    assert _du(fb) == _du(analyze(b2)) and _du(fa) == _du(analyze(a2))
    assert _du(fa) != _du(fb)
