"""The function's dataflow analysis and memoised facts, shared by the checks that need
them (through the model cache when it is available)."""

from __future__ import annotations

from ..model import Function, Module
from .report import Report

# the code whose results `_memo` keeps: a change to any of it invalidates them
_MEMO_SOURCES = ("check/analysis.py", "check/dataflow.py", "check/scratch.py", "mma.py")


def _analyze(rep: Report, fn: Function):
    if rep.analysis is None:
        try:
            from ..cache import load_analysis
        except ImportError:
            load_analysis = None
        if load_analysis is not None and rep.target is not None:
            rep.analysis = load_analysis(rep.target.module, fn)
        else:
            from ..dataflow import analyze
            rep.analysis = analyze(fn)
    return rep.analysis


def _memo(module: Module, fn: Function, what: str, compute):
    """`compute()` (JSON data), remembered in the model cache next to the module's entry
    so that the daily re-apply of one recipe skips it; computed when the cache is off."""
    import hashlib
    import json
    try:
        from .. import cache
        if not cache.enabled():
            return compute()
        key = hashlib.sha256(f"{cache._key_of(module)}|{fn.name}|{what}|"
                             f"{cache._sources_hash(_MEMO_SOURCES)}".encode()
                             ).hexdigest()
        path = cache.cache_dir() / "facts" / f"{key}.json"
    except Exception:  # noqa: BLE001 - the memo is an optimisation only
        return compute()
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    data = compute()
    try:
        from ..splice import write_atomic
        write_atomic(path, json.dumps(data).encode("utf-8"))
    except OSError:
        pass
    return data
