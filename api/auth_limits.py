"""A per-client limit on failed authentications (bad API tokens, bad page logins).

A client address with ``max_failures`` failed authentications within ``window_s`` seconds is
refused (429 with ``Retry-After``) until its oldest counted failure leaves the window, valid
token or not: guessing tokens becomes ``max_failures`` tries per window. In-process state: each
API process counts for itself (N processes allow N times the limit). Behind a reverse proxy the
client address is the proxy's unless uvicorn trusts its ``X-Forwarded-For``
(``--forwarded-allow-ips``), see docs/deploy.md.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from fastapi import Request

# At most this many addresses are tracked; past it the stalest are forgotten (bounded memory
# under a spray from many addresses).
MAX_TRACKED_CLIENTS = 100_000


class FailedAuthLimiter:
    """Sliding-window count of failed authentications per client address."""

    def __init__(
        self,
        max_failures: int,
        window_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float] | None:
        times = self._failures.get(client)
        if times is None:
            return None
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            del self._failures[client]
            return None
        return times

    def retry_after_s(self, client: str) -> int | None:
        """Seconds until ``client`` may try again, or None when it is not blocked."""
        if self.max_failures <= 0:
            return None
        now = self._clock()
        with self._lock:
            times = self._recent(client, now)
            if times is None or len(times) < self.max_failures:
                return None
            return max(1, math.ceil(times[0] + self.window_s - now))

    def record_failure(self, client: str) -> None:
        """Count one failed authentication of ``client``."""
        now = self._clock()
        with self._lock:
            times = self._recent(client, now)
            if times is None:
                if len(self._failures) >= MAX_TRACKED_CLIENTS:
                    stalest = min(self._failures, key=lambda c: self._failures[c][-1])
                    del self._failures[stalest]
                times = self._failures.setdefault(client, deque())
            times.append(now)
            while len(times) > self.max_failures:
                times.popleft()


def client_address(request: Request) -> str:
    """The client's address as the ASGI server reports it ("unknown" when it does not)."""
    return request.client.host if request.client is not None else "unknown"
