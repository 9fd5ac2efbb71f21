"""The outbox relay: a thread that sends what the after-commit send missed, every few seconds.

Celery beat runs one (``beat_init`` in ``workers/app.py``): beat is one process per deployment,
and a thread there does not wait for a free worker slot behind hours-long phases. Each pass is
:func:`services.platform.outbox.relay_pass`; a message whose send failed (the broker was down)
goes out within ``outbox_resend_after_s`` seconds plus one period once the broker is back.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from services.platform.outbox import relay_pass
from services.platform.webhooks import release_due_events

log = logging.getLogger(__name__)


class OutboxRelay:
    """Runs :func:`relay_pass` every ``interval_s`` seconds in a daemon thread."""

    def __init__(self, bind: Engine, *, interval_s: float, retry_after_s: float) -> None:
        self.bind = bind
        self.interval_s = interval_s
        self.retry_after_s = retry_after_s
        self.passes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> int:
        """One pass: record the webhook events of hidden phases revealed since the last pass,
        then send what is unsent; returns how many messages it sent."""
        release_due_events(self.bind)
        report = relay_pass(self.bind, retry_after_s=self.retry_after_s)
        self.passes += 1
        if report.sent or report.failed:
            log.info("outbox relay: sent %d, failed %d", len(report.sent), len(report.failed))
        return len(report.sent)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.run_once()
            except Exception as exc:  # the database or broker is down: the next pass retries
                log.warning("outbox relay pass failed: %s", exc)

    def start(self) -> OutboxRelay:
        """Start the thread (daemon: it ends with the process)."""
        self._thread = threading.Thread(target=self._loop, name="outbox-relay", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread after its current pass."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


class PeriodicThread:
    """Calls ``fn()`` every ``interval_s`` seconds in a daemon thread (errors are logged, and the
    next period tries again); ``passes`` counts the calls that returned."""

    def __init__(self, name: str, fn: Callable[[], Any], *, interval_s: float) -> None:
        self.name = name
        self.fn = fn
        self.interval_s = interval_s
        self.passes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.fn()
                self.passes += 1
            except Exception as exc:  # the database is down: the next period retries
                log.warning("%s pass failed: %s", self.name, exc)

    def start(self) -> PeriodicThread:
        """Start the thread (daemon: it ends with the process)."""
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread after its current pass."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
