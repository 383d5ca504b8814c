"""Writing files so that a reader never sees a half-written one, and reading inputs so
that a hostile path (FIFO, device, symlink loop, over-long name) is a clear error.

An output is written to a temporary file beside it and renamed into place, except where a
rename would be wrong: a symlink is written through (its target is replaced, the link
stays), a character device or FIFO (``-o /dev/null``) is written to directly, and any other
non-regular file is refused. A new file gets the usual umask-derived mode; a replaced file
keeps its mode. An output that is one of the command's own inputs is refused, and every
error names the target, never the temporary file.

An output the user did not name (a default path, or a file written beside the named one,
``implicit=True``) is held to more: it is never written through a symlink, and its
directory must belong to the current user and be closed to others, so nobody else can
direct the write. A file written beside a named output (``no_link=True``: `rr_mma.h` next
to `body new -o`) is never written through a symlink either, in the directory the user
chose. The temporary file is created and renamed through a descriptor of the
directory opened once, and is removed when the process is stopped by SIGTERM or SIGINT.

Inputs are read up to ``$RRSPLICE_MAX_INPUT_MB`` (default 256 MB): a larger file, or one
that never ends (``/proc/self/pagemap``), is a clear error instead of exhausting memory.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Iterable
from pathlib import Path

from ..ptx.diagnostic import Diagnostic, register_codes
from ..ptx.errors import RRSpliceError

register_codes(__name__, "error", {
    "cannot-read": "an input cannot be read (permissions, an I/O error, a bad path)",
    "cannot-write": "an output cannot be written there",
    "no-such-file": "an input does not exist",
    "not-a-file": "an input is a directory, FIFO, socket or device, not a regular file",
    "symlink-loop": "an input's path is a symlink loop",
    "name-too-long": "an input's file name is longer than the system allows",
    "input-too-large": "an input is larger than the input limit (`RRSPLICE_MAX_INPUT_MB`)",
    "output-is-input": "an output would overwrite one of the inputs",
    "output-is-link": "an output not named on the command line is, or lies under, a symlink",
    "untrusted-directory": "an output not named on the command line would go into a "
                           "directory other users can write to",
    "bad-environment": "a size limit in the environment (`RRSPLICE_*_MB`) is not a number "
                       "of megabytes >= 0; the default is used (warning)",
})


class _PathError(RRSpliceError):
    def __init__(self, path, message: str, code: str):
        self.path = str(path)
        self.message = message
        super().__init__(message, path=path, code=code)

    def to_json(self) -> dict:
        return {"file": self.path, "message": self.message, "code": self.code}


class WriteError(_PathError):
    """An output could not be written (or would destroy an input); names the target."""

    def __init__(self, path, message: str, code: str = "cannot-write"):
        super().__init__(path, message, code)


class InputError(_PathError):
    """An input path cannot be read as a file (missing, a FIFO, a directory, a loop...)."""

    def __init__(self, path, message: str, code: str = "cannot-read"):
        super().__init__(path, message, code)


def same_file(a, b) -> bool:
    """Whether paths `a` and `b` name one file (through symlinks and hard links)."""
    try:
        if Path(a).resolve() == Path(b).resolve():
            return True
        return os.path.samefile(a, b)
    except (OSError, RuntimeError, ValueError):
        return False


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


DEFAULT_MAX_INPUT_MB = 256
_env_warned: set = set()


def env_megabytes(name: str, default: float) -> float:
    """`$name` as a number of megabytes: `default` when unset, and (with one warning on
    stderr) when it is not a finite number >= 0, e.g. `nan`, `inf`, `-1` or `1e400`."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        mb = float(raw)
    except ValueError:
        mb = math.nan
    if math.isfinite(mb) and mb >= 0 and mb * 1024 * 1024 < 2 ** 62:
        return mb
    if name not in _env_warned:
        _env_warned.add(name)
        sys.stderr.write(Diagnostic("warning", "bad-environment", f"{name}={raw!r} is not a "
                                    f"finite number of megabytes >= 0; using {default:g}"
                                    ).format() + "\n")
    return default


def max_input_bytes() -> int:
    """The largest input read (`$RRSPLICE_MAX_INPUT_MB`, default 256 MB)."""
    return int(env_megabytes("RRSPLICE_MAX_INPUT_MB", DEFAULT_MAX_INPUT_MB) * 1024 * 1024)


def read_input(path, *, what: str = "file") -> bytes:
    """The bytes of the regular file at `path`, or an InputError saying why not: no such
    file, a directory, a FIFO or device (never opened, so a FIFO with no writer cannot
    hang), a symlink loop, a name too long, or larger than `max_input_bytes()` (checked
    while reading, so a file that never ends is refused too)."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(p, f"symlink loop; cannot read this {what}", code="symlink-loop") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(p[:200] + "...", "file name too long", code="name-too-long") from None
        if exc.errno == errno.ENOENT:
            raise InputError(p, f"no such {what}", code="no-such-file") from None
        raise InputError(p, f"cannot read: {_reason(exc)}") from None
    except ValueError as exc:               # an embedded NUL in the name
        raise InputError(repr(p), f"not a valid path: {exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(p, f"is a directory, expected a {what}", code="not-a-file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(p, f"not a regular file (a FIFO, socket or device); expected a {what}",
                         code="not-a-file")
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(p, f"cannot read: {_reason(exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):   # swapped since the stat
            raise InputError(p, "not a regular file", code="not-a-file")
        limit = max_input_bytes()
        chunks = []
        got = 0
        while True:
            b = os.read(fd, 1 << 20)     # whole chunks: /proc files refuse odd sizes
            if not b:
                break
            chunks.append(b)
            got += len(b)
            if got > limit:
                raise InputError(p, f"larger than the input limit of {limit // (1024 * 1024)} MB "
                                 f"(RRSPLICE_MAX_INPUT_MB); not read", code="input-too-large")
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(p, f"cannot read: {_reason(exc)}") from None
    finally:
        os.close(fd)


def _write_through(path: str, data: bytes, mode: int) -> None:
    """Write to a character device or FIFO in place (no rename over it)."""
    flags = os.O_WRONLY
    if stat.S_ISFIFO(mode):
        flags |= os.O_NONBLOCK          # no reader: ENXIO now, instead of hanging
    fd = os.open(path, flags)
    try:
        if stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
    finally:
        os.close(fd)


def check_output(path, *, protect: Iterable = (), implicit: bool = False,
                 no_link: bool = False) -> None:
    """The checks `write_atomic` makes before writing (the output is not an input; an
    implicit output is not a symlink), for a command writing several files to make for all
    of them before it writes any."""
    shown = os.fspath(path)
    for inp in protect:
        if inp is not None and same_file(inp, path):
            raise WriteError(shown, f"refusing to write over the input {inp}; choose another "
                             "output", code="output-is-input")
    try:
        link = (implicit or no_link) and os.path.islink(shown)
    except ValueError:
        link = False
    if link:
        raise WriteError(shown, "is a symlink, and this output was not named on the command "
                         "line; refusing to write through it (name it with -o to write "
                         "there)", code="output-is-link")


def write_atomic(path, data: bytes, *, fsync: bool = True, protect: Iterable = (),
                 implicit: bool = False, no_link: bool = False) -> None:
    """Write `data` to a temporary file in the same directory, then os.replace it over
    `path`: the file is either the old one or the complete new one, never a torn write.
    `fsync=False` skips the flush to disk for caches, which may be lost but never torn.
    `protect`: the command's inputs, which `path` must not name. `implicit`: the user did
    not name `path` (see the module doc): no symlink, no directory of someone else's.
    `no_link`: no symlink only."""
    shown = os.fspath(path)
    check_output(path, protect=protect, implicit=implicit, no_link=no_link)
    no_link = no_link or implicit
    try:
        target = Path(os.path.realpath(shown)) if os.path.islink(shown) else Path(shown)
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            if no_link:
                raise WriteError(shown, "cannot write the output here: not a regular file")
            if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
                _write_through(str(target), data, st.st_mode)
                return
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise WriteError(shown, f"cannot write the output here: {kind}")
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, data, fsync, None if st is None else stat.S_IMODE(st.st_mode),
                 implicit, shown, no_link)
    except WriteError:
        raise
    except (OSError, RuntimeError, ValueError) as exc:
        why = _reason(exc) if isinstance(exc, OSError) else str(exc)
        raise WriteError(shown, f"cannot write: {why}") from None


def untrusted_dir_reason(st: os.stat_result) -> str | None:
    """Why a directory with this stat lets someone else direct a write into it, or None."""
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by the current user (uid {os.geteuid()})"
    if st.st_mode & 0o002:
        return f"writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def open_dir(path, *, follow: bool = True) -> int:
    """A descriptor of the directory `path` (its last component not followed when it is a
    symlink and `follow` is False: ELOOP/ENOTDIR then)."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags)


# Temporary files being written, as (directory fd, name): removed if the process is told
# to stop (SIGTERM) before they are renamed into place (SIGINT raises KeyboardInterrupt,
# which the writer's own cleanup handles).
_pending: dict = {}
_handlers_installed = False


_stop_hooks: list = []      # callables run on SIGTERM before the process stops


def _on_stop(signum, frame) -> None:
    """Remove the temporary files being written, run the stop hooks (e.g. stopping worker
    processes), then die of the signal as if no handler were installed."""
    for key in list(_pending):
        dfd, name = key
        try:
            os.unlink(name, dir_fd=dfd)
        except OSError:
            pass
        _pending.pop(key, None)
    for hook in list(_stop_hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001 - stopping must go on
            pass
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def install_stop_handler() -> None:
    """Handle SIGTERM as above; only from the main thread, and only over the default
    action (a caller's own handler is left alone)."""
    global _handlers_installed
    if _handlers_installed or threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_stop)
            _handlers_installed = True
    except (ValueError, OSError, AttributeError):
        pass


def _replace(target: Path, data: bytes, fsync: bool, keep_mode, implicit: bool = False,
             shown: str = "", no_link: bool = False) -> None:
    install_stop_handler()
    try:
        dfd = open_dir(target.parent, follow=not implicit)
    except OSError as exc:
        if implicit and exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise WriteError(shown or target, f"its directory {target.parent} is a symlink, "
                             "and this output was not named on the command line; refusing "
                             "to write there (name it with -o)", code="output-is-link") from None
        raise
    try:
        if implicit:
            why = untrusted_dir_reason(os.fstat(dfd))
            if why is not None:
                raise WriteError(shown or target, f"its directory {target.parent} is {why}; "
                                 "refusing to write an output that was not named on the "
                                 "command line there (name it with -o)", code="untrusted-directory")
        _replace_at(dfd, target.name, data, fsync, keep_mode, implicit or no_link)
    finally:
        os.close(dfd)


def replace_in_dir(dfd: int, name: str, data: bytes, *, fsync: bool = False) -> None:
    """Atomically write `data` as `name` in the directory open as `dfd` (a temporary file
    there, then a rename); an existing `name` that is not a regular file (a symlink
    included) is refused, never written through."""
    _replace_at(dfd, name, data, fsync, None, True)


def _replace_at(dfd: int, name: str, data: bytes, fsync: bool, keep_mode,
                implicit: bool) -> None:
    if implicit:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EEXIST, "replaced by something other than a regular file")
    for _ in range(100):
        tmp = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            # 0o666 before the umask, as any newly created file gets
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                         0o666, dir_fd=dfd)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(errno.EEXIST, "no free temporary name")
    key = (dfd, tmp)
    _pending[key] = True
    try:
        with os.fdopen(fd, "wb") as f:
            if keep_mode is not None:
                os.fchmod(f.fileno(), keep_mode)
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        _pending.pop(key, None)
    except BaseException:
        _pending.pop(key, None)
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise


@contextlib.contextmanager
def locked(path):
    """Hold an exclusive lock on the file at `path` (fcntl.flock) for a read-modify-write,
    so concurrent editors of one file take turns instead of losing each other's edits. The
    file is replaced by rename when written, so after the lock is granted the path is
    checked to still name the locked file (else the new file is locked instead)."""
    import fcntl
    p = os.fspath(path)
    while True:
        try:
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise InputError(p, f"cannot lock: {_reason(exc)}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = os.stat(p)
            mine = os.fstat(fd)
        except OSError:
            os.close(fd)
            raise
        if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
            break
        os.close(fd)            # replaced while we waited: lock the file there now
    try:
        yield
    finally:
        os.close(fd)
