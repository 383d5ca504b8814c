"""Recipe code runs in a process of its own; rrsplice only ever sees plain data.

A recipe is the user's Python: it could exit (``os._exit(0)``, ``atexit``), patch rrsplice's
modules, print over ``--json`` output, fork, start threads or change directory. So rrsplice
never imports it: :func:`load` starts ``python -I -B rrsplice/workflow/recipe_runner.py`` (no
``PYTHONPATH``, no user site), sends it the recipe's path, and reads back ``recipe()``'s
result, the module's constants and ``stages()`` as JSON (never pickle). The runner's
stdout is the error stream, its stdin ``/dev/null``; it runs in a session of its own and is
killed, with everything it started, when its functions are no longer needed.

Functions the recipe returns (``debug_block=``, a rule's ``replace=``) become
:class:`RemoteFunction` objects: calling one sends the arguments to the runner and returns
its (decoded) answer; a runner kept for them is killed when the last recipe holding it goes
away, or when rrsplice exits. Anything that is not plain data (an object, a subclass, an
integer beyond 64 bits) arrives as an :class:`Opaque` value, which every validator reports
as a value of the wrong type.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).resolve().with_name("recipe_runner.py")
MAX_REPLY = 256 * 1024 * 1024       # bytes of one reply; more is refused
INT_LIMIT = 2 ** 63


class ProcessFailure(Exception):
    """The runner ended or answered nonsense; `message` says how (no recipe key)."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.message = message
        self.key = key


class Opaque:
    """A value that is not plain data; `type_name` and `text` say what it was."""

    def __init__(self, type_name: str, text: str):
        self.type_name = type_name
        self.text = text

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


_NAMED: dict = {}


def _named(base: type, type_name: str) -> type:
    """A subclass of `base` named after the recipe's type, so messages built from
    ``type(v).__name__`` read "got MyDict (a dict subclass)" or "got function"."""
    cls = _NAMED.get((base, type_name))
    if cls is None:
        if len(_NAMED) > 512:
            _NAMED.clear()
        cls = _NAMED[(base, type_name)] = type(type_name, (base,), {})
    return cls


def _opaque(type_name: str, text: str) -> Opaque:
    return _named(Opaque, type_name)(type_name, text)


class RemoteFunction:
    """A function of the recipe, called in its runner; returns decoded data."""

    def __init__(self, runner: Runner, fn_id: int, type_name: str):
        self.runner = runner
        self.fn_id = fn_id
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<recipe {self.type_name} {self.fn_id}>"

    def __call__(self, *args):
        return self.call("the recipe's function", *args)

    def call(self, what: str, *args):
        """The value, or ProcessFailure (raised by the runner or a failing call)."""
        reply = self.runner.request({"op": "call", "fn": self.fn_id, "what": what,
                                     "args": list(args)})
        if not reply.get("ok"):
            raise ProcessFailure(_text(reply.get("error")))
        return decode(reply.get("value"), self.runner)

    def map(self, what: str, calls: list) -> list:
        """One round trip for many calls: a (True, value) or (False, message) per call."""
        if not calls:
            return []
        reply = self.runner.request({"op": "map", "fn": self.fn_id, "what": what,
                                     "args": [list(a) for a in calls]})
        values = reply.get("values")
        if not reply.get("ok") or not isinstance(values, list) or len(values) != len(calls):
            raise ProcessFailure(_text(reply.get("error")) or "malformed reply")
        out = []
        for v in values:
            if isinstance(v, dict) and v.get("ok"):
                out.append((True, decode(v.get("value"), self.runner)))
            else:
                out.append((False, _text(v.get("error") if isinstance(v, dict) else None)))
        return out


def _text(v) -> str:
    return v if isinstance(v, str) else "the recipe process sent a malformed reply"


def decode(v, runner: Runner | None = None, depth: int = 0) -> Any:
    """Tagged JSON (see rrsplice.workflow.recipe_runner) back to Python values; anything malformed
    is ProcessFailure."""
    if depth > 80:
        raise ProcessFailure("the recipe process sent a malformed reply (too deep)")
    if v is None or isinstance(v, (bool, str, float)):
        return v
    if isinstance(v, int):
        if not -INT_LIMIT < v < INT_LIMIT:
            raise ProcessFailure("the recipe process sent a malformed reply (integer)")
        return v
    if isinstance(v, list):
        return [decode(x, runner, depth + 1) for x in v]
    if isinstance(v, dict) and len(v) in (1, 2):
        if "t" in v and isinstance(v["t"], list) and len(v) == 1:
            return tuple(decode(x, runner, depth + 1) for x in v["t"])
        if "d" in v and isinstance(v["d"], list) and len(v) == 1:
            out = {}
            for pair in v["d"]:
                if not (isinstance(pair, list) and len(pair) == 2):
                    raise ProcessFailure("the recipe process sent a malformed reply (dict)")
                k = decode(pair[0], runner, depth + 1)
                try:
                    out[k] = decode(pair[1], runner, depth + 1)
                except TypeError:        # an unhashable key
                    raise ProcessFailure("the recipe process sent a malformed reply "
                                         "(key)") from None
            return out
        if "f" in v and isinstance(v["f"], int) and isinstance(v.get("n"), str):
            if runner is None:
                return _opaque(v["n"], "a function")
            return _named(RemoteFunction, v["n"][:200])(runner, v["f"], v["n"][:200])
        if "o" in v and isinstance(v["o"], str) and isinstance(v.get("r"), str):
            return _opaque(v["o"][:200], v["r"][:200])
    raise ProcessFailure("the recipe process sent a malformed reply")


# ------------------------------------------------------------------ the runner process

_LIVE: weakref.WeakSet[Runner] = weakref.WeakSet()


def _kill(proc: subprocess.Popen, owner: int) -> None:
    """End the runner and everything in its session; never waits on a hostile child. In a
    forked copy of rrsplice (a worker) only the copy's pipe ends are closed."""
    for f in (proc.stdin, proc.stdout):
        try:
            if f is not None:
                f.close()
        except OSError:
            pass
    if os.getpid() != owner:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass
    try:
        proc.wait(timeout=5)
    except (subprocess.TimeoutExpired, OSError):
        pass


class Runner:
    """One runner process, for one recipe load (and the calls into its functions)."""

    def __init__(self, env: dict):
        exe = sys.executable
        if not exe:
            raise ProcessFailure("cannot start a Python interpreter for the recipe "
                                 "(sys.executable is empty)")
        self.owner = os.getpid()
        self.lock = threading.Lock()
        try:
            self.proc = subprocess.Popen(
                [exe, "-I", "-B", str(RUNNER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=None, env=env, close_fds=True, start_new_session=True)
        except OSError as exc:
            raise ProcessFailure(f"cannot start the recipe process: {exc}") from None
        self._finalizer = weakref.finalize(self, _kill, self.proc, self.owner)
        _LIVE.add(self)

    def close(self) -> None:
        self._finalizer()

    def request(self, req: dict) -> dict:
        if os.getpid() != self.owner:
            raise ProcessFailure("the recipe process belongs to another process (a fork); "
                                 "load the recipe again")
        with self.lock:
            if self.proc.stdin is None or self.proc.stdin.closed:
                raise ProcessFailure("the recipe process has ended")
            try:
                self.proc.stdin.write(json.dumps(req, ensure_ascii=True).encode() + b"\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):
                raise self._ended() from None
            line = self._read_line()
        try:
            reply = json.loads(line)
        except (ValueError, RecursionError):
            raise ProcessFailure("the recipe process sent a malformed reply") from None
        if not isinstance(reply, dict):
            raise ProcessFailure("the recipe process sent a malformed reply")
        return reply

    def _read_line(self) -> bytes:
        """One reply line; ProcessFailure when the runner ends first (a forked child that
        keeps the pipe open does not keep us waiting: the runner's own exit is watched)."""
        assert self.proc.stdout is not None  # started with stdout=PIPE
        fd = self.proc.stdout.fileno()
        buf = bytearray()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        try:
            while True:
                nl = buf.find(b"\n")
                if nl >= 0:
                    return bytes(buf[:nl])
                if len(buf) > MAX_REPLY:
                    self.close()
                    raise ProcessFailure(f"the recipe's data is larger than {MAX_REPLY} bytes")
                ready = sel.select(timeout=0.2)
                if ready:
                    chunk = os.read(fd, 1 << 20)
                    if chunk:
                        buf += chunk
                        continue
                    raise self._ended()
                if self.proc.poll() is not None:
                    # it exited; whatever it wrote before is in the pipe already
                    while True:
                        r = sel.select(timeout=0)
                        if not r:
                            break
                        chunk = os.read(fd, 1 << 20)
                        if not chunk:
                            break
                        buf += chunk
                    if b"\n" in buf:
                        continue
                    raise self._ended()
        finally:
            sel.close()

    def _ended(self) -> ProcessFailure:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        self.close()
        if code is None:
            how = "closed its output"
        elif code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        return ProcessFailure(f"the recipe process {how} before it answered (the recipe's "
                              "code ended it)")


def _close_all() -> None:
    for r in list(_LIVE):
        r.close()


atexit.register(_close_all)


def load(path: Path, debug: str | None) -> tuple[dict, Runner]:
    """Start a runner, load the recipe at `path`; the runner's (raw) reply and the runner.
    ProcessFailure when the runner cannot start, ends, or fails to load the recipe (then
    with the reply's key)."""
    env = dict(os.environ)
    runner = Runner(env)
    try:
        reply = runner.request({"op": "load", "path": os.path.abspath(path),
                                "debug": debug})
    except BaseException:
        runner.close()
        raise
    if not reply.get("ok"):
        runner.close()
        key = reply.get("key")
        raise ProcessFailure(_text(reply.get("error")), key if isinstance(key, str) else None)
    return reply, runner
