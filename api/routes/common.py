"""Helpers shared by the routers: documented error sets, scope annotations, visibility checks."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from api.auth import Principal
from api.problems import ApiProblem, problem_responses
from services.storage import repository as repo
from services.storage.errors import NotFoundError
from services.storage.models import Job, Protocol, Submission

PAGE_LIMIT_DEFAULT = repo.DEFAULT_PAGE_SIZE
PAGE_LIMIT_MAX = repo.MAX_PAGE_SIZE
CURSOR_PATTERN = r"^[0-9]{1,19}$"


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Problem responses of an authenticated route: 401, 403, 422, 500 plus ``statuses``."""
    return problem_responses(*sorted({401, 403, 422, 500, *statuses}))


def scope(name: str) -> dict[str, Any]:
    """OpenAPI extension naming the token scope a route needs."""
    return {"x-required-scope": name}


def visible_submission(session: Session, principal: Principal, submission_id: int) -> Submission:
    """A submission the caller may read; 404 (same message) when missing or another team's
    private one."""
    try:
        submission = repo.get_submission(session, submission_id)
    except NotFoundError:
        submission = None
    if submission is None or not principal.can_see(submission.team_id, submission.visibility):
        raise NotFoundError(f"submission {submission_id} not found")
    return submission


def owned_submission(session: Session, principal: Principal, submission_id: int) -> Submission:
    """A submission the caller may use for jobs: 404 if invisible, 403 if another team's."""
    submission = visible_submission(session, principal, submission_id)
    if not principal.owns(submission.team_id):
        raise ApiProblem(
            403,
            f"submission {submission_id} belongs to team {submission.team.slug!r}; only its team "
            "can run jobs on it",
        )
    return submission


def visible_job(session: Session, principal: Principal, job_id: int) -> Job:
    """A job the caller may read (its team's, or one of a public submission); else 404."""
    # Job, submission, team and stages in one query (lazy loads would cost four round trips).
    job = (
        session.execute(
            select(Job)
            .options(joinedload(Job.submission).joinedload(Submission.team), joinedload(Job.stages))
            .where(Job.id == job_id)
        )
        .unique()
        .scalar_one_or_none()
    )
    if job is None or not principal.can_see(job.team_id, job.submission.visibility):
        raise NotFoundError(f"job {job_id} not found")
    return job


def owned_job(session: Session, principal: Principal, job_id: int) -> Job:
    """A job the caller may change: 404 if invisible, 403 if another team's public one."""
    job = visible_job(session, principal, job_id)
    if not principal.owns(job.team_id):
        raise ApiProblem(
            403, f"job {job_id} belongs to team {job.submission.team.slug!r}; it is read-only here"
        )
    return job


def protocol_by_id(session: Session, protocol_id: int) -> Protocol:
    """Protocol ``protocol_id`` or 404."""
    try:
        return repo.get_protocol_by_id(session, protocol_id)
    except NotFoundError:
        raise NotFoundError(f"protocol {protocol_id} not found") from None
