"""Per-team quotas (limits from ``Settings``): 429 with a problem naming the quota.

- submissions per rolling 24 h (``quota_submissions_per_day``; rejected submissions not counted),
- jobs per rolling 24 h (``quota_jobs_per_day``; failed and cancelled jobs not counted),
- concurrent jobs (``quota_concurrent_jobs``: queued + running).

Checks run inside the transaction that creates the row, after ``lock_team`` has locked the team,
so concurrent requests of one team are counted one after the other.
"""

from __future__ import annotations

import datetime as dt
import math

from sqlalchemy.orm import Session

from api.problems import ApiProblem
from api.schemas import Quotas, QuotaUsage
from services.settings import Settings
from services.storage import repository as repo
from services.storage.models import RunState, SubmissionStatus
from services.storage.types import utc_now

WINDOW = dt.timedelta(hours=1) * 24
NOT_CHARGED_JOB_STATES = (RunState.FAILED.value, RunState.CANCELLED.value)
ACTIVE_JOB_STATES = (RunState.QUEUED.value, RunState.RUNNING.value)
CONCURRENT_RETRY_AFTER_S = 30


def _too_many(what: str, used: int, limit: int, retry_after_s: int, hint: str) -> ApiProblem:
    return ApiProblem(
        429,
        f"quota exceeded: {what} ({used} used, limit {limit}); {hint}",
        headers={"Retry-After": str(max(1, retry_after_s))},
        extra={"quota": what, "limit": limit, "used": used, "retry_after_s": retry_after_s},
    )


def _window_retry_after(oldest: dt.datetime | None, now: dt.datetime) -> int:
    if oldest is None:
        return 1
    return math.ceil((oldest + WINDOW - now).total_seconds())


def check_submission_quota(session: Session, settings: Settings, team_id: int) -> None:
    """429 when the team created its daily number of submissions already."""
    now = utc_now()
    usage = repo.count_submissions(
        session,
        team_id,
        since=now - WINDOW,
        exclude_statuses=(SubmissionStatus.REJECTED.value,),
    )
    if usage.count >= settings.quota_submissions_per_day:
        raise _too_many(
            "submissions per day",
            usage.count,
            settings.quota_submissions_per_day,
            _window_retry_after(usage.oldest_at, now),
            "rejected submissions are not counted; retry when the oldest leaves the 24 h window",
        )


def check_job_quota(session: Session, settings: Settings, team_id: int) -> None:
    """429 when the team has too many active jobs or created its daily number of jobs."""
    now = utc_now()
    active = repo.count_jobs(session, team_id, states=ACTIVE_JOB_STATES)
    if active.count >= settings.quota_concurrent_jobs:
        raise _too_many(
            "concurrent jobs",
            active.count,
            settings.quota_concurrent_jobs,
            CONCURRENT_RETRY_AFTER_S,
            "wait for a queued or running job to finish, or cancel one",
        )
    daily = repo.count_jobs(
        session, team_id, exclude_states=NOT_CHARGED_JOB_STATES, since=now - WINDOW
    )
    if daily.count >= settings.quota_jobs_per_day:
        raise _too_many(
            "jobs per day",
            daily.count,
            settings.quota_jobs_per_day,
            _window_retry_after(daily.oldest_at, now),
            "failed and cancelled jobs are not counted",
        )


def quota_report(session: Session, settings: Settings, team_id: int) -> Quotas:
    """The team's limits and current usage."""
    now = utc_now()
    submissions = repo.count_submissions(
        session, team_id, since=now - WINDOW, exclude_statuses=(SubmissionStatus.REJECTED.value,)
    )
    daily = repo.count_jobs(
        session, team_id, exclude_states=NOT_CHARGED_JOB_STATES, since=now - WINDOW
    )
    active = repo.count_jobs(session, team_id, states=ACTIVE_JOB_STATES)
    return Quotas(
        submissions_per_day=QuotaUsage(
            limit=settings.quota_submissions_per_day, used=submissions.count, window="rolling 24 h"
        ),
        jobs_per_day=QuotaUsage(
            limit=settings.quota_jobs_per_day, used=daily.count, window="rolling 24 h"
        ),
        concurrent_jobs=QuotaUsage(
            limit=settings.quota_concurrent_jobs, used=active.count, window="now"
        ),
    )
