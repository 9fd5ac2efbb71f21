"""Embedded mode's reaper: a thread of the demo process runs the reaper's pass every
``reaper_interval_s`` (there is no beat and no reaper worker there), and a failed pass does not
stop it."""

from __future__ import annotations

import threading
import time

import pytest

from services.settings import Settings
from workers import app as worker_app
from workers import tasks


def test_the_reaper_thread_runs_the_pass_every_interval_and_survives_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[float] = []
    third = threading.Event()

    def reap() -> dict[str, int]:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise ConnectionError("database down")  # the next period tries again
        if len(calls) >= 3:
            third.set()
        return {}

    monkeypatch.setattr(tasks, "reap", reap)
    thread = worker_app.start_reaper_thread(Settings(reaper_interval_s=0.05))
    try:
        assert third.wait(timeout=10), calls
    finally:
        thread.stop()
    assert thread.passes >= 2  # the failed first pass is not counted, the others are
    count = len(calls)
    time.sleep(0.2)
    assert len(calls) == count  # stopped


def test_the_embedded_sweeps_start_after_the_pool_forked_its_children(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A prefork pool forks its children after ``celeryd_after_setup``: threads started there
    run in the parent at the fork (a lock one holds stays held in the child, and the child
    inherits the parent's database connections). ``worker_ready`` comes after the pool's start."""
    from celery import signals

    started = _quiet_worker_setup(monkeypatch)
    signals.celeryd_after_setup.send(sender="w@host", instance=None, conf=worker_app.app.conf)
    assert started == []
    signals.worker_ready.send(sender=None)
    assert started == ["sweeps"]


def test_a_worker_inside_another_process_starts_no_sweeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``worker_ready`` also fires for a worker embedded in another process (a test's
    ``celery.contrib.testing`` worker), where no ``celeryd_after_setup`` ran: the sweeps would run
    in that process on the environment's settings, for the rest of its life."""
    from celery import signals

    started = _quiet_worker_setup(monkeypatch)
    signals.worker_ready.send(sender=None)
    assert started == []


def _quiet_worker_setup(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The worker signal handlers with their effects replaced; returns what started."""
    started: list[str] = []
    monkeypatch.setattr(worker_app, "_worker_process", False)  # restored after the test
    monkeypatch.setattr(worker_app, "start_embedded_sweeps", lambda: started.append("sweeps"))
    monkeypatch.setattr(worker_app, "install_outbox_senders", lambda *a, **k: None)
    monkeypatch.setattr(worker_app, "apply_thread_settings", lambda *a, **k: None)
    monkeypatch.setattr(worker_app, "set_node_name", lambda name: None)
    return started
