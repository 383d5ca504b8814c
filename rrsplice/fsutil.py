"""Writing files so that a reader never sees a half-written one, and reading inputs so
that a hostile path (FIFO, device, symlink loop, over-long name) is a clear error.

An output is written to a temporary file beside it and renamed into place, except where a
rename would be wrong: a symlink is written through (its target is replaced, the link
stays), a character device or FIFO (``-o /dev/null``) is written to directly, and any other
non-regular file is refused. A new file gets the usual umask-derived mode; a replaced file
keeps its mode. An output that is one of the command's own inputs is refused, and every
error names the target, never the temporary file.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Iterable

from .errors import RRSpliceError


class _PathError(RRSpliceError):
    def __init__(self, path, message: str, code: str):
        self.path = str(path)
        self.message = message
        self.code = code
        super().__init__(f"{self.path}: {message}")

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


def read_input(path, *, what: str = "file") -> bytes:
    """The bytes of the regular file at `path`, or an InputError saying why not: no such
    file, a directory, a FIFO or device (never opened, so a FIFO with no writer cannot
    hang), a symlink loop, a name too long."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(p, f"symlink loop; cannot read this {what}", "symlink-loop") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise InputError(p[:200] + "...", "file name too long", "name-too-long") from None
        if exc.errno == errno.ENOENT:
            raise InputError(p, f"no such {what}", "no-such-file") from None
        raise InputError(p, f"cannot read: {_reason(exc)}") from None
    except ValueError as exc:               # an embedded NUL in the name
        raise InputError(repr(p), f"not a valid path: {exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(p, f"is a directory, expected a {what}", "not-a-file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(p, f"not a regular file (a FIFO, socket or device); expected a {what}",
                         "not-a-file")
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(p, f"cannot read: {_reason(exc)}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):   # swapped since the stat
            raise InputError(p, "not a regular file", "not-a-file")
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            chunks.append(b)
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


def write_atomic(path, data: bytes, *, fsync: bool = True, protect: Iterable = ()) -> None:
    """Write `data` to a temporary file in the same directory, then os.replace it over
    `path`: the file is either the old one or the complete new one, never a torn write.
    `fsync=False` skips the flush to disk for caches, which may be lost but never torn.
    `protect`: the command's inputs, which `path` must not name."""
    shown = os.fspath(path)
    for inp in protect:
        if inp is not None and same_file(inp, path):
            raise WriteError(shown, f"refusing to write over the input {inp}; choose another "
                             "output", "output-is-input")
    try:
        target = Path(os.path.realpath(shown)) if os.path.islink(shown) else Path(shown)
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
                _write_through(str(target), data, st.st_mode)
                return
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise WriteError(shown, f"cannot write the output here: {kind}")
        target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, data, fsync, None if st is None else stat.S_IMODE(st.st_mode))
    except WriteError:
        raise
    except (OSError, RuntimeError, ValueError) as exc:
        why = _reason(exc) if isinstance(exc, OSError) else str(exc)
        raise WriteError(shown, f"cannot write: {why}") from None


def _replace(target: Path, data: bytes, fsync: bool, keep_mode) -> None:
    for _ in range(100):
        tmp = target.parent / f".{target.name[:200]}.{secrets.token_hex(6)}.tmp"
        try:
            # 0o666 before the umask, as any newly created file gets
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                         0o666)
            break
        except FileExistsError:
            continue
    else:
        raise OSError(errno.EEXIST, "no free temporary name")
    try:
        with os.fdopen(fd, "wb") as f:
            if keep_mode is not None:
                os.fchmod(f.fileno(), keep_mode)
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
