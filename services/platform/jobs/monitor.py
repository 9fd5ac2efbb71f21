"""The heartbeat of a running stage, which is also the pipeline's progress reporter.

:class:`StageMonitor` runs a thread next to a phase: it writes the stage's heartbeat, progress
and log tail (throttled) and watches the job's state, so that a cancelled job (or a stage another
worker took over) stops the phase at its next progress report or stage boundary.
"""

from __future__ import annotations

import logging
import math
import threading
import time

from services.platform.jobs import records as job_records
from services.storage.db import Database
from services.storage.errors import ConflictError
from services.vocab import RunState

log = logging.getLogger(__name__)

# Throttle of progress/log writes while a stage reports often (seconds).
PROGRESS_WRITE_INTERVAL_S = 2.0


class JobCancelledError(Exception):
    """The job was cancelled while a phase ran (raised from the progress reporter)."""


class StageSupersededError(Exception):
    """Another worker took the stage over (this one was presumed lost); stop quietly."""


class StageMonitor:
    """Heartbeat thread of a running stage; also the pipeline's progress reporter.

    ``report(stage, fraction, message)`` only stores the latest values (cheap, called often); the
    thread writes heartbeat + progress + a log line at most every ``PROGRESS_WRITE_INTERVAL_S``
    while there is news, and at least every ``heartbeat_interval_s``. It reads the job's state in
    the same transaction: a cancelled job (or a stage taken over by another worker) makes the next
    ``report`` or ``check`` raise, which stops the phase between steps.
    """

    def __init__(
        self,
        database: Database,
        job_id: int,
        stage_id: int,
        phase: str,
        *,
        heartbeat_interval_s: float,
        progress_interval_s: float = PROGRESS_WRITE_INTERVAL_S,
    ) -> None:
        self.database = database
        self.job_id = job_id
        self.stage_id = stage_id
        self.phase = phase
        self.heartbeat_interval_s = heartbeat_interval_s
        self.progress_interval_s = min(progress_interval_s, heartbeat_interval_s)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._cancelled = threading.Event()
        self._superseded = threading.Event()
        self._fraction: float | None = None
        self._message: str | None = None
        self._written_message: str | None = None
        self._dirty = False
        self._last_write = 0.0
        self._thread: threading.Thread | None = None
        self.writes = 0

    # The reporter the pipeline calls (``ProgressReporter``).
    def report(self, stage: str, fraction: float, message: str) -> None:
        """Remember the latest progress; raise if the job was cancelled or the stage lost."""
        self.check(stage)
        with self._lock:
            # Earlier phases' stages are reused and stay quiet; a message of another stage is a
            # summary the pipeline prints while passing through, not this phase's progress.
            if stage != self.phase:
                return
            if math.isfinite(fraction):
                self._fraction = min(max(float(fraction), 0.0), 1.0)
            self._message = f"[{stage}] {message}"
            self._dirty = True

    def check(self, stage: str = "") -> None:
        """Raise :class:`JobCancelledError` / :class:`StageSupersededError` when due."""
        if self._cancelled.is_set():
            raise JobCancelledError(f"job {self.job_id} was cancelled")
        if self._superseded.is_set():
            raise StageSupersededError(f"stage {self.stage_id} was taken over by another worker")

    def __enter__(self) -> StageMonitor:
        self._thread = threading.Thread(
            target=self._loop, name=f"heartbeat-job{self.job_id}-{self.phase}", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def flush(self) -> None:
        """Write heartbeat, progress and the latest message now (one transaction)."""
        with self._lock:
            fraction = self._fraction
            message = self._message if self._message != self._written_message else None
            self._dirty = False
        with self.database.session_scope() as session:
            job = job_records.get_job(session, self.job_id)
            if job.state == RunState.CANCELLED.value:
                self._cancelled.set()
            try:
                job_records.heartbeat_stage(
                    session,
                    self.stage_id,
                    progress=fraction,
                    log=f"{message}\n" if message else None,
                )
            except ConflictError:
                # The stage left "running" under us: requeued by the reaper or cancelled.
                if job.state != RunState.CANCELLED.value:
                    self._superseded.set()
        self._written_message = message or self._written_message
        self._last_write = time.monotonic()
        self.writes += 1

    def _loop(self) -> None:
        while not self._stop.wait(self.progress_interval_s):
            since = time.monotonic() - self._last_write
            if since < self.heartbeat_interval_s and not self._dirty:
                continue
            try:
                self.flush()
            except Exception as exc:  # a DB hiccup must not kill the stage; the next beat retries
                log.warning("heartbeat of stage %s failed: %s", self.stage_id, exc)
