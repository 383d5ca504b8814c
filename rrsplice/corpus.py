"""A corpus in one command: every module's entry, size, mma, phases and epilogues, in parallel.

`survey(paths, workers, progress)` analyses each `.ptx` in a worker process (parse, pick the
entry, phases, epilogue kind of every gap) and returns one row per module, in path order.
A module that cannot be analysed gets a row with `error` (the parse error's file:line:col
message, or what else failed) instead of aborting the walk. Rows are remembered in the
cache keyed by the module's bytes, so a second survey of an unchanged corpus reads them
without starting any worker.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Optional

from . import cache

_SOURCES = ("parser.py", "model.py", "lexicon.py", "operands.py", "semantics.py", "mma.py",
            "select.py", "descriptor.py", "corpus.py")
_KIND = "corpus-row/1"


def modules_of(root) -> list:
    """Every `.ptx` under `root` (a directory, recursively) or `root` itself, sorted."""
    root = Path(root)
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.ptx") if p.is_file())


def _row(path: str) -> dict:
    """One module's row (runs in a worker). Never raises: failures become `error`. Phases
    are found without the dataflow analysis (register names in straight-line code, which
    is where phases live; docs/phases.md), which keeps a corpus walk within seconds."""
    from .errors import RRSpliceError
    row = {"module": path, "entry": None, "lines": None, "mma": 0, "phases": 0,
           "geometry": [], "epilogues": [], "error": None}
    try:
        data = Path(path).read_bytes()
        row["lines"] = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        from .parser import parse_bytes
        from .select import select_function
        module = parse_bytes(data, path, path=path)
        fn, _why = select_function(module, None)
        row["entry"] = fn.name
        from .descriptor import classify_gap
        from .mma import phases
        ps = phases(fn)
        row["mma"] = sum(len(p.mmas) for p in ps)
        row["phases"] = len(ps)
        row["geometry"] = [f"{p.geometry} {p.shape}" for p in ps]
        eps = []
        for p, nxt in zip(ps, ps[1:]):
            gap = classify_gap(fn.statements[p.gap_first - 1:p.gap_last])
            kind = gap["kind"].value + ("+requantise" if gap["requantise"].value else "")
            eps.append(kind)
        row["epilogues"] = eps
    except RRSpliceError as exc:
        row["error"] = " ".join(str(exc).split("\n")[:1])
    except (OSError, ValueError, KeyError, IndexError) as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def _cached(path: Path) -> tuple:
    data = path.read_bytes()
    key = f"{cache.module_key(data)}|{_KIND}"
    return data, key


def survey(paths: list, workers: Optional[int] = None,
           progress: Optional[Callable[[int, int], None]] = None) -> list:
    """Rows for `paths` (see the module doc); `progress(done, total)` after each module."""
    rows: dict = {}
    todo = []
    keys = {}
    for p in paths:
        data, key = _cached(Path(p))
        keys[str(p)] = key
        hit = cache.peek_json("corpus", key, _SOURCES)
        if hit is not None:
            hit["module"] = str(p)
            rows[str(p)] = hit
        else:
            todo.append(str(p))
    total = len(paths)
    if progress:
        progress(len(rows), total)
    if todo:
        n = workers or min(len(todo), os.cpu_count() or 1)
        if n <= 1 or len(todo) == 1:
            results = ((p, _row(p)) for p in todo)
            for p, row in results:
                rows[p] = row
                if row["error"] is None:
                    cache.store_json("corpus", keys[p], _SOURCES, row)
                if progress:
                    progress(len(rows), total)
        else:
            # largest first, so no big module starts last while the other worker idles
            todo.sort(key=lambda p: -Path(p).stat().st_size)
            with ProcessPoolExecutor(max_workers=n) as pool:
                futs = {pool.submit(_row, p): p for p in todo}
                for fut in as_completed(futs):
                    p = futs[fut]
                    rows[p] = fut.result()
                    if rows[p]["error"] is None:
                        cache.store_json("corpus", keys[p], _SOURCES, rows[p])
                    if progress:
                        progress(len(rows), total)
    return [rows[str(p)] for p in paths]
