"""Progress without a terminal: plain timestamped lines for CI logs and redirected output.

rich's live bars only draw on a terminal; elsewhere they print nothing until the end, and a CI
log stays silent for the whole evaluation. :class:`PlainProgress` prints one line when a phase
starts or ends, at most one per ``min_interval_s`` in between, and a heartbeat line when nothing
was printed for ``heartbeat_s`` (a long training epoch still shows the job is alive). Each line
carries the wall-clock time, the elapsed time (which keeps counting while a phase sits at 100 %),
the phase's place among the pipeline's phases, its progress, its own ETA and its last message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import TextIO

from rich.console import Console

from services.pipeline.phases import PHASES

LOG_WIDTH = 240
"""Columns of tables and lines written to a log (stdout not a terminal): wide enough that a
zoo's result table is never cut ("E… %"); a terminal keeps its own width."""


def stdout_console() -> Console:
    """The console of results on stdout: the terminal's width, or :data:`LOG_WIDTH` in a log."""
    import sys

    return Console() if sys.stdout.isatty() else Console(width=LOG_WIDTH)


def _clock_text(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class PlainProgress:
    """A pipeline progress reporter (``(phase, fraction, message)``) writing plain lines."""

    def __init__(
        self,
        stream: TextIO,
        *,
        min_interval_s: float = 10.0,
        heartbeat_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.stream = stream
        self.min_interval_s = min_interval_s
        self.heartbeat_s = heartbeat_s
        self.clock = clock
        self.now = now
        self.started = clock()
        self.last_printed = float("-inf")
        self.phase: str | None = None
        self.phase_started = self.started
        self.fraction = 0.0
        self.message = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, phase: str, fraction: float, message: str) -> None:
        with self._lock:
            t = self.clock()
            changed = phase != self.phase
            if changed:
                self.phase, self.phase_started = phase, t
            finished = fraction >= 1.0 and self.fraction < 1.0
            self.fraction, self.message = min(max(fraction, 0.0), 1.0), message
            if changed or finished or t - self.last_printed >= self.min_interval_s:
                self._print(t, "")

    def heartbeat(self) -> None:
        """Print the current state if nothing was printed for ``heartbeat_s``."""
        with self._lock:
            t = self.clock()
            if self.phase is not None and t - self.last_printed >= self.heartbeat_s:
                self._print(t, " (still working)")

    def _print(self, t: float, suffix: str) -> None:
        phase = self.phase or ""
        names: tuple[str, ...] = PHASES
        place = f"{names.index(phase) + 1} of {len(names)}" if phase in names else "-"
        in_phase = t - self.phase_started
        eta = ""
        # A message with its own ETA (measured step rates: training) is not second-guessed by
        # a linear extrapolation of the phase fraction.
        if 0.0 < self.fraction < 1.0 and "ETA" not in self.message:
            eta = f", ~{_clock_text(in_phase * (1.0 - self.fraction) / self.fraction)} left"
        stamp = self.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        self.stream.write(
            f"{stamp} [{_clock_text(t - self.started)}] phase {place} {phase} "
            f"{self.fraction:4.0%}{eta}: {self.message}{suffix}\n"
        )
        self.stream.flush()
        self.last_printed = t

    def __enter__(self) -> PlainProgress:
        def beat() -> None:
            while not self._stop.wait(min(self.heartbeat_s, 5.0)):
                self.heartbeat()

        self._thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
