"""Who may see or change which submission and job: the one place these rules live.

A caller is a :class:`~services.platform.identity.Principal`, or None for an anonymous visitor
of the public pages (who sees public objects only). Objects the caller may not read raise
:class:`NotFoundError` with the same message as a missing one (their existence is not
disclosed); objects the caller may read but not change raise :class:`AccessDeniedError`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from services.platform.access.errors import AccessDeniedError
from services.platform.identity import Principal
from services.platform.phases import hidden_from
from services.storage.errors import NotFoundError
from services.storage.models import Job, Submission, Visibility


def can_see(principal: Principal | None, team_id: int, visibility: str) -> bool:
    """Whether ``principal`` (None: anonymous) may read an object of ``team_id``."""
    if principal is None:
        return visibility == Visibility.PUBLIC.value
    return principal.can_see(team_id, visibility)


def visible_submissions_clause(
    *, viewer_team_id: int | None = None, include_all_private: bool = False
) -> Any:
    """SQL condition on :class:`Submission`: public ones, plus the viewer team's private ones.

    ``include_all_private`` (administrators): every submission.
    """
    if include_all_private:
        return Submission.id.is_not(None)
    visible = Submission.visibility == Visibility.PUBLIC.value
    if viewer_team_id is not None:
        visible = visible | (Submission.team_id == viewer_team_id)
    return visible


def visible_submission(
    session: Session, principal: Principal | None, submission_id: int
) -> Submission:
    """A submission the caller may read (with its team); :class:`NotFoundError` otherwise."""
    submission = session.scalar(
        select(Submission)
        .options(joinedload(Submission.team))
        .where(Submission.id == submission_id)
    )
    if submission is None or not can_see(principal, submission.team_id, submission.visibility):
        raise NotFoundError(f"submission {submission_id} not found")
    return submission


def owned_submission(session: Session, principal: Principal, submission_id: int) -> Submission:
    """A submission the caller may use for jobs: 404 if invisible, :class:`AccessDeniedError`
    if another team's."""
    submission = visible_submission(session, principal, submission_id)
    if not principal.owns(submission.team_id):
        raise AccessDeniedError(
            f"submission {submission_id} belongs to team {submission.team.slug!r}; only its team "
            "can run jobs on it"
        )
    return submission


def visible_job(session: Session, principal: Principal | None, job_id: int) -> Job:
    """A job the caller may read (its team's, or one of a public submission); else 404.

    Loaded with its submission, team, protocol and stages.
    """
    # Job, submission, team, protocol and stages in one query (lazy loads: five round trips).
    job = (
        session.execute(
            select(Job)
            .options(
                joinedload(Job.submission).joinedload(Submission.team),
                joinedload(Job.protocol),
                joinedload(Job.stages),
            )
            .where(Job.id == job_id)
        )
        .unique()
        .scalar_one_or_none()
    )
    if job is None or not can_see(principal, job.team_id, job.submission.visibility):
        raise NotFoundError(f"job {job_id} not found")
    # A hidden phase's job is its team's and the administrators' until the reveal.
    if hidden_from(
        session,
        job,
        viewer_team_id=principal.team_id if principal else None,
        is_admin=bool(principal and principal.is_admin),
    ):
        raise NotFoundError(f"job {job_id} not found")
    return job


def owned_job(session: Session, principal: Principal, job_id: int) -> Job:
    """A job the caller may change: 404 if invisible, :class:`AccessDeniedError` if another
    team's public one."""
    job = visible_job(session, principal, job_id)
    if not principal.owns(job.team_id):
        raise AccessDeniedError(
            f"job {job_id} belongs to team {job.submission.team.slug!r}; it is read-only here"
        )
    return job
