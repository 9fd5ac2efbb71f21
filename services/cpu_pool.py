"""A bounded pool of child processes for a server's CPU-bound work.

A thread of the API process that computes a paired bootstrap or draws a plot holds the GIL for
most of a second at a time, and the event loop and the request threads of that process wait
for it: a leaderboard poll beside 40 comparisons took 1-2 s. Work handed to a :class:`CpuPool`
runs in child processes instead, so the server's own threads only wait on futures.

- ``spawn`` children: a fresh interpreter each, never a fork of a server whose other threads may
  hold locks (logging, database pool, blob store); the same on every platform, the embedded
  demo's included. They start on first use and then stay (imports are paid once).
- Children run ``NICENESS`` steps nicer than the server: on a machine short of cores, answering
  requests comes before background computation.
- Functions and arguments cross the process boundary by pickle: module-level functions and
  plain data (bytes, tuples, dataclasses), never a database session or a blob store.
- A child that dies (killed for memory) breaks the pool: the work it had fails with
  :class:`~concurrent.futures.process.BrokenProcessPool` and the next :meth:`CpuPool.submit`
  starts a new pool.
- Children never outlive the server: :meth:`CpuPool.close` stops them, and a child whose parent
  is gone (killed, or exited without closing the pool) exits within ``PARENT_POLL_S``: a
  child of ``ProcessPoolExecutor`` holds both ends of its task queue, so it would otherwise wait
  for work forever.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any, ParamSpec, TypeVar

logger = logging.getLogger(__name__)

NICENESS = 5
"""How much lower the children's CPU priority is than the server's (``nice`` steps)."""

PARENT_POLL_S = 1.0
"""How often a child checks that the server that started it is still running, seconds."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _start_child(parent: int) -> None:
    """Initializer of every child: a lower CPU priority than the server's, and an exit when
    ``parent`` (the server's process id) is gone."""
    try:
        os.nice(NICENESS)
    except OSError:  # not permitted here: same priority as the server, still off its GIL
        pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(0)  # orphaned: nobody is left to take a result

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


class CpuPool:
    """At most ``processes`` child processes running submitted functions (see the module)."""

    def __init__(self, processes: int) -> None:
        if processes < 1:
            raise ValueError(f"a CPU pool needs at least one process, not {processes}")
        self.processes = processes
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._closed = False

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=get_context("spawn"),
            initializer=_start_child,
            initargs=(os.getpid(),),
        )

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        """``fn(*args, **kwargs)`` in a child process: its future (in this process)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the CPU pool is closed (the server is stopping)")
            if self._executor is None:
                self._executor = self._new_executor()
            try:
                return self._executor.submit(fn, *args, **kwargs)
            except BrokenProcessPool:
                logger.warning("a CPU pool child died; starting a new pool")
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = self._new_executor()
                return self._executor.submit(fn, *args, **kwargs)

    def child_pids(self) -> list[int]:
        """The process ids of the running children (none before the first submit)."""
        with self._lock:
            executor = self._executor
        processes: dict[int, Any] = getattr(executor, "_processes", None) or {}
        return sorted(processes)

    def close(self) -> None:
        """Stop the children (queued work is dropped, running work is abandoned)."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is None:
            return
        processes = list((getattr(executor, "_processes", None) or {}).values())
        executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:  # a child deep in a computation would finish it first
            process.terminate()
