"""An httpx transport that retries what the server says to retry: 429 and 503 after their
``Retry-After`` (seconds or an HTTP date); optionally connections that could not be opened.

Used by every client of the API in this repository (the demo's poller, ``unmask submit`` and
its client): a busy server (SQLite "database is locked", a quota window, a restart) is waited
for instead of ending the command with an error.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import time
from collections.abc import Callable

import httpx

RETRY_STATUSES = frozenset({429, 503})
DEFAULT_ATTEMPTS = 8
DEFAULT_MAX_WAIT_S = 60.0
"""Longest single wait, seconds (a larger ``Retry-After`` is capped to this)."""
DEFAULT_BACKOFF_S = 1.0
"""First wait when the answer names none, seconds; doubled per attempt up to the cap."""


def retry_after_seconds(value: str | None, *, now: dt.datetime | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, seconds (>= 0); None when absent or
    unreadable. Accepts delta-seconds (``"5"``) and an HTTP date."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    current = now if now is not None else dt.datetime.now(dt.UTC)
    return max(0.0, (when - current).total_seconds())


class RetryAfterTransport(httpx.BaseTransport):
    """Wraps a transport: a 429/503 answer is retried after its ``Retry-After`` (else an
    exponential back-off); with ``retry_connect``, a connection error (nothing was sent) after
    the back-off too. At most ``attempts`` tries, after which the last answer (or error) is the
    caller's. Without ``retry_connect`` an unreachable server fails at once (a wrong URL should
    not take minutes to say so)."""

    def __init__(
        self,
        inner: httpx.BaseTransport | None = None,
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
        backoff_s: float = DEFAULT_BACKOFF_S,
        sleep: Callable[[float], None] = time.sleep,
        on_wait: Callable[[httpx.Request, str, float], None] | None = None,
        retry_connect: bool = False,
    ) -> None:
        if attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {attempts}")
        self.inner = inner if inner is not None else httpx.HTTPTransport()
        self.attempts = attempts
        self.max_wait_s = max_wait_s
        self.backoff_s = backoff_s
        self.sleep = sleep
        self.on_wait = on_wait
        self.retry_connect = retry_connect

    def _backoff(self, attempt: int) -> float:
        return float(min(self.max_wait_s, self.backoff_s * 2**attempt))

    def _wait(self, request: httpx.Request, why: str, seconds: float) -> None:
        if self.on_wait is not None:
            self.on_wait(request, why, seconds)
        self.sleep(seconds)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(self.attempts):
            last = attempt == self.attempts - 1
            try:
                response = self.inner.handle_request(request)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                if last or not self.retry_connect:
                    raise
                self._wait(request, f"{type(exc).__name__}: {exc}", self._backoff(attempt))
                continue
            if response.status_code not in RETRY_STATUSES or last:
                return response
            asked = retry_after_seconds(response.headers.get("Retry-After"))
            wait = min(self.max_wait_s, asked if asked is not None else self._backoff(attempt))
            response.read()
            response.close()
            self._wait(request, f"answered {response.status_code}", wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.inner.close()
