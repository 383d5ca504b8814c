"""An on-disk cache of parsed modules and function analyses.

Parsing a 37k-line module takes about half a second; loading its pickled model takes a
fraction of that. Entries are keyed by the SHA-256 of the file's bytes together with the
rrsplice version and a hash of the sources that shape the cached objects (the grammar, the
parser and the model for modules; also the semantics table, CFG and dataflow code for
analyses), so editing the file or the tool never serves a stale entry.

Location: `platformdirs.user_cache_dir("rrsplice")`, or `$RRSPLICE_CACHE_DIR`.
`RRSPLICE_NO_CACHE=1` turns the cache off. Any failure to read an entry (truncated,
corrupted, written by another version, not the right object) is treated as a miss: the
module is parsed again and the entry rewritten atomically (temporary file + rename), so
concurrent readers only ever see whole files. Failure to write is silent: the cache is an
optimisation, never a requirement.
"""

from __future__ import annotations

import copyreg
import dataclasses
import gc
import hashlib
import io
import os
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from . import __version__
from .fsutil import write_atomic

if TYPE_CHECKING:
    from .model import Function, Module

_FORMAT = 2
_PKG = Path(__file__).resolve().parent
_MODEL_SOURCES = ("grammar/ptx.lark", "lexicon.py", "parser.py", "operands.py", "model.py")
_ANALYSIS_SOURCES = ("semantics.py", "cfg.py", "dataflow.py")

_source_hashes: dict = {}
_keys: dict = {}          # id(module) -> (module, content key)


def enabled() -> bool:
    return os.environ.get("RRSPLICE_NO_CACHE", "").strip() not in ("1", "true", "yes", "on")


def cache_dir() -> Path:
    env = os.environ.get("RRSPLICE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs
    return Path(platformdirs.user_cache_dir("rrsplice"))


def _sources_hash(names: tuple) -> str:
    h = _source_hashes.get(names)
    if h is None:
        d = hashlib.sha256()
        for n in names:
            try:
                d.update((_PKG / n).read_bytes())
            except OSError:
                d.update(b"?" + n.encode())
        h = _source_hashes[names] = d.hexdigest()[:16]
    return h


def module_key(data: bytes) -> str:
    """The cache key of a module's bytes under this rrsplice."""
    d = hashlib.sha256(data)
    d.update(f"|{__version__}|{_FORMAT}|{sys.version_info[:2]}|".encode())
    d.update(_sources_hash(_MODEL_SOURCES).encode())
    return d.hexdigest()


def _read(path: Path):
    was = gc.isenabled()
    gc.disable()          # unpickling thousands of objects: the collector only slows it
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    finally:
        if was:
            gc.enable()


def _reducer(cls, names: tuple):
    def reduce(obj):
        return cls, tuple(getattr(obj, n) for n in names)
    return reduce


def _dispatch_table() -> dict:
    """Faster-to-load reductions for the many small operand objects: each is rebuilt by
    calling its class with its field values, instead of pickle's default for frozen
    slotted dataclasses (a Python-level __setstate__ per object). Statements keep the
    default, which pickle restores in C."""
    from . import model as _model
    table = copyreg.dispatch_table.copy()
    for name in ("Reg", "Negated", "Imm", "Symbol", "Vector", "Address", "PredPair",
                 "ParenList", "Sink", "Guard", "Element", "Offset"):
        cls = getattr(_model, name, None)
        if cls is None or not dataclasses.is_dataclass(cls):
            continue
        fields = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        if len(fields) != len(dataclasses.fields(cls)):
            continue
        table[cls] = _reducer(cls, fields)
    return table


def _write(path: Path, obj) -> None:
    """Pickle `obj` to `path` atomically; a cache that cannot be written is skipped."""
    was = gc.isenabled()
    gc.disable()          # pickling builds a state tuple per object: nothing to collect
    try:
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = _dispatch_table()
        pickler.dump(obj)
        write_atomic(path, buf.getvalue(), fsync=False)
    except (OSError, pickle.PicklingError, RecursionError, TypeError):
        pass
    finally:
        if was:
            gc.enable()


# Storing a module costs more than parsing it once (pickling a 650k-line model takes
# longer than its parse and ~110 MB more memory), and is only repaid when the same content
# is parsed again. A module above this size is therefore stored the second time it is
# parsed (a `.seen` marker records the first), so one cold query on a huge module does not
# pay for a cache it may never use.
STORE_AT_ONCE_LINES = 100_000


def _store_module(entry: Path, module: Module) -> None:
    if module.line_count <= STORE_AT_ONCE_LINES:
        _write(entry, module)
        return
    seen = entry.with_suffix(".seen")
    if seen.is_file():
        _write(entry, module)
        try:
            seen.unlink()
        except OSError:
            pass
        return
    try:
        write_atomic(seen, b"", fsync=False)
    except OSError:
        pass


def _remember_key(module: Module, key: str) -> None:
    _keys[id(module)] = (module, key)
    while len(_keys) > 32:
        _keys.pop(next(iter(_keys)))


def _key_of(module: Module) -> str:
    hit = _keys.get(id(module))
    if hit is not None and hit[0] is module:
        return hit[1]
    key = module_key(module.data)
    _remember_key(module, key)
    return key


def load_module(path) -> Module:
    """The parsed model of the PTX file at `path`, from the cache when it holds this exact
    content, else parsed (and then stored)."""
    from .parser import parse_bytes
    path = os.fspath(path)
    data = Path(path).read_bytes()
    if not enabled():
        return parse_bytes(data, path, path=path)
    key = module_key(data)
    entry = cache_dir() / "modules" / f"{key}.pickle"
    module = None
    if entry.is_file():
        try:
            obj = _read(entry)
            from .model import Module
            if isinstance(obj, Module) and obj.data == data:
                module = obj
        except Exception:  # noqa: BLE001 - any broken entry is just a miss
            module = None
    if module is None:
        module = parse_bytes(data, path, path=path)
        _store_module(entry, module)
    module.path = path
    _remember_key(module, key)
    return module


def load_analysis(module: Module, fn: Function):
    """`rrsplice.dataflow.analyze(fn)`, stored next to the module's cache entry so a
    repeated query skips def/use, CFG and the liveness fixed point as well."""
    from .dataflow import FunctionAnalysis, analyze, remember
    if not enabled():
        return analyze(fn)
    try:
        index = module.functions.index(fn)
    except ValueError:
        return analyze(fn)
    key = _key_of(module)
    akey = hashlib.sha256(f"{key}|{index}|{fn.name}|{len(fn.statements)}|"
                          f"{_sources_hash(_ANALYSIS_SOURCES)}".encode()).hexdigest()
    entry = cache_dir() / "analysis" / f"{akey}.pickle"
    if entry.is_file():
        try:
            fa = _read(entry)
            if (isinstance(fa, FunctionAnalysis) and len(fa.du) == len(fn.statements)
                    and len(fa.cfg.block_of) == len(fn.statements) + 1):
                remember(fn, fa)
                return fa
        except Exception:  # noqa: BLE001
            pass
    fa = analyze(fn)
    _write(entry, fa)
    return fa


_REPORT_SOURCES = ("semantics.py", "cfg.py", "dataflow.py", "provenance.py", "mma.py",
                   "select.py", "cli/cmd_liveness.py")


def remember_json(area: str, key: str, sources: tuple, compute):
    """`compute()` (JSON data) remembered under `<cache>/<area>/`, keyed by `key` and the
    hash of the rrsplice `sources` that compute it, so an edited input or tool never serves
    a stale answer; a broken or unreadable entry is a miss, and a cache that cannot be
    written is skipped."""
    if not enabled():
        return compute()
    import json
    digest = hashlib.sha256(f"{key}|{_sources_hash(sources)}".encode()).hexdigest()
    entry = cache_dir() / area / f"{digest}.json"
    try:
        return json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    result = compute()
    try:
        write_atomic(entry, json.dumps(result, sort_keys=True).encode("utf-8"), fsync=False)
    except (OSError, TypeError, ValueError):
        pass
    return result


def load_report(kind: str, data: bytes, query: dict, compute) -> dict:
    """A command's result for (module bytes, query): see `remember_json`."""
    import json
    key = f"{module_key(data)}|{kind}|{json.dumps(query, sort_keys=True)}"
    return remember_json("reports", key, _REPORT_SOURCES, compute)


def remember_module_fact(module: "Module", what: str, sources: tuple, compute):
    """A JSON fact about a parsed module (e.g. its phase list), remembered like a report."""
    return remember_json("facts", f"{_key_of(module)}|{what}", sources, compute)


def clear() -> int:
    """Delete every cache entry; returns how many files were removed."""
    n = 0
    root = cache_dir()
    for sub in ("modules", "analysis", "reports", "facts"):
        d = root / sub
        if d.is_dir():
            for p in d.iterdir():
                if p.suffix in (".pickle", ".seen", ".tmp") or p.name.endswith(".tmp"):
                    try:
                        p.unlink()
                        n += 1
                    except OSError:
                        pass
    return n


def entry_path(path) -> Optional[Path]:
    """Where the module cache entry for the file at `path` lives (None when disabled)."""
    if not enabled():
        return None
    return cache_dir() / "modules" / f"{module_key(Path(path).read_bytes())}.pickle"
