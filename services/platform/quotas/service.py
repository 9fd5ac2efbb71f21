"""Per-team quotas (limits from ``Settings``):

- submissions per rolling 24 h (``quota_submissions_per_day``; rejected submissions not counted),
- jobs per rolling 24 h (``quota_jobs_per_day``; failed and cancelled jobs not counted, nor
  administrators' uncharged re-runs, here and below),
- concurrent jobs (``quota_concurrent_jobs``: queued + running),
- archive storage (``quota_archive_storage_bytes``): the bytes of the team's stored archives
  (validating or accepted), of its open presigned uploads (their declared size: the URLs allow
  that much) and of its archives rejected in the last 24 h (a rejected archive's blob is deleted,
  but counting it stops a team from uploading without limit by getting rejected).

Checks run inside the transaction that creates the row, after
``services.platform.identity.lock_team`` has locked the team, so concurrent requests of one team
are counted one after the other. A check that fails raises :class:`QuotaExceededError`.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from services.anonymizers.kinds.archive import KIND as ARCHIVE_KIND
from services.platform.jobs.records import count_jobs
from services.platform.quotas.errors import QuotaExceededError
from services.platform.submissions import count_submissions
from services.settings import Settings
from services.storage.models import ArchiveUpload, ArchiveUploadState, Submission, SubmissionStatus
from services.storage.types import utc_now
from services.vocab import RunState

WINDOW = dt.timedelta(hours=1) * 24
NOT_CHARGED_JOB_STATES = (RunState.FAILED.value, RunState.CANCELLED.value)
ACTIVE_JOB_STATES = (RunState.QUEUED.value, RunState.RUNNING.value)
NOT_CHARGED_SUBMISSION_STATUSES = (SubmissionStatus.REJECTED.value,)
# Seconds a team over its concurrent-jobs quota is told to wait (no window to compute it from).
CONCURRENT_RETRY_AFTER_S = 30


@dataclass(frozen=True)
class QuotaStatus:
    """One quota of a team: its ``limit``, what is ``used``, and over which ``window``."""

    limit: int
    used: int
    window: str


@dataclass(frozen=True)
class TeamQuotas:
    """Every quota of a team."""

    submissions_per_day: QuotaStatus
    jobs_per_day: QuotaStatus
    concurrent_jobs: QuotaStatus
    archive_storage_bytes: QuotaStatus


def _window_retry_after(oldest: dt.datetime | None, now: dt.datetime) -> int:
    """Seconds until the oldest counted row leaves the rolling window (1 when none)."""
    if oldest is None:
        return 1
    return math.ceil((oldest + WINDOW - now).total_seconds())


def check_submission_quota(session: Session, *, settings: Settings, team_id: int) -> None:
    """:class:`QuotaExceededError` when the team created its daily number of submissions."""
    now = utc_now()
    usage = count_submissions(
        session, team_id, since=now - WINDOW, exclude_statuses=NOT_CHARGED_SUBMISSION_STATUSES
    )
    if usage.count >= settings.quota_submissions_per_day:
        raise QuotaExceededError(
            "submissions per day",
            used=usage.count,
            limit=settings.quota_submissions_per_day,
            retry_after_s=_window_retry_after(usage.oldest_at, now),
            hint="rejected submissions are not counted; retry when the oldest leaves the 24 h "
            "window",
        )


def archive_storage_bytes(session: Session, team_id: int, *, now: dt.datetime) -> int:
    """Bytes charged to the team's archive storage quota (see the module docstring)."""
    rejected = SubmissionStatus.REJECTED.value
    stored = session.scalar(
        select(func.coalesce(func.sum(Submission.archive_size_bytes), 0)).where(
            Submission.team_id == team_id,
            Submission.kind == ARCHIVE_KIND,
            or_(
                Submission.status != rejected,
                and_(Submission.status == rejected, Submission.created_at >= now - WINDOW),
            ),
        )
    )
    open_uploads = session.scalar(
        select(func.coalesce(func.sum(ArchiveUpload.size_bytes), 0)).where(
            ArchiveUpload.team_id == team_id,
            ArchiveUpload.state == ArchiveUploadState.OPEN.value,
        )
    )
    return int(stored or 0) + int(open_uploads or 0)


def check_archive_storage_quota(
    session: Session, *, settings: Settings, team_id: int, adding_bytes: int
) -> None:
    """:class:`QuotaExceededError` when ``adding_bytes`` more would pass the team's archive
    storage quota (bytes)."""
    now = utc_now()
    used = archive_storage_bytes(session, team_id, now=now)
    limit = settings.quota_archive_storage_bytes
    if used + max(adding_bytes, 0) > limit:
        raise QuotaExceededError(
            "archive storage bytes",
            used=used,
            limit=limit,
            retry_after_s=int(WINDOW.total_seconds()),
            hint=f"this archive adds {adding_bytes} bytes; archives rejected in the last 24 h "
            "and unfinished presigned uploads count; open uploads are released when they expire",
        )


def check_job_quota(session: Session, *, settings: Settings, team_id: int) -> None:
    """:class:`QuotaExceededError` when the team has too many active jobs or created its daily
    number of jobs."""
    now = utc_now()
    active = count_jobs(session, team_id, states=ACTIVE_JOB_STATES, charged_only=True)
    if active.count >= settings.quota_concurrent_jobs:
        raise QuotaExceededError(
            "concurrent jobs",
            used=active.count,
            limit=settings.quota_concurrent_jobs,
            retry_after_s=CONCURRENT_RETRY_AFTER_S,
            hint="wait for a queued or running job to finish, or cancel one",
        )
    daily = count_jobs(
        session,
        team_id,
        exclude_states=NOT_CHARGED_JOB_STATES,
        since=now - WINDOW,
        charged_only=True,
    )
    if daily.count >= settings.quota_jobs_per_day:
        raise QuotaExceededError(
            "jobs per day",
            used=daily.count,
            limit=settings.quota_jobs_per_day,
            retry_after_s=_window_retry_after(daily.oldest_at, now),
            hint="failed and cancelled jobs are not counted",
        )


def team_quotas(session: Session, *, settings: Settings, team_id: int) -> TeamQuotas:
    """The team's limits and current usage."""
    now = utc_now()
    submissions = count_submissions(
        session, team_id, since=now - WINDOW, exclude_statuses=NOT_CHARGED_SUBMISSION_STATUSES
    )
    daily = count_jobs(
        session,
        team_id,
        exclude_states=NOT_CHARGED_JOB_STATES,
        since=now - WINDOW,
        charged_only=True,
    )
    active = count_jobs(session, team_id, states=ACTIVE_JOB_STATES, charged_only=True)
    return TeamQuotas(
        submissions_per_day=QuotaStatus(
            limit=settings.quota_submissions_per_day, used=submissions.count, window="rolling 24 h"
        ),
        jobs_per_day=QuotaStatus(
            limit=settings.quota_jobs_per_day, used=daily.count, window="rolling 24 h"
        ),
        concurrent_jobs=QuotaStatus(
            limit=settings.quota_concurrent_jobs, used=active.count, window="now"
        ),
        archive_storage_bytes=QuotaStatus(
            limit=settings.quota_archive_storage_bytes,
            used=archive_storage_bytes(session, team_id, now=now),
            window="now (rejected: rolling 24 h)",
        ),
    )
