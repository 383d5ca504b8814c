"""Worker processes that never outlive the command, and whose death is a result.

`worker_pool(n)` is a ProcessPoolExecutor for one command: when the command is stopped by
SIGTERM it terminates its workers before it dies (they would otherwise finish their task,
holding its stdout open), and `outcome(future, lost)` turns a worker that died (killed,
out of memory: `BrokenProcessPool`) into the caller's own "lost" value instead of a
traceback.
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from . import fsutil

WORKER_DIED = ("its worker process died before it finished (killed by a signal, or out of "
               "memory)")


@contextlib.contextmanager
def worker_pool(n: int):
    """A ProcessPoolExecutor of `n` workers, stopped with the command (see the module)."""
    pool = ProcessPoolExecutor(max_workers=n)
    owner = os.getpid()

    def stop() -> None:
        if os.getpid() != owner:        # a forked worker inherits the hook: not its pool
            return
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            try:
                proc.kill()
            except (OSError, ValueError, AttributeError):
                pass

    fsutil.install_stop_handler()
    fsutil._stop_hooks.append(stop)
    try:
        with pool:
            yield pool
    finally:
        with contextlib.suppress(ValueError):
            fsutil._stop_hooks.remove(stop)


def outcome(future, lost):
    """`future.result()`, or `lost(WORKER_DIED)` when its worker died."""
    try:
        return future.result()
    except BrokenProcessPool:
        return lost(WORKER_DIED)
