"""An on-disk cache of parsed modules and function analyses.

Parsing a 37k-line module takes about half a second; loading its pickled model takes a
fraction of that. Entries are keyed by the SHA-256 of the file's bytes together with the
rrsplice version and a hash of every source file of the installed package (found by
walking it, not listed by hand), so editing the file or any part of the tool never serves a
stale entry.

Location: `platformdirs.user_cache_dir("rrsplice")`, or `$RRSPLICE_CACHE_DIR`.
`RRSPLICE_NO_CACHE=1` turns the cache off. Pickles are code, so the cache is only used
where nobody else can write: the directory is created 0700 and a directory or entry not
owned by the current user, or writable by group or others, is refused with one warning on
stderr (the command then runs without the cache). Every entry carries a SHA-256 of its
payload; a mismatch, a wrong shape or an unreadable entry is a miss: the value is computed
again and the entry rewritten atomically (temporary file + rename), so concurrent readers
only ever see whole files. Failure to write is silent: the cache is an optimisation, never a
requirement. The cache is bounded (`$RRSPLICE_CACHE_MAX_MB`, default 1024; a value that is
not a finite number >= 0 is warned about and the default used): past the limit the least
recently used entries are removed.

Every read, write and deletion goes through descriptors of the cache directory and its area
opened and checked (owner, mode) for that operation: the cache directory may be a symlink
only when the link is the current user's own, an area is never followed through a link,
and an entry that is a link is neither read nor written through. Eviction and `cache clear`
remove only files named like entries (a 64-digit hex key with the cache's suffix, or the
temporary file of one), never anything else that lies there, and `cache clear` refuses a
directory that is not trusted.
"""

from __future__ import annotations

import copyreg
import dataclasses
import errno
import gc
import hashlib
import io
import os
import pickle
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..ptx.diagnostic import Diagnostic, register_codes
from ..ptx.errors import RRSpliceError
from .fsutil import env_megabytes, replace_in_dir

if TYPE_CHECKING:
    from ..ptx.model import Function, Module

_FORMAT = 3
_PKG = Path(__file__).resolve().parents[1]
_MAGIC = b"rrsplice-cache 3\n"
AREAS = ("modules", "analysis", "reports", "facts", "corpus")
DEFAULT_MAX_MB = 1024

_code_hash: dict = {}
_keys: dict = {}          # id(module) -> (module, content key)
_loaded: dict = {}        # (cache dir, content key, path) -> Module: the same file loaded twice in one run
_LOADED_SIZE = 4          # each entry holds a whole module
_warned: set = set()
# what the cache itself writes: `<64 hex>.<suffix>`, and write_atomic's temporary files of those
ENTRY_NAME = re.compile(r"(?:[0-9a-f]{64}\.(?:pickle|json|seen)"
                        r"|\.[0-9a-f]{64}\.(?:pickle|json|seen)\.[0-9a-f]{12}\.tmp)\Z")


register_codes(__name__, "error", {
    "cache-untrusted": "the cache directory is not the user's own (a link, another owner, "
                       "writable by others): rrsplice runs without it, and `cache clear` "
                       "refuses"})


class CacheError(RRSpliceError):
    """The cache cannot be cleared safely (its directory is not the user's own)."""

    code = "cache-untrusted"

    def __init__(self, path, message: str):
        self.path = str(path)
        super().__init__(message, path=path)


def enabled() -> bool:
    return os.environ.get("RRSPLICE_NO_CACHE", "").strip() not in ("1", "true", "yes", "on")


def cache_dir() -> Path:
    env = os.environ.get("RRSPLICE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs
    return Path(platformdirs.user_cache_dir("rrsplice"))


def max_bytes() -> int:
    """The size the cache is kept under (`$RRSPLICE_CACHE_MAX_MB`, default 1024 MB)."""
    return int(env_megabytes("RRSPLICE_CACHE_MAX_MB", DEFAULT_MAX_MB) * 1024 * 1024)


# ------------------------------------------------------------------ trust

def untrusted_reason(st: os.stat_result) -> str | None:
    """Why a file or directory with this stat is not safe to load pickles from, or None."""
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by the current user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _warn(path: Path, why: str) -> None:
    key = (str(path), why)
    if key in _warned:
        return
    _warned.add(key)
    sys.stderr.write(Diagnostic("warning", "cache-untrusted", f"cache {why}; running without "
                                "the cache", str(path)).format() + "\n")


def _open_trusted(root: Path, sub: str | None = None, *, create: bool = False,
                  quiet: bool = False) -> int | None:
    """A descriptor of the cache directory `root` (or its area `sub`), checked for this use:
    `root` itself may be a symlink only when the link is the current user's; `sub` is never
    followed through a link; both must be directories that are the user's own and closed to
    group and others. None (with one warning unless `quiet`, or silently when missing)
    otherwise."""
    def refuse(d, why):
        if not quiet:
            _warn(d, why)
        return None
    try:
        if create:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        lst = os.lstat(root)
        if stat.S_ISLNK(lst.st_mode) and hasattr(os, "geteuid") and lst.st_uid != os.geteuid():
            return refuse(root, f"directory is a symlink owned by uid {lst.st_uid}, not by "
                          f"the current user (uid {os.geteuid()})")
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:
            return refuse(root, "directory is not a directory")
        return refuse(root, f"directory is not usable ({exc.strerror})")
    dirs = [(root, fd)]
    try:
        if sub is not None:
            d = root / sub
            try:
                if create:
                    try:
                        os.mkdir(sub, 0o700, dir_fd=fd)
                    except FileExistsError:
                        pass
                sfd = os.open(sub, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                              | getattr(os, "O_NOFOLLOW", 0), dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    return refuse(d, "directory is a symlink or not a directory")
                return refuse(d, f"directory is not usable ({exc.strerror})")
            dirs.append((d, sfd))
        for d, dfd in dirs:
            st = os.fstat(dfd)
            if not stat.S_ISDIR(st.st_mode):
                return refuse(d, "directory is not a directory")
            why = untrusted_reason(st)
            if why is not None:
                return refuse(d, f"directory is {why}")
        keep = dirs.pop()[1]
        return keep
    finally:
        for _d, dfd in dirs:
            os.close(dfd)


def _trusted_dir(sub: str | None = None, *, create: bool = True) -> Path | None:
    """The cache directory (or its `sub` area), created 0700, or None (with a warning)
    when it is someone else's or open to others."""
    root = cache_dir()
    fd = _open_trusted(root, sub, create=create)
    if fd is None:
        return None
    os.close(fd)
    return root if sub is None else root / sub


def _code_fingerprint(pkg: Path | None = None) -> str:
    """SHA-256 of every source file of the package (relative path and bytes), so any edit
    to the tool changes every key."""
    pkg = pkg or _PKG
    h = _code_hash.get(pkg)
    if h is None:
        d = hashlib.sha256()
        files = sorted(p for p in pkg.rglob("*")
                       if p.suffix in (".py", ".lark") and p.is_file()
                       and "__pycache__" not in p.parts)
        for p in files:
            rel = p.relative_to(pkg).as_posix().encode()
            body = p.read_bytes()
            d.update(b"%d:%s%d:" % (len(rel), rel, len(body)) + body)
        h = _code_hash[pkg] = d.hexdigest()[:24]
    return h


def module_key(data: bytes) -> str:
    """The cache key of a module's bytes under this rrsplice."""
    d = hashlib.sha256(data)
    d.update(f"|{__version__}|{_FORMAT}|{sys.version_info[:2]}|".encode())
    d.update(_code_fingerprint().encode())
    return d.hexdigest()


# ------------------------------------------------------------------ entries

def _seal(payload: bytes) -> bytes:
    return _MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def _open_entry(path: Path) -> bytes | None:
    """The verified payload of the entry at `path`, or None (missing, not ours, open to
    others, truncated, or its checksum does not match)."""
    dfd = _open_trusted(path.parent.parent, path.parent.name)
    if dfd is None:
        return None
    try:
        fd = os.open(path.name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), dir_fd=dfd)
    except OSError:
        return None
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        why = untrusted_reason(st)
        if why is not None:
            _warn(path, f"entry is {why}")
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            blob = f.read()
        head = len(_MAGIC) + 65
        if len(blob) < head or not blob.startswith(_MAGIC) or blob[head - 1:head] != b"\n":
            return None
        payload = blob[head:]
        if hashlib.sha256(payload).hexdigest().encode() != blob[len(_MAGIC):head - 1]:
            return None
        try:
            os.utime(fd)          # most recently used: the last to be evicted
        except OSError:
            pass
        return payload
    except OSError:
        return None
    finally:
        os.close(fd)


def _store(path: Path, payload: bytes) -> None:
    """Write a sealed entry, never through a link; a cache that cannot be written is
    skipped."""
    _put(path, _seal(payload))
    _evict()


def _put(path: Path, data: bytes) -> None:
    dfd = _open_trusted(path.parent.parent, path.parent.name, create=True)
    if dfd is None:
        return
    try:
        replace_in_dir(dfd, path.name, data)
    except Exception:  # noqa: BLE001 - the cache is never a requirement
        return
    finally:
        os.close(dfd)


def _entries(root: Path, *, quiet: bool = True) -> list:
    """(mtime, size, area, name) of every entry-named regular file in the areas of `root`
    that are trusted."""
    out = []
    for sub in AREAS:
        fd = _open_trusted(root, sub, quiet=quiet)
        if fd is None:
            continue
        try:
            with os.scandir(fd) as it:
                names = [e.name for e in it if ENTRY_NAME.match(e.name)]
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out.append((st.st_mtime, st.st_size, sub, name))
        except OSError:
            continue
        finally:
            os.close(fd)
    return out


def _unlink_entries(root: Path, victims) -> int:
    """Remove the (area, name) entries, each through a freshly checked area descriptor."""
    n = 0
    by_area: dict = {}
    for sub, name in victims:
        by_area.setdefault(sub, []).append(name)
    for sub, names in by_area.items():
        fd = _open_trusted(root, sub)
        if fd is None:
            continue
        try:
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and ENTRY_NAME.match(name):
                        os.unlink(name, dir_fd=fd)
                        n += 1
                except OSError:
                    pass
        finally:
            os.close(fd)
    return n


def _evict() -> int:
    """Remove the least recently used entries until the cache fits `max_bytes()`."""
    root = cache_dir()
    entries = _entries(root)
    total = sum(size for _t, size, _a, _n in entries)
    limit = max_bytes()
    victims = []
    for _t, size, sub, name in sorted(entries):
        if total <= limit:
            break
        victims.append((sub, name))
        total -= size
    return _unlink_entries(root, victims) if victims else 0


def info() -> dict:
    """Where the cache is, whether it is used, and what it holds per area."""
    root = cache_dir()
    trusted = None
    why = None
    if root.is_dir():
        try:
            why = untrusted_reason(os.stat(root))
        except OSError as exc:
            why = exc.strerror
        trusted = why is None
    areas = {}
    every = _entries(root)
    for sub in AREAS:
        es = [e for e in every if e[2] == sub]
        areas[sub] = {"entries": len(es), "bytes": sum(e[1] for e in es)}
    return {"directory": str(root), "enabled": enabled(), "exists": root.is_dir(),
            "trusted": trusted, "untrusted_reason": why,
            "entries": sum(a["entries"] for a in areas.values()),
            "bytes": sum(a["bytes"] for a in areas.values()),
            "max_bytes": max_bytes(), "areas": areas}


def _read(payload: bytes):
    was = gc.isenabled()
    gc.disable()          # unpickling thousands of objects: the collector only slows it
    try:
        return pickle.loads(payload)
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
    from ..ptx import model as _model
    table = copyreg.dispatch_table.copy()
    for name in ("Reg", "Negated", "Imm", "Symbol", "Vector", "Address", "PredPair",
                 "ParenList", "Sink", "Guard", "Element", "Offset"):
        cls = getattr(_model, name, None)
        if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
            continue
        fields = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        if len(fields) != len(dataclasses.fields(cls)):
            continue
        table[cls] = _reducer(cls, fields)
    return table


def _write(path: Path, obj) -> None:
    """Pickle `obj` into a sealed entry at `path`; a cache that cannot be written is
    skipped."""
    was = gc.isenabled()
    gc.disable()          # pickling builds a state tuple per object: nothing to collect
    try:
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.dispatch_table = _dispatch_table()
        pickler.dump(obj)
    except (pickle.PicklingError, RecursionError, TypeError, AttributeError):
        return
    finally:
        if was:
            gc.enable()
    _store(path, buf.getvalue())


def _load_pickle(entry: Path, accept: Callable) -> Any:
    """The object in the entry when it verifies and `accept(obj)`; else None."""
    payload = _open_entry(entry)
    if payload is None:
        return None
    try:
        obj = _read(payload)
        return obj if accept(obj) else None
    except Exception:  # noqa: BLE001 - any broken entry is just a miss
        return None


# Storing a module costs more than parsing it once (pickling a 650k-line model takes
# longer than its parse and ~110 MB more memory), and is only repaid when the same content
# is parsed again. A module above this size is therefore stored the second time it is
# parsed (an empty `.seen` marker records the first), so one cold query on a huge module
# does not pay for a cache it may never use.
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
    _put(seen, b"")


def _remember_key(module: Module, key: str) -> None:
    _keys[id(module)] = (module, key)
    while len(_keys) > 4:          # each entry holds a whole module
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
    from ..ptx.model import Module
    from ..ptx.parser import parse_bytes
    from .fsutil import read_input
    path = os.fspath(path)
    data = read_input(path, what="PTX file")
    area = _trusted_dir("modules") if enabled() else None
    if area is None:
        return parse_bytes(data, path, path=path)
    key = module_key(data)
    memo_key = (str(area), key, path)
    hit = _loaded.pop(memo_key, None)
    if hit is not None:
        _loaded[memo_key] = hit
        return hit
    entry = area / f"{key}.pickle"
    module = _load_pickle(entry, lambda o: isinstance(o, Module) and o.data == data)
    if module is None:
        module = parse_bytes(data, path, path=path)
        _store_module(entry, module)
    module.path = path
    _remember_key(module, key)
    _remember_loaded(memo_key, module)
    return module


def forget_loaded() -> None:
    """Drop the models this process holds, so the next `load_module` reads the cache."""
    _loaded.clear()


def _remember_loaded(memo_key: tuple, module: Module) -> None:
    """Keep the last few models so that one run (a hook applying a family, `apply --all`,
    several checks of one kernel) parses or unpickles each file once, and its functions keep
    their in-process analyses (`dataflow.analyze` memoises per Function object). The model
    is never modified after parsing, so sharing it is safe; the key is the content's hash,
    so an edited file is a new entry."""
    _loaded[memo_key] = module
    while len(_loaded) > _LOADED_SIZE:
        _loaded.pop(next(iter(_loaded)))


def load_analysis(module: Module, fn: Function):
    """`rrsplice.analysis.dataflow.analyze(fn)`, stored next to the module's cache entry so a
    repeated query skips def/use, CFG and the liveness fixed point as well."""
    from ..analysis.dataflow import FunctionAnalysis, analyze, memoised, remember
    area = _trusted_dir("analysis") if enabled() else None
    if area is None or memoised(fn) is not None:
        return analyze(fn)
    try:
        index = module.functions.index(fn)
    except ValueError:
        return analyze(fn)
    key = _key_of(module)
    akey = hashlib.sha256(f"{key}|{index}|{fn.name}|{len(fn.statements)}".encode()).hexdigest()
    entry = area / f"{akey}.pickle"
    fa = _load_pickle(entry, lambda o: (isinstance(o, FunctionAnalysis)
                                        and len(o.du) == len(fn.statements)
                                        and len(o.cfg.block_of) == len(fn.statements) + 1))
    if fa is not None:
        remember(fn, fa)
        return fa
    fa = analyze(fn)
    _write(entry, fa)
    return fa


def remember_json(area: str, key: str, compute, accept: Callable = lambda v: True):
    """`compute()` (JSON data) remembered under `<cache>/<area>/`, keyed by `key` and the
    package's code, so an edited input or tool never serves a stale answer; an entry that
    does not verify, or whose value `accept` rejects, is a miss, and a cache that cannot be
    written is skipped."""
    entry = _json_entry(area, key)
    if entry is None:
        return compute()
    hit = _read_json_entry(entry, accept)
    if hit is not None:
        return hit[0]
    result = compute()
    _write_json_entry(entry, result)
    return result


def _json_entry(area: str, key: str) -> Path | None:
    """Where the JSON entry for (area, key) lives under the current code, or None when the
    cache is off or its directory is not trusted."""
    d = _trusted_dir(area) if enabled() else None
    if d is None:
        return None
    digest = hashlib.sha256(f"{key}|{_code_fingerprint()}".encode()).hexdigest()
    return d / f"{digest}.json"


def _read_json_entry(entry: Path, accept: Callable = lambda v: True):
    """(value,) when `entry` verifies and `accept`s its value, else None (a miss)."""
    import json
    payload = _open_entry(entry)
    if payload is None:
        return None
    try:
        box = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if isinstance(box, dict) and set(box) == {"value"} and accept(box["value"]):
        return (box["value"],)
    return None


def _write_json_entry(entry: Path, value) -> None:
    import json
    try:
        payload = json.dumps({"value": value}, sort_keys=True).encode("utf-8")
    except (TypeError, ValueError, RecursionError):
        return
    _store(entry, payload)


def peek_json(area: str, key: str, accept: Callable = lambda v: True):
    """What `remember_json` would serve for (area, key), or None on a miss (so a caller can
    decide where to compute the misses, e.g. in worker processes)."""
    entry = _json_entry(area, key)
    hit = _read_json_entry(entry, accept) if entry is not None else None
    return None if hit is None else hit[0]


def store_json(area: str, key: str, value) -> None:
    """Remember `value` for `peek_json`/`remember_json`; silently skipped when it cannot."""
    entry = _json_entry(area, key)
    if entry is not None:
        _write_json_entry(entry, value)


def load_report(kind: str, data: bytes, query: dict, compute) -> dict:
    """A command's result for (module bytes, query): see `remember_json`."""
    import json
    key = f"{module_key(data)}|{kind}|{json.dumps(query, sort_keys=True)}"
    return remember_json("reports", key, compute, accept=lambda v: isinstance(v, dict))


def remember_module_fact(module: Module, what: str, compute):
    """A JSON fact about a parsed module (e.g. its phase list), remembered like a report."""
    return remember_json("facts", f"{_key_of(module)}|{what}", compute)


def clear() -> int:
    """Delete every cache entry (and stray temporary files); returns how many files were
    removed. Only files named like entries are touched, never other files in the
    directory, and a cache directory that is not the user's own (or open to others) is
    refused with a CacheError rather than emptied."""
    forget_loaded()
    root = cache_dir()
    fd = _open_trusted(root, quiet=True)
    if fd is None:
        if not os.path.lexists(root):
            return 0
        try:
            lst = os.lstat(root)
            st = os.stat(root)
        except OSError as exc:
            raise CacheError(root, f"cannot clear the cache: {exc.strerror}") from None
        if stat.S_ISLNK(lst.st_mode) and lst.st_uid != os.geteuid():
            why = f"a symlink owned by uid {lst.st_uid}"
        else:
            why = untrusted_reason(st) or "not a directory"
        raise CacheError(root, f"refusing to clear a cache directory that is {why}; "
                         "nothing removed")
    os.close(fd)
    return _unlink_entries(root, [(sub, name) for _t, _s, sub, name in _entries(root)])


def entry_path(path) -> Path | None:
    """Where the module cache entry for the file at `path` lives (None when disabled)."""
    if not enabled():
        return None
    from .fsutil import read_input
    return cache_dir() / "modules" / f"{module_key(read_input(path))}.pickle"
