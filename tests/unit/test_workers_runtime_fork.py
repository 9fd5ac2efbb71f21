"""``worker_process_init`` resets a worker's services only in a forked child: the solo pool
sends it from the worker's own process, where the services a test or the demo installed stay."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from workers import runtime


class _Engine:
    def __init__(self) -> None:
        self.disposed: list[bool] = []

    def dispose(self, close: bool = True) -> None:
        self.disposed.append(close)


def _services() -> Any:
    return SimpleNamespace(database=SimpleNamespace(engine=_Engine()), worker_host="test")


@pytest.fixture()
def installed() -> Any:
    services = _services()
    runtime.set_services(services)
    try:
        yield services
    finally:
        runtime.set_services(None)


def test_in_the_same_process_the_installed_services_stay(installed: Any) -> None:
    runtime.reset_after_fork()  # as the solo pool's worker_process_init
    assert runtime.get_services() is installed
    assert installed.database.engine.disposed == []


def test_a_forked_child_drops_the_parents_services(installed: Any) -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running any test machinery
        try:
            runtime.reset_after_fork()
            kept = runtime._services is installed
            disposed = installed.database.engine.disposed
            os.write(write, f"{kept} {disposed}".encode())
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 100).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert answer == "False [False]"  # dropped; the parent's connections left open
    assert runtime.get_services() is installed  # the parent keeps its own
