"""The server's pool of child processes (services/cpu_pool.py): work runs in another process at
a lower CPU priority, a dead child is replaced, and no child outlives the server, whether it
closes the pool or dies without closing it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

from services.cpu_pool import NICENESS, CpuPool

ROOT = Path(__file__).resolve().parents[2]


def _gone(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reap it, or it lingers as a zombie
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    return False


def test_work_runs_in_a_nicer_child_and_a_dead_child_is_replaced() -> None:
    pool = CpuPool(1)
    try:
        child = pool.submit(os.getpid).result(60)
        assert child != os.getpid() and pool.child_pids() == [child]
        assert pool.submit(os.nice, 0).result(60) >= min(19, os.nice(0) + NICENESS)
        os.kill(child, signal.SIGKILL)
        replacement = None
        for _ in range(3):  # work queued before the pool saw its child die fails; then a new one
            try:
                replacement = pool.submit(os.getpid).result(60)
                break
            except BrokenProcessPool:
                continue
        assert replacement is not None and replacement not in (child, os.getpid())
    finally:
        pool.close()
    assert _gone(replacement, 10), "a closed pool left its child running"
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(os.getpid)


def test_a_child_exits_when_its_server_dies_without_closing_the_pool() -> None:
    script = (
        "import os, sys\n"
        "from services.cpu_pool import CpuPool\n"
        "pool = CpuPool(1)\n"
        "print(pool.submit(os.getpid).result(60), flush=True)\n"
        "os._exit(0)  # as if killed: the pool is never closed\n"
    )
    server = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert server.returncode == 0, server.stderr
    child = int(server.stdout.split()[0])
    assert _gone(child, 15), "an orphaned child kept running"
