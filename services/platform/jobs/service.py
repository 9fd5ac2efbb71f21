"""Jobs as domain operations: create, re-run, cancel, cancel every job of a submission.

Each function takes the caller's ``session`` first and does its whole change in that transaction,
including the work that must follow the commit, written to the outbox (``services/platform/
outbox/``): the first phase's task of a new job, the revocation of a cancelled job's tasks. The
HTTP routes (api/routes/jobs.py) only check access, call these and render the result.

Errors are domain errors (``ConflictError`` subclasses: 409 over HTTP); access checks (404/403)
are the caller's, before calling.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.anonymizers.kinds.archive import KIND as ARCHIVE_KIND
from services.errors import InvalidInputError
from services.pipeline.stage_versions import current_evaluator
from services.platform import phases as phase_rules
from services.platform import protocols as protocol_records
from services.platform.jobs import records as job_records
from services.platform.jobs.config import build_job_config, check_stored_config_cost
from services.platform.jobs.phase_queues import job_stage_names
from services.platform.outbox import REVOKE_JOB, RUN_PHASE, add_message, withdraw_unsent
from services.settings import Settings
from services.storage.errors import ConflictError
from services.storage.models import (
    TERMINAL_STATES,
    Job,
    OutboxMessage,
    Phase,
    ProtocolRecord,
    RunState,
    Submission,
    SubmissionStatus,
)

# Checks a team's job quota inside the creating transaction (after the team lock); raises when
# the team may not create another job (the API passes services.platform.quotas.check_job_quota
# bound to its settings).
QuotaCheck = Callable[[Session, int], None]
ACTIVE_STATES = (RunState.QUEUED.value, RunState.RUNNING.value)


class SubmissionNotAcceptedError(ConflictError):
    """Jobs need an accepted submission (this one is validating or rejected)."""


class JobFinishedError(ConflictError):
    """Only queued or running jobs can be cancelled."""


class ArchiveProtocolMismatchError(InvalidInputError):
    """An archive holds audio of the protocol it was validated against; no other protocol (422)."""


class JobWithoutProtocolError(ConflictError):
    """A job without a protocol cannot be re-run (create a new job instead)."""


@dataclass(frozen=True)
class NewJob:
    """A created (or idempotently replayed) job and the outbox message of its first phase.

    ``created`` False: an idempotent replay of an earlier request (``message_id`` None).
    """

    job: Job
    created: bool
    message_id: int | None = None


def queue_phase(
    session: Session, *, job_id: int, stage_id: int, phase: str, now: dt.datetime | None = None
) -> OutboxMessage:
    """Queue the task of a job's queued stage: "sent at" on the stage, the message in the outbox.

    The message goes to the broker after the caller's transaction commits (or, if the broker is
    down then, from the outbox relay within ``outbox_resend_after_s``).
    """
    job_records.mark_stage_enqueued(session, stage_id, now=now)
    return add_message(session, topic=RUN_PHASE, payload={"job_id": job_id, "phase": phase})


def start_job(session: Session, *, job_id: int) -> OutboxMessage | None:
    """Queue the job's first unfinished phase; None when there is nothing to start."""
    job = job_records.get_job(session, job_id, lock=True)
    if job.state in {s.value for s in TERMINAL_STATES}:
        return None
    stages = job_records.ensure_stages(session, job_id, job_stage_names())
    first = next((s for s in stages if s.state != RunState.SUCCEEDED.value), None)
    if first is None or first.state != RunState.QUEUED.value:
        return None
    return queue_phase(session, job_id=job_id, stage_id=first.id, phase=first.name)


def create_job(
    session: Session,
    *,
    team_id: int,
    submission: Submission,
    protocol: ProtocolRecord,
    created_by_user_id: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
    idempotency_key: str | None = None,
    check_quota: QuotaCheck | None = None,
    settings: Settings | None = None,
    phase: str | None = None,
    rerun_of: Job | None = None,
) -> NewJob:
    """Create a job of ``team_id`` on ``submission`` under ``protocol`` and queue its first phase.

    ``config`` (a re-run: copied exactly) or else the protocol's config with ``overrides`` and the
    submission's anonymizer (:func:`config.build_job_config`, within the protocol's cost limits,
    default bounds from ``settings``). The caller locked the team. An
    idempotent replay (same ``idempotency_key``) returns the first job (``created`` False) without
    the acceptance and quota checks; a new job needs an accepted submission
    (:class:`SubmissionNotAcceptedError`) and passes ``check_quota``. A copied ``config`` is
    checked against the protocol's current cost limits (:class:`CostLimitError` when they were
    lowered below it since).

    A protocol with phases puts the job in ``phase`` (a name; None: the one open now), checked by
    ``services.platform.phases.phase_for_new_job`` (409 after its end, over its limit, or for a
    submission kind the phase does not accept).
    ``rerun_of`` (an administrator's re-run with the current evaluator): the job goes into the
    old job's phase unchecked and is not charged (no quota, no phase limit).
    """
    if (
        submission.kind == ARCHIVE_KIND
        and submission.protocol_id is not None
        and submission.protocol_id != protocol.id
    ):
        raise ArchiveProtocolMismatchError(
            f"body.protocol_id: submission {submission.id} is an archive validated against "
            f"protocol {submission.protocol_id}; its jobs run under that protocol only, not "
            f"{protocol.id}"
        )
    if config is not None:
        job_config = dict(config)
        check_stored_config_cost(
            job_config, protocol, settings=settings, source="the re-run job's stored config"
        )
    else:
        job_config = build_job_config(protocol, submission, overrides or {}, settings=settings)
    replay = idempotency_key is not None and (
        job_records.find_job_by_idempotency_key(session, team_id, idempotency_key) is not None
    )
    if not replay:
        if submission.status != SubmissionStatus.ACCEPTED.value:
            state = "validating" if submission.status == "pending" else submission.status
            raise SubmissionNotAcceptedError(
                f"submission {submission.id} is {state}; jobs need an accepted submission"
            )
        if check_quota is not None and rerun_of is None:
            check_quota(session, team_id)
    # An idempotent replay answers the first job whatever the phase's state now.
    phase_id: int | None = None
    if rerun_of is not None:
        phase_id = rerun_of.phase_id
    elif not replay:
        phase_id = _checked_phase_id(
            session, protocol_id=protocol.id, team_id=team_id, name=phase, kind=submission.kind
        )
    creation = job_records.create_job(
        session,
        team_id=team_id,
        submission_id=submission.id,
        protocol_id=protocol.id,
        config=job_config,
        idempotency_key=idempotency_key,
        created_by_user_id=created_by_user_id,
        stage_names=job_stage_names(),
    )
    if not creation.created:
        return NewJob(creation.job, created=False)
    creation.job.phase_id = phase_id
    creation.job.evaluator = current_evaluator(creation.job.config_hash)
    if rerun_of is not None:
        creation.job.charged = False
        creation.job.rerun_of_job_id = rerun_of.id
    session.flush()
    message = start_job(session, job_id=creation.job.id)
    return NewJob(creation.job, created=True, message_id=message.id if message else None)


def _checked_phase_id(
    session: Session, *, protocol_id: int, team_id: int, name: str | None, kind: str
) -> int | None:
    found = phase_rules.phase_for_new_job(
        session, protocol_id=protocol_id, team_id=team_id, name=name, kind=kind
    )
    return found.id if found is not None else None


def rerun_job(
    session: Session,
    *,
    job: Job,
    created_by_user_id: int | None = None,
    idempotency_key: str | None = None,
    check_quota: QuotaCheck | None = None,
) -> NewJob:
    """A new job of ``job``'s team with the same submission, protocol and stored config (in the
    same phase, which must still accept jobs)."""
    if job.protocol_id is None:
        raise JobWithoutProtocolError(f"job {job.id} has no protocol; create a new job instead")
    phase = session.get(Phase, job.phase_id) if job.phase_id is not None else None
    return create_job(
        session,
        team_id=job.team_id,
        submission=job.submission,
        protocol=protocol_records.get_protocol_by_id(session, job.protocol_id),
        created_by_user_id=created_by_user_id,
        config=dict(job.config),
        idempotency_key=idempotency_key,
        check_quota=check_quota,
        phase=phase.name if phase is not None else None,
    )


def create_rerun(session: Session, *, job: Job, created_by_user_id: int | None = None) -> NewJob:
    """An administrator's uncharged re-run of ``job`` with the current evaluator: same team,
    submission, protocol, stored config and phase; no quota or phase checks; the evaluator is
    recorded anew. Unchanged stages are reused from the stage store."""
    if job.protocol_id is None:
        raise JobWithoutProtocolError(f"job {job.id} has no protocol; create a new job instead")
    return create_job(
        session,
        team_id=job.team_id,
        submission=job.submission,
        protocol=protocol_records.get_protocol_by_id(session, job.protocol_id),
        created_by_user_id=created_by_user_id,
        config=dict(job.config),
        rerun_of=job,
    )


def cancel_job(session: Session, *, job: Job, reason: str | None = None) -> Job:
    """Cancel a queued or running job and its unfinished stages; revoke its tasks after commit.

    A phase already running notices the state at its next progress report and stops; a task
    that could not be revoked finds the job cancelled when it claims its stage.
    """
    if RunState(job.state) in TERMINAL_STATES:
        raise JobFinishedError(
            f"job {job.id} already {job.state}; only queued or running jobs can be cancelled"
        )
    cancelled = job_records.mark_job_cancelled(session, job.id, reason=reason)
    add_message(session, topic=REVOKE_JOB, payload={"job_id": job.id})
    return cancelled


def cancel_jobs_of_submission(
    session: Session, *, submission: Submission, reason: str | None = None
) -> list[int]:
    """Cancel every queued or running job on ``submission``; returns their ids (oldest first)."""
    jobs = session.scalars(
        select(Job)
        .where(Job.submission_id == submission.id, Job.state.in_(ACTIVE_STATES))
        .order_by(Job.id)
        .with_for_update()
    ).all()
    return [cancel_job(session, job=job, reason=reason).id for job in jobs]


def fail_if_not_queued(session: Session, *, job_id: int, message_id: int) -> str | None:
    """After a new job's commit: if the broker refused its first task, fail the job.

    When the after-commit send of ``message_id`` failed and nobody is sending it now, the message
    is withdrawn, the job marked failed (not charged to quotas) and the send's error returned
    (``"<ExceptionType>: <message>"``) for the caller to report (the API: 503, retry later). A
    message sent, being sent, or not tried yet (no sender in this process: the outbox relay sends
    it) leaves the job queued: None.
    """
    message = session.get(OutboxMessage, message_id)
    if message is None or message.sent_at is not None or message.attempts == 0:
        return None
    withdrawn = withdraw_unsent(session, message_id)
    if withdrawn is None:
        return None
    error = withdrawn.last_error or "not accepted"
    job_records.transition_job(
        session,
        job_id,
        RunState.FAILED.value,
        error_message=f"could not be queued: {error}"[:1000],
    )
    return error
