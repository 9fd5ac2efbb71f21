"""The API's view of the per-team quotas (the rules: ``services.platform.quotas``).

A failed check raises ``QuotaExceededError``, which ``api/problems.py`` answers with 429, a
``Retry-After`` header and the quota, limit and usage in the problem body.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from api.schemas import Quotas, QuotaUsage
from services.platform import quotas
from services.platform.quotas import QuotaStatus
from services.settings import Settings


def _usage(status: QuotaStatus) -> QuotaUsage:
    return QuotaUsage(limit=status.limit, used=status.used, window=status.window)


def quota_report(session: Session, settings: Settings, team_id: int) -> Quotas:
    """The team's limits and current usage, as the API shows them (``GET /v1/me``)."""
    report = quotas.team_quotas(session, settings=settings, team_id=team_id)
    return Quotas(
        submissions_per_day=_usage(report.submissions_per_day),
        jobs_per_day=_usage(report.jobs_per_day),
        concurrent_jobs=_usage(report.concurrent_jobs),
        archive_storage_bytes=_usage(report.archive_storage_bytes),
    )
