"""A corpus in one command: every module's entry, size, mma, phases and epilogues, in parallel.

`survey(paths, workers, progress)` analyses each `.ptx` in a worker process (parse, phases
and the epilogue kind of every gap of each `.entry` with a body) and returns one row per
entry, modules in path order.
A module that cannot be analysed gets a row with `error` (the parse error's file:line:col
message, or what else failed) instead of aborting the walk. Rows are remembered in the
cache keyed by the module's bytes, so a second survey of an unchanged corpus reads them
without starting any worker.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import as_completed
from pathlib import Path

from ..infra import cache

_KIND = "corpus-rows/2"


def modules_of(root) -> list:
    """Every `.ptx` under `root` (a directory, recursively) or `root` itself, sorted."""
    root = Path(root)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.ptx") if p.is_file())


def _entry_row(row: dict, fn) -> dict:
    from ..analysis.mma import phases
    from ..fragments.descriptor import classify_gap
    row["entry"] = fn.name
    ps = phases(fn)
    row["mma"] = sum(len(p.mmas) for p in ps)
    row["phases"] = len(ps)
    row["geometry"] = [f"{p.geometry} {p.shape}" for p in ps]
    eps = []
    for p in ps[:-1]:
        assert p.gap_first is not None  # phases() gives every phase but the last a gap
        gap = classify_gap(fn.statements[p.gap_first - 1:p.gap_last])
        eps.append(gap["kind"].value + ("+requantise" if gap["requantise"].value else ""))
    row["epilogues"] = eps
    return row


def _rows(path: str) -> list:
    """The rows of one module (runs in a worker): one per `.entry` with a body (or the one
    function with a body). Never raises: failures become `error`. Phases are found without
    the dataflow analysis (register names in straight-line code, which is where phases
    live; docs/phases.md), which keeps a corpus walk within seconds."""
    from ..ptx.errors import RRSpliceError
    base: dict = {"module": path, "entry": None, "lines": None, "mma": 0, "phases": 0,
            "geometry": [], "epilogues": [], "error": None}
    try:
        from ..infra.fsutil import read_input
        data = read_input(path, what="PTX file")
        base["lines"] = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        from ..ptx.parser import parse_bytes
        module = parse_bytes(data, path, path=path)
        entries = [f for f in module.functions if f.has_body and f.is_entry]
        if not entries:
            from ..ptx.select import select_function
            entries = [select_function(module, None)[0]]
        return [_entry_row(dict(base), fn) for fn in entries]
    except RRSpliceError as exc:
        base["error"] = " ".join(str(exc).split("\n")[:1])
    except (OSError, ValueError, KeyError, IndexError) as exc:
        base["error"] = f"{type(exc).__name__}: {exc}"
    return [base]


def _cached(path: Path) -> tuple:
    """(bytes, cache key) of the module; an unreadable one (a FIFO, a link to a device, past
    the input limit) raises InputError."""
    from ..infra.fsutil import read_input
    data = read_input(path, what="PTX file")
    key = f"{cache.module_key(data)}|{_KIND}"
    return data, key


def _error_row(path: str, message: str) -> list:
    return [{"module": path, "entry": None, "lines": None, "mma": 0, "phases": 0,
             "geometry": [], "epilogues": [], "error": message}]


def survey(paths: list, workers: int | None = None,
           progress: Callable[[int, int], None] | None = None) -> list:
    """Rows for `paths` (see the module doc); `progress(done, total)` after each module
    (total = modules)."""
    rows: dict = {}
    todo = []
    keys = {}
    from ..infra.fsutil import InputError
    for p in paths:
        try:
            data, key = _cached(Path(p))
        except InputError as exc:
            rows[str(p)] = _error_row(str(p), exc.message)
            continue
        keys[str(p)] = key
        hit = cache.peek_json("corpus", key)
        if hit is not None:
            for row in hit:
                row["module"] = str(p)
            rows[str(p)] = hit
        else:
            todo.append(str(p))
    total = len(paths)
    if progress:
        progress(len(rows), total)
    if todo:
        n = workers or min(len(todo), os.cpu_count() or 1)
        if n <= 1 or len(todo) == 1:
            for p in todo:
                rows[p] = _rows(p)
                if not any(r["error"] for r in rows[p]):
                    cache.store_json("corpus", keys[p], rows[p])
                if progress:
                    progress(len(rows), total)
        else:
            # largest first, so no big module starts last while the other worker idles
            todo.sort(key=lambda p: -Path(p).stat().st_size)
            from ..infra.workers import outcome, worker_pool
            with worker_pool(n) as pool:
                futs = {pool.submit(_rows, p): p for p in todo}
                for fut in as_completed(futs):
                    p = futs[fut]
                    rows[p] = outcome(fut, lambda why, p=p: _error_row(p, why))
                    if not any(r["error"] for r in rows[p]):
                        cache.store_json("corpus", keys[p], rows[p])
                    if progress:
                        progress(len(rows), total)
    return [row for p in paths for row in rows[str(p)]]
