"""The database records of jobs and their stages: create, read, move between states, list, count.

The rules of *when* to do these (quotas, re-runs, the phase runner, the reaper) live in the other
modules of this package; this one keeps the rows consistent: legal state changes, idempotent
creation, timestamps, log tails. Every function takes an open session first and leaves
committing to the caller; ``create_job`` uses a SAVEPOINT to stay atomic under a race.

A leaf: it imports no other aggregate. What other packages do when a job changes state (the
leaderboard summarizes a succeeded job, webhooks queue the job's event) they register as
listeners (:func:`on_job_transition`; ``reactions.register_job_reactions`` installs them where
the API and the workers start), called inside
:func:`transition_job`, in the same transaction as the state change.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.platform.hashing import canonical_json_hash
from services.platform.identity.tokens import hashes_equal
from services.platform.pagination import DEFAULT_PAGE_SIZE, keyset_page
from services.platform.rows import WindowUsage, get_row
from services.storage.blob_interface import validate_key
from services.storage.errors import ConflictError, IdempotencyConflictError, NotFoundError
from services.storage.models import (
    TERMINAL_STATES,
    Job,
    ProtocolRecord,
    RunState,
    Stage,
    Submission,
    SubmissionStatus,
)
from services.storage.types import utc_now

__all__ = [
    "JOB_TRANSITIONS",
    "LOG_TAIL_MAX_CHARS",
    "STAGE_TRANSITIONS",
    "JobCreation",
    "JobPage",
    "JobTransitionListener",
    "WindowUsage",
    "count_jobs",
    "create_job",
    "ensure_stages",
    "find_job_by_idempotency_key",
    "get_job",
    "get_stage",
    "get_stage_for_update",
    "heartbeat_stage",
    "list_jobs",
    "list_stages_in_states",
    "mark_job_cancelled",
    "mark_stage_enqueued",
    "on_job_transition",
    "transition_job",
    "transition_stage",
]

# Characters of stage log kept in the database; full logs go to the blob store as artifacts.
LOG_TAIL_MAX_CHARS = 8000

# Which state may follow which. A stage may go queued -> succeeded directly (its outputs were
# found in the cache) and back to queued after a failure or a lost worker (a retry).
JOB_TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset({RunState.RUNNING, RunState.CANCELLED, RunState.FAILED}),
    RunState.RUNNING: frozenset(
        {RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.QUEUED}
    ),
    RunState.SUCCEEDED: frozenset(),
    RunState.FAILED: frozenset(),
    RunState.CANCELLED: frozenset(),
}
STAGE_TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset(
        {RunState.RUNNING, RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED}
    ),
    RunState.RUNNING: frozenset(
        {RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.QUEUED}
    ),
    RunState.FAILED: frozenset({RunState.QUEUED}),
    RunState.SUCCEEDED: frozenset(),
    RunState.CANCELLED: frozenset(),
}


# --- jobs --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobCreation:
    """The job for a request, and whether this call created it (False: idempotent replay)."""

    job: Job
    created: bool


def create_job(
    session: Session,
    *,
    team_id: int,
    submission_id: int,
    config: Mapping[str, Any],
    protocol_id: int | None = None,
    idempotency_key: str | None = None,
    created_by_user_id: int | None = None,
    stage_names: Sequence[str] = (),
) -> JobCreation:
    """Queue a job, optionally with its planned stages (in order).

    With ``idempotency_key``: the same key and the same request (submission, protocol, config)
    return the existing job; the same key with a different request raises
    :class:`IdempotencyConflictError`. Keys are scoped per team.
    """
    config_hash = canonical_json_hash(dict(config))
    request_hash = canonical_json_hash(
        {"submission_id": submission_id, "protocol_id": protocol_id, "config_hash": config_hash}
    )
    if idempotency_key is not None:
        if not 1 <= len(idempotency_key) <= 255:
            raise ConflictError("idempotency key must be 1 to 255 characters")
        existing = find_job_by_idempotency_key(session, team_id, idempotency_key)
        if existing is not None:
            return JobCreation(_replay(existing, request_hash, idempotency_key), created=False)
    submission = get_row(session, Submission, submission_id)
    if submission.status != SubmissionStatus.ACCEPTED.value:
        raise ConflictError(f"submission {submission_id} is {submission.status}, not accepted")
    if protocol_id is not None:
        get_row(session, ProtocolRecord, protocol_id)
    if len(set(stage_names)) != len(stage_names):
        raise ConflictError(f"stage names repeat: {list(stage_names)}")
    job = Job(
        team_id=team_id,
        submission_id=submission_id,
        protocol_id=protocol_id,
        created_by_user_id=created_by_user_id,
        state=RunState.QUEUED.value,
        config=dict(config),
        config_hash=config_hash,
        idempotency_key=idempotency_key,
        request_hash=request_hash,
    )
    try:
        # A concurrent request with the same key may win the unique constraint between our
        # lookup and this insert; the savepoint lets us fall back to its job.
        with session.begin_nested():
            session.add(job)
            session.flush()
            for position, stage_name in enumerate(stage_names):
                session.add(Stage(job_id=job.id, name=stage_name, position=position))
            session.flush()
    except IntegrityError:
        if idempotency_key is None:
            raise
        existing = find_job_by_idempotency_key(session, team_id, idempotency_key)
        if existing is None:
            raise
        return JobCreation(_replay(existing, request_hash, idempotency_key), created=False)
    return JobCreation(job, created=True)


def find_job_by_idempotency_key(session: Session, team_id: int, key: str) -> Job | None:
    """The team's job created with idempotency key ``key``, if any."""
    return session.scalar(select(Job).where(Job.team_id == team_id, Job.idempotency_key == key))


def _replay(existing: Job, request_hash: str, key: str) -> Job:
    if not hashes_equal(existing.request_hash, request_hash):
        raise IdempotencyConflictError(
            f"idempotency key {key!r} was already used for job {existing.id} with a different"
            " request (submission, protocol or config differ); use a new key"
        )
    return existing


def get_job(session: Session, job_id: int, *, lock: bool = False) -> Job:
    """The job with ``job_id`` or :class:`NotFoundError` (``lock``: ``SELECT ... FOR UPDATE``)."""
    return get_row(session, Job, job_id, lock=lock)


def _check_transition(
    kind: str,
    entity_id: int,
    current: str,
    new: RunState,
    table: Mapping[RunState, frozenset[RunState]],
) -> None:
    if new not in table[RunState(current)]:
        raise ConflictError(f"{kind} {entity_id}: illegal state change {current} -> {new.value}")


JobTransitionListener = Callable[[Session, Job, RunState], None]
"""Called as ``listener(session, job, new_state)`` after a job's state changed (flushed)."""

_JOB_TRANSITION_LISTENERS: list[JobTransitionListener] = []


def on_job_transition(listener: JobTransitionListener) -> None:
    """Call ``listener`` on every job state change, in the transaction of the change and in the
    order registered (registering the same listener twice keeps one)."""
    if listener not in _JOB_TRANSITION_LISTENERS:
        _JOB_TRANSITION_LISTENERS.append(listener)


def job_transition_listeners() -> tuple[JobTransitionListener, ...]:
    """The registered listeners, in call order."""
    return tuple(_JOB_TRANSITION_LISTENERS)


def transition_job(
    session: Session,
    job_id: int,
    new_state: str,
    *,
    error_message: str | None = None,
    now: dt.datetime | None = None,
) -> Job:
    """Move a job to ``new_state`` (row-locked on PostgreSQL); stamps started/finished times,
    then calls the :func:`on_job_transition` listeners (the leaderboard's summary of a succeeded
    job, the webhook event of a finished one) in the same transaction."""
    new = RunState(new_state)
    now = now or utc_now()
    job = get_row(session, Job, job_id, lock=True)
    _check_transition("job", job.id, job.state, new, JOB_TRANSITIONS)
    job.state = new.value
    if new == RunState.RUNNING and job.started_at is None:
        job.started_at = now
    if new in TERMINAL_STATES:
        job.finished_at = now
    if error_message is not None:
        job.error_message = error_message
    session.flush()
    for listener in _JOB_TRANSITION_LISTENERS:
        listener(session, job, new)
    return job


def mark_job_cancelled(
    session: Session, job_id: int, *, reason: str | None = None, now: dt.datetime | None = None
) -> Job:
    """Cancel a queued or running job and its unfinished stages (one transaction).

    :class:`ConflictError` when the job already finished (succeeded, failed or cancelled).
    """
    now = now or utc_now()
    job = transition_job(session, job_id, RunState.CANCELLED.value, error_message=reason, now=now)
    for stage in session.scalars(
        select(Stage)
        .where(
            Stage.job_id == job_id,
            Stage.state.in_([RunState.QUEUED.value, RunState.RUNNING.value]),
        )
        .with_for_update()
    ):
        transition_stage(session, stage.id, RunState.CANCELLED.value, now=now)
    return job


@dataclass(frozen=True)
class JobPage:
    """One page of jobs, newest first; pass ``next_cursor`` to get the next (None = last)."""

    items: list[Job]
    next_cursor: str | None


def list_jobs(
    session: Session,
    *,
    team_id: int | None = None,
    state: str | None = None,
    submission_id: int | None = None,
    limit: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
    protocol_id: int | None = None,
    where: ColumnElement[bool] | None = None,
) -> JobPage:
    """Jobs newest first, keyset-paginated on the job id (see :func:`keyset_page`); ``where``:
    one more condition on :class:`Job` (e.g. the viewer's revealed jobs of challenge phases)."""
    query = select(Job)
    if where is not None:
        query = query.where(where)
    if team_id is not None:
        query = query.where(Job.team_id == team_id)
    if state is not None:
        query = query.where(Job.state == RunState(state).value)
    if submission_id is not None:
        query = query.where(Job.submission_id == submission_id)
    if protocol_id is not None:
        query = query.where(Job.protocol_id == protocol_id)
    items, next_cursor = keyset_page(session, query, Job.id, limit, cursor)
    return JobPage(items=items, next_cursor=next_cursor)


def count_jobs(
    session: Session,
    team_id: int,
    *,
    states: Iterable[str] | None = None,
    exclude_states: Iterable[str] = (),
    since: dt.datetime | None = None,
    charged_only: bool = False,
) -> WindowUsage:
    """Jobs of a team in ``states`` (default all), minus ``exclude_states``, created ``since``
    (``charged_only``: without administrators' uncharged re-runs)."""
    query = select(func.count(Job.id), func.min(Job.created_at)).where(Job.team_id == team_id)
    if charged_only:
        query = query.where(Job.charged.is_(True))
    if states is not None:
        query = query.where(Job.state.in_([RunState(s).value for s in states]))
    excluded = [RunState(s).value for s in exclude_states]
    if excluded:
        query = query.where(Job.state.not_in(excluded))
    if since is not None:
        query = query.where(Job.created_at >= since)
    count, oldest = session.execute(query).one()
    return WindowUsage(int(count), oldest)


# --- stages ------------------------------------------------------------------------------------


def get_stage(session: Session, job_id: int, name: str) -> Stage:
    """Stage ``name`` of job ``job_id``."""
    stage = session.scalar(select(Stage).where(Stage.job_id == job_id, Stage.name == name))
    if stage is None:
        raise NotFoundError(f"job {job_id} has no stage {name!r}")
    return stage


def get_stage_for_update(session: Session, stage_id: int) -> Stage:
    """Stage ``stage_id``, row-locked on PostgreSQL (``SELECT ... FOR UPDATE``)."""
    return get_row(session, Stage, stage_id, lock=True)


def transition_stage(
    session: Session,
    stage_id: int,
    new_state: str,
    *,
    worker_host: str | None = None,
    error: str | None = None,
    artifact_keys: Mapping[str, str] | None = None,
    input_hash: str | None = None,
    now: dt.datetime | None = None,
) -> Stage:
    """Move a stage to ``new_state``; entering ``running`` counts an attempt.

    ``artifact_keys`` (name -> blob key) are merged into the stage's record.
    """
    new = RunState(new_state)
    now = now or utc_now()
    stage = get_row(session, Stage, stage_id, lock=True)
    _check_transition("stage", stage.id, stage.state, new, STAGE_TRANSITIONS)
    stage.state = new.value
    if new == RunState.RUNNING:
        stage.attempts += 1
        stage.started_at = now
        stage.heartbeat_at = now
        stage.finished_at = None
        stage.error = None
        if worker_host is not None:
            stage.worker_host = worker_host
    if new in TERMINAL_STATES:
        stage.finished_at = now
        if new == RunState.SUCCEEDED:
            stage.progress = 1.0
    if error is not None:
        stage.error = error
    if input_hash is not None:
        stage.input_hash = input_hash
    if artifact_keys:
        for key in artifact_keys.values():
            validate_key(key)
        # A new dict: in-place mutation of a JSON column is invisible to the unit of work.
        stage.artifact_keys = {**(stage.artifact_keys or {}), **artifact_keys}
    session.flush()
    return stage


def heartbeat_stage(
    session: Session,
    stage_id: int,
    *,
    progress: float | None = None,
    log: str | None = None,
    now: dt.datetime | None = None,
) -> Stage:
    """Record that a running stage is alive; ``progress`` is a fraction in [0, 1].

    ``log`` is appended to the stored tail, which keeps the last ``LOG_TAIL_MAX_CHARS`` characters.
    """
    stage = get_row(session, Stage, stage_id)
    if stage.state != RunState.RUNNING.value:
        raise ConflictError(f"stage {stage_id} is {stage.state}, not running")
    if progress is not None:
        if not 0.0 <= progress <= 1.0:
            raise ConflictError(f"stage {stage_id}: progress {progress} is not in [0, 1]")
        stage.progress = progress
    if log:
        stage.log_tail = ((stage.log_tail or "") + log)[-LOG_TAIL_MAX_CHARS:]
    stage.heartbeat_at = now or utc_now()
    session.flush()
    return stage


def ensure_stages(session: Session, job_id: int, stage_names: Sequence[str]) -> list[Stage]:
    """The job's stages named ``stage_names`` (in order), creating the missing ones (queued).

    Lets a worker run a job whose creator did not plan stages; existing rows are kept as they are.
    """
    get_row(session, Job, job_id)
    existing = {
        stage.name: stage for stage in session.scalars(select(Stage).where(Stage.job_id == job_id))
    }
    next_position = max((stage.position for stage in existing.values()), default=-1) + 1
    for name in stage_names:
        if name not in existing:
            stage = Stage(job_id=job_id, name=name, position=next_position)
            next_position += 1
            session.add(stage)
            existing[name] = stage
    session.flush()
    return [existing[name] for name in stage_names]


def release_stage_attempt(session: Session, stage_id: int) -> Stage:
    """Un-count the last attempt of a queued stage: its run ended in a transient error.

    ``attempts`` counts runs lost to dead workers (``UNMASK_STAGE_MAX_ATTEMPTS``); retries after
    transient errors are counted by the task's own retry counter instead.
    """
    stage = get_row(session, Stage, stage_id, lock=True)
    if stage.state != RunState.QUEUED.value:
        raise ConflictError(f"stage {stage_id} is {stage.state}, not queued")
    stage.attempts = max(0, stage.attempts - 1)
    session.flush()
    return stage


def mark_stage_enqueued(
    session: Session, stage_id: int, *, now: dt.datetime | None = None
) -> Stage:
    """Record that the task of a queued stage was just sent (``heartbeat_at`` of a queued stage).

    For a queued stage ``heartbeat_at`` means "task last sent at"; the reaper re-sends a task
    that was sent long ago and never started (a message lost between commit and send).
    """
    stage = get_row(session, Stage, stage_id)
    if stage.state != RunState.QUEUED.value:
        raise ConflictError(f"stage {stage_id} is {stage.state}, not queued")
    stage.heartbeat_at = now or utc_now()
    session.flush()
    return stage


def list_stages_in_states(
    session: Session, states: Iterable[str], *, limit: int = 1000
) -> list[Stage]:
    """Stages in any of ``states``, oldest first (at most ``limit``): the reaper's scan."""
    wanted = [RunState(state).value for state in states]
    query = select(Stage).where(Stage.state.in_(wanted)).order_by(Stage.id.asc()).limit(limit)
    return list(session.scalars(query))
