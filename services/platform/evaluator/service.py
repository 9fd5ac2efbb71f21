"""Which evaluator produced a job's result, and re-running results of an older one.

A job's ``evaluator`` (``services.pipeline.stage_versions.current_evaluator``) records the Unmask
version, the git commit when known, the version of every stage's code, the job's config hash, and
``scorer``: a short digest of the stage versions, the part that decides whether two results are
comparable.
It is written when the job is created and rewritten by the worker that completes it (what
actually ran). A row whose ``scorer`` differs from the current code's (or that has no evaluator:
from before they were recorded) is *outdated*.

:func:`rerun_outdated` queues, for each submission of a protocol whose leaderboard job is
outdated, an uncharged re-run (``charged`` False: no quota, no phase limit) with the same stored
config. Stages whose key did not change are reused from the stage store; the old result stays
the submission's leaderboard row (its latest succeeded job) until the re-run succeeds.

Functions take the caller's session first; they flush, never commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from services.pipeline.stage_versions import current_scorer, is_outdated
from services.platform.jobs.service import create_rerun
from services.platform.leaderboard import latest_succeeded_jobs
from services.platform.rows import get_row
from services.storage.models import Job, ProtocolRecord
from services.vocab import RunState


@dataclass(frozen=True)
class RerunPlan:
    """What :func:`rerun_outdated` did: the re-run jobs (old job id -> new job id) and the
    submissions skipped because a re-run of theirs is still queued or running."""

    queued: dict[int, int]
    already_running: list[int]
    current_scorer: str


def leaderboard_jobs(session: Session, protocol_id: int) -> list[Job]:
    """Each submission's latest succeeded job under the protocol (the leaderboard's rule)."""
    latest = latest_succeeded_jobs(protocol_id, include_all=True)
    return list(
        session.scalars(
            select(Job)
            .join(latest, and_(latest.c.job_id == Job.id, latest.c.recency == 1))
            .order_by(Job.id)
        )
    )


def rerun_outdated(
    session: Session,
    *,
    protocol_id: int,
    created_by_user_id: int | None,
    include_current: bool = False,
) -> RerunPlan:
    """Queue an uncharged re-run of every outdated leaderboard job of the protocol.

    ``include_current``: re-run every leaderboard job, outdated or not. A submission that
    already has an active uncharged re-run is skipped (calling twice, even concurrently,
    queues nothing twice: the protocol row is locked first).
    """
    # The protocol row, locked until the transaction ends: concurrent calls run one after the
    # other, so the second sees the first's re-runs as active (no duplicates).
    get_row(session, ProtocolRecord, protocol_id, lock=True, noun="protocol")
    current = current_scorer()
    queued: dict[int, int] = {}
    running: list[int] = []
    for job in leaderboard_jobs(session, protocol_id):
        if not include_current and not is_outdated(job.evaluator, current):
            continue
        active = session.scalar(
            select(Job.id).where(
                Job.submission_id == job.submission_id,
                Job.protocol_id == protocol_id,
                Job.charged.is_(False),
                Job.state.in_((RunState.QUEUED.value, RunState.RUNNING.value)),
            )
        )
        if active is not None:
            running.append(job.submission_id)
            continue
        queued[job.id] = create_rerun(
            session, job=job, created_by_user_id=created_by_user_id
        ).job.id
    return RerunPlan(queued=queued, already_running=running, current_scorer=current)
