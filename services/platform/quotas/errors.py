"""Errors of the per-team quotas."""

from __future__ import annotations

from services.errors import InvalidInputError


class QuotaExceededError(InvalidInputError):
    """A team reached a quota; ``retry_after_s`` (seconds, >= 0) says when to try again.

    The HTTP API answers 429 with ``Retry-After`` and the fields below in the problem body.
    """

    def __init__(self, quota: str, *, used: int, limit: int, retry_after_s: int, hint: str) -> None:
        super().__init__(f"quota exceeded: {quota} ({used} used, limit {limit}); {hint}")
        self.quota = quota
        self.used = used
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.hint = hint
