"""Compiling librosa's cached Numba functions safely: one compiler per host at a time.

librosa decorates its Numba functions with ``cache=True``. Processes that compile the same function
at once on a cold cache (the workers of a process pool, two Celery worker processes) race on the
cache's index files (GUFunc caching, https://github.com/numba/numba/issues/10128) and can leave
files that make every later call of that function segfault, in any process, until the cache is
deleted. So every first call of such a function goes through :func:`warm_once`: it runs a tiny
call under a host-wide file lock, once per process; a pool forked afterwards inherits the
compiled code and never compiles.

The lock file lives in ``NUMBA_CACHE_DIR`` when set (the cache it guards), else in the system's
temporary folder.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_FILE_NAME = "unmask-numba-compile.lock"

_lock = threading.Lock()
_warm: set[tuple[int, str]] = set()


@contextmanager
def compile_lock() -> Iterator[None]:
    """Exclusive across the processes of this host; a no-op where ``fcntl`` is missing."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    folder = Path(os.environ.get("NUMBA_CACHE_DIR") or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK_FILE_NAME, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def warm_once(key: str, warm: Callable[[], object]) -> None:
    """Run ``warm`` (a tiny call of the Numba functions behind ``key``) once in this process,
    under :func:`compile_lock`. Numba compiles per argument type, so ``warm`` must pass the same
    dtypes as the real calls."""
    slot = (os.getpid(), key)  # a forked child inherits the parent's set AND its compiled code
    if slot in _warm:
        return
    with _lock:
        if slot in _warm:
            return
        with compile_lock():
            warm()
        _warm.add(slot)
