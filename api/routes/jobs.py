"""Jobs: create (idempotent), read, list, cancel, re-run; results and artifacts; cancel every job
of a submission.

The rules live in ``services.platform.jobs`` (create / rerun / cancel / cancel_jobs_of_submission);
these routes check access, call them in one transaction and render the result. Work for the
workers is written to the outbox in that transaction and sent after the commit.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Header, Query, Request, Response, status
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session

from api.auth import Principal
from api.context import ApiContext
from api.deps import ContextDep, ReadReader, SubmitPrincipal
from api.problems import ApiProblem
from api.routes.common import PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, errors, scope
from api.schemas import (
    ArtifactOut,
    ArtifactsOut,
    CancelledJobsOut,
    ChallengerOut,
    Cursor,
    DbId,
    JobCreate,
    JobOut,
    JobPageOut,
    JobState,
    JobSummary,
    ResultOut,
    ResultsOut,
    TrustOut,
    TrustReasonOut,
    WorstCaseOut,
)
from services.pipeline.zoo import headline
from services.platform import identity, quotas
from services.platform import jobs as job_service
from services.platform import results as result_records
from services.platform.access import owned_job, owned_submission, visible_job
from services.platform.jobs import records as job_records
from services.platform.protocols import get_protocol_by_id

logger = logging.getLogger("unmask.api")

router = APIRouter(prefix="/v1/jobs", tags=["jobs"])
# Job operations addressed through their submission (``/v1/submissions/{id}/...``).
submission_jobs_router = APIRouter(prefix="/v1/submissions", tags=["jobs"])

IDEMPOTENCY_HEADER_DOC = (
    "Makes the request safe to retry: the same key with the same body returns the job created "
    "first (200); the same key with another body is a 409. Keys are per team, 1-255 characters."
)
LOG_CHARS_DEFAULT = 2000

# The optional ``Idempotency-Key`` request header of the job-creating routes.
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key", min_length=1, max_length=255, description=IDEMPOTENCY_HEADER_DOC
    ),
]


def _render_job(session: Session, principal: Principal, job_id: int, log_chars: int) -> JobOut:
    job = visible_job(session, principal, job_id)
    return JobOut.of(job, log_chars=log_chars, show_key=principal.owns(job.team_id))


def _job_out(context: ApiContext, principal: Principal, job_id: int, log_chars: int) -> JobOut:
    with context.database.session_scope() as session:
        return _render_job(session, principal, job_id, log_chars)


def _quota_check(context: ApiContext) -> job_service.service.QuotaCheck:
    return lambda session, team_id: quotas.check_job_quota(
        session, settings=context.settings, team_id=team_id
    )


def _answer_new_job(
    context: ApiContext, principal: Principal, new: job_service.NewJob, response: Response
) -> JobOut:
    """After the commit: fail a job whose first task the broker refused (503), else render it."""
    job_id = new.job.id
    if new.created and new.message_id is not None:
        with context.database.session_scope() as session:
            error = job_service.fail_if_not_queued(
                session, job_id=job_id, message_id=new.message_id
            )
        if error is not None:
            logger.error("could not enqueue job %s: %s", job_id, error)
            raise ApiProblem(
                503,
                f"job {job_id} was created but the queue did not accept it "
                f"({error.split(':', 1)[0]}); it is marked failed (not charged to the quota); "
                "retry later",
                extra={"job_id": job_id},
            )
    if not new.created:
        response.status_code = status.HTTP_200_OK
        response.headers["Idempotent-Replayed"] = "true"
    response.headers["Location"] = f"/v1/jobs/{job_id}"
    return _job_out(context, principal, job_id, LOG_CHARS_DEFAULT)


@router.post(
    "",
    response_model=JobOut,
    status_code=status.HTTP_201_CREATED,
    summary="Create a job (submission + protocol + config overrides)",
    responses={
        **errors(404, 409, 429, 503),
        200: {
            "model": JobOut,
            "description": "Idempotent replay: the job first created with this key.",
        },
    },
    openapi_extra=scope("submit"),
)
def create_job(
    principal: SubmitPrincipal,
    context: ContextDep,
    body: JobCreate,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> JobOut:
    """Validates the merged config (422 names the field), checks quotas (429), stores the job
    with one queued stage per phase, commits, then queues it."""
    with context.database.session_scope() as session:
        identity.lock_team(session, principal.team_id)
        new = job_service.create_job(
            session,
            team_id=principal.team_id,
            submission=owned_submission(session, principal, body.submission_id),
            protocol=get_protocol_by_id(session, body.protocol_id),
            created_by_user_id=principal.user_id,
            overrides=body.config_overrides,
            idempotency_key=idempotency_key,
            check_quota=_quota_check(context),
            settings=context.settings,
            phase=body.phase,
        )
    return _answer_new_job(context, principal, new, response)


@router.get(
    "",
    response_model=JobPageOut,
    summary="List the team's jobs",
    responses=errors(),
    openapi_extra=scope("read"),
)
def list_jobs(
    request: Request,
    reader: ReadReader,
    response: Response,
    state: JobState | None = Query(None),
    submission_id: DbId | None = Query(None),
    protocol_id: DbId | None = Query(None),
    limit: int = Query(PAGE_LIMIT_DEFAULT, ge=1, le=PAGE_LIMIT_MAX),
    cursor: Cursor | None = Query(None),
) -> JobPageOut:
    """Newest first. Keyset pagination: pass `next_cursor` as `cursor`; pages do not shift when
    new jobs arrive. A `Link: <...>; rel="next"` header carries the next page's URL."""
    with reader.open() as (principal, session):
        page = job_records.list_jobs(
            session,
            team_id=principal.team_id,
            state=state,
            submission_id=submission_id,
            protocol_id=protocol_id,
            limit=limit,
            cursor=cursor,
        )
        out = JobPageOut(
            items=[JobSummary.of(job) for job in page.items], next_cursor=page.next_cursor
        )
        if out.next_cursor is not None:
            params = {k: v for k, v in request.query_params.items() if k != "cursor"}
            params["cursor"] = out.next_cursor
            response.headers["Link"] = f'<{request.url.path}?{urlencode(params)}>; rel="next"'
        return out


@router.get(
    "/{job_id}",
    response_model=JobOut,
    summary="Get a job: state, per-stage progress, log tails",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def get_job(
    reader: ReadReader,
    job_id: DbId,
    log_chars: int = Query(
        LOG_CHARS_DEFAULT,
        ge=0,
        le=job_records.LOG_TAIL_MAX_CHARS,
        description="Log tail per stage.",
    ),
) -> JobOut:
    """The job of the caller's team or of a public submission (another team's private: 404)."""
    with reader.open() as (principal, session):
        return _render_job(session, principal, job_id, log_chars)


@router.post(
    "/{job_id}/cancel",
    response_model=JobOut,
    summary="Cancel a queued or running job",
    responses=errors(404, 409),
    openapi_extra=scope("submit"),
)
def cancel_job(
    principal: SubmitPrincipal,
    context: ContextDep,
    job_id: DbId,
) -> JobOut:
    """Marks the job and its unfinished stages cancelled, commits, then revokes its tasks.
    Finished jobs: 409. Cancelled jobs are not charged to the quotas."""
    with context.database.session_scope() as session:
        job_service.cancel_job(
            session,
            job=owned_job(session, principal, job_id),
            reason=f"cancelled by {principal.team_slug}",
        )
    return _job_out(context, principal, job_id, LOG_CHARS_DEFAULT)


@router.post(
    "/{job_id}/rerun",
    response_model=JobOut,
    status_code=status.HTTP_201_CREATED,
    summary="Re-run a job: a new job with the same submission, protocol and config",
    responses={
        **errors(404, 409, 429, 503),
        200: {
            "model": JobOut,
            "description": "Idempotent replay: the job first created with this key.",
        },
    },
    openapi_extra=scope("submit"),
)
def rerun_job(
    principal: SubmitPrincipal,
    context: ContextDep,
    job_id: DbId,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> JobOut:
    """The new job copies the original's stored config exactly; quotas apply."""
    with context.database.session_scope() as session:
        identity.lock_team(session, principal.team_id)
        new = job_service.rerun_job(
            session,
            job=owned_job(session, principal, job_id),
            created_by_user_id=principal.user_id,
            idempotency_key=idempotency_key,
            check_quota=_quota_check(context),
        )
    return _answer_new_job(context, principal, new, response)


@submission_jobs_router.post(
    "/{submission_id}/cancel-jobs",
    response_model=CancelledJobsOut,
    summary="Cancel every queued or running job of a submission",
    responses=errors(404),
    openapi_extra=scope("submit"),
)
def cancel_submission_jobs(
    principal: SubmitPrincipal,
    context: ContextDep,
    submission_id: DbId,
) -> CancelledJobsOut:
    """Like `POST /v1/jobs/{id}/cancel` for each of the submission's unfinished jobs, in one
    transaction; finished jobs are left alone. Another team's submission: 403 or 404."""
    with context.database.session_scope() as session:
        cancelled = job_service.cancel_jobs_of_submission(
            session,
            submission=owned_submission(session, principal, submission_id),
            reason=f"cancelled by {principal.team_slug}",
        )
    return CancelledJobsOut(submission_id=submission_id, cancelled_job_ids=cancelled)


@router.get(
    "/{job_id}/results",
    response_model=ResultsOut,
    summary="A job's metric rows",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def get_results(
    reader: ReadReader,
    job_id: DbId,
) -> ResultsOut:
    """One row per attacker, scenario, back-end, seed (-1 = aggregate) and metric; null = not
    computed. ``worst_case``: an attacker zoo's worst case per scenario."""
    with reader.open() as (principal, session):
        job = visible_job(session, principal, job_id)
        rows = result_records.list_results(session, job.id)
        trustworthy, reasons = result_records.job_trust(session, job.id)
        worst = result_records.job_worst_case(session, job.id)
        challenger = result_records.job_challenger(session, job.id)
        return ResultsOut(
            job_id=job.id,
            state=job.state,
            results=[ResultOut.of(r) for r in rows],
            trust=TrustOut(
                trustworthy=trustworthy,
                reasons=[TrustReasonOut(**r) for r in reasons],
                attacker=headline(worst)[1] if worst else None,
                challenger=ChallengerOut.model_validate(challenger) if challenger else None,
            ),
            worst_case=(
                {k: WorstCaseOut.model_validate(v) for k, v in worst.items()} if worst else None
            ),
        )


def _artifact_out(context: ApiContext, artifact: Any, stage_names: dict[int, str]) -> ArtifactOut:
    request = context.blob_store.presigned_get(artifact.key, context.settings.artifact_url_expiry_s)
    return ArtifactOut.of(
        artifact,
        stage=stage_names.get(artifact.stage_id) if artifact.stage_id else None,
        url=request.url,
        expires_at=request.expires_at,
        headers=dict(request.headers),
    )


@router.get(
    "/{job_id}/artifacts",
    response_model=ArtifactsOut,
    summary="A job's artifacts with short-lived download links",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def list_artifacts(
    reader: ReadReader,
    context: ContextDep,
    job_id: DbId,
) -> ArtifactsOut:
    """Each artifact with a presigned GET URL valid `artifact_url_expiry_s` seconds."""
    with reader.open() as (principal, session):
        job = visible_job(session, principal, job_id)
        names = {stage.id: stage.name for stage in job.stages}
        artifacts = result_records.list_artifacts(session, job.id)
        return ArtifactsOut(
            job_id=job.id, artifacts=[_artifact_out(context, a, names) for a in artifacts]
        )


@router.get(
    "/{job_id}/artifacts/{artifact_id}/download",
    response_class=RedirectResponse,
    status_code=status.HTTP_307_TEMPORARY_REDIRECT,
    summary="Redirect to an artifact's presigned download URL",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def download_artifact(
    reader: ReadReader,
    context: ContextDep,
    job_id: DbId,
    artifact_id: DbId,
) -> RedirectResponse:
    """307 to a presigned GET URL (follow with `curl -L`)."""
    with reader.open() as (principal, session):
        job = visible_job(session, principal, job_id)
        key = result_records.get_artifact(session, job.id, artifact_id).key
        request = context.blob_store.presigned_get(key, context.settings.artifact_url_expiry_s)
        return RedirectResponse(request.url, status_code=status.HTTP_307_TEMPORARY_REDIRECT)
