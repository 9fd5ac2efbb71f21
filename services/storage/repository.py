"""Small service functions over the schema: the only way the API and workers write to it.

Every function takes an open :class:`~sqlalchemy.orm.Session` and leaves committing to the caller
(``Database.session_scope()``), so several calls compose into one transaction. Functions that must
be atomic on their own (``record_results_and_artifacts``, ``create_job`` under a race) use a
SAVEPOINT. Authorization (which team may see or run what) is the caller's job; these functions
check existence, invariants and state transitions.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, case, delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, joinedload

from services.storage.blobstore import validate_key
from services.storage.errors import (
    AuthenticationError,
    ConflictError,
    IdempotencyConflictError,
    NotFoundError,
    PermissionDeniedError,
)
from services.storage.models import (
    AGGREGATE_SEED,
    TERMINAL_STATES,
    ApiToken,
    Artifact,
    Job,
    Protocol,
    Result,
    RunState,
    Stage,
    Submission,
    SubmissionKind,
    SubmissionStatus,
    Team,
    TokenScope,
    User,
    Visibility,
)
from services.storage.tokens import (
    DISPLAY_PREFIX_LENGTH,
    generate_token,
    hash_token,
    hashes_equal,
)
from services.storage.types import utc_now

# Characters of stage log kept in the database; full logs go to the blob store as artifacts.
LOG_TAIL_MAX_CHARS = 8000
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500

_SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

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


def canonical_json_hash(value: Any) -> str:
    """Hex sha256 of ``value`` as canonical JSON (sorted keys, no spaces).

    Matches ``EvaluationConfig.content_hash()`` for ``config.model_dump(mode="json")``.
    """
    try:
        blob = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConflictError(f"value is not canonical JSON: {exc}") from exc
    return hashlib.sha256(blob.encode()).hexdigest()


def _get(session: Session, model: type[Any], entity_id: int, *, lock: bool = False) -> Any:
    # populate_existing: a locked read must also refresh what the session already holds.
    obj = session.get(model, entity_id, with_for_update=lock, populate_existing=lock)
    if obj is None:
        raise NotFoundError(f"{model.__tablename__}: no row with id {entity_id}")
    return obj


# --- teams and users ---------------------------------------------------------------------------


def create_team(session: Session, slug: str, display_name: str | None = None) -> Team:
    """A new team. ``slug``: lowercase letters, digits, '-', at most 64 characters, unique."""
    if not _SLUG_RE.match(slug):
        raise ConflictError(f"team slug {slug!r} must match {_SLUG_RE.pattern}")
    if session.scalar(select(Team.id).where(Team.slug == slug)) is not None:
        raise ConflictError(f"team slug {slug!r} is taken")
    team = Team(slug=slug, display_name=display_name or slug)
    session.add(team)
    session.flush()
    return team


def get_team_by_slug(session: Session, slug: str) -> Team:
    """The team with ``slug`` or :class:`NotFoundError`."""
    team = session.scalar(select(Team).where(Team.slug == slug))
    if team is None:
        raise NotFoundError(f"team {slug!r} not found")
    return team


def create_user(
    session: Session, team_id: int, email: str, display_name: str | None = None
) -> User:
    """A new user of team ``team_id``. E-mail addresses are unique, compared lowercased."""
    normalized = email.strip().lower()
    if "@" not in normalized:
        raise ConflictError(f"user email {email!r} is not an e-mail address")
    _get(session, Team, team_id)
    if session.scalar(select(User.id).where(User.email == normalized)) is not None:
        raise ConflictError(f"user email {normalized!r} is taken")
    user = User(team_id=team_id, email=normalized, display_name=display_name or normalized)
    session.add(user)
    session.flush()
    return user


# --- API tokens --------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    """A freshly issued token: ``plaintext`` is shown once and never stored."""

    token: ApiToken
    plaintext: str


def _normalize_scopes(scopes: Iterable[str]) -> list[str]:
    result: set[str] = set()
    for scope in scopes:
        try:
            result.add(TokenScope(scope).value)
        except ValueError:
            allowed = ", ".join(s.value for s in TokenScope)
            raise ConflictError(f"token scope {scope!r} is not one of {allowed}") from None
    if not result:
        raise ConflictError("a token needs at least one scope")
    return sorted(result)


def issue_token(
    session: Session,
    user_id: int,
    *,
    hmac_key: str,
    scopes: Iterable[str] = (TokenScope.READ,),
    name: str = "",
    expires_in_s: float | None = None,
    now: dt.datetime | None = None,
) -> IssuedToken:
    """Create a token for ``user_id``; only its HMAC is stored. ``expires_in_s`` in seconds."""
    user: User = _get(session, User, user_id)
    now = now or utc_now()
    plaintext = generate_token()
    token = ApiToken(
        user_id=user.id,
        name=name,
        prefix=plaintext[:DISPLAY_PREFIX_LENGTH],
        token_hash=hash_token(plaintext, hmac_key),
        scopes=_normalize_scopes(scopes),
        expires_at=None if expires_in_s is None else now + dt.timedelta(seconds=expires_in_s),
        created_at=now,
    )
    session.add(token)
    session.flush()
    return IssuedToken(token=token, plaintext=plaintext)


def verify_token(
    session: Session,
    plaintext: str,
    *,
    hmac_key: str,
    required_scope: str | None = None,
    now: dt.datetime | None = None,
    touch_interval_s: float = 60.0,
) -> ApiToken:
    """The token row for ``plaintext`` if it is valid, else :class:`AuthenticationError`.

    Valid means: known hash, not revoked, not expired, user active. ``required_scope`` missing
    from the token's scopes (``admin`` grants all) raises :class:`PermissionDeniedError`.
    ``last_used_at`` is updated when older than ``touch_interval_s`` seconds, so a busy client
    does not turn every read into a write.
    """
    now = now or utc_now()
    presented_hash = hash_token(plaintext, hmac_key)
    # User and team in the same query: every caller reads them next (is_active, the principal).
    token = session.scalar(
        select(ApiToken)
        .options(joinedload(ApiToken.user).joinedload(User.team))
        .where(ApiToken.token_hash == presented_hash)
    )
    # The lookup already matched on the hash; the constant-time compare guards against a
    # collation or case-folding database returning a near match.
    if token is None or not hashes_equal(token.token_hash, presented_hash):
        raise AuthenticationError("unknown API token")
    if token.revoked_at is not None:
        raise AuthenticationError(f"API token {token.prefix}... was revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise AuthenticationError(f"API token {token.prefix}... expired at {token.expires_at}")
    if not token.user.is_active:
        raise AuthenticationError(f"the user of API token {token.prefix}... is deactivated")
    if required_scope is not None:
        scope = TokenScope(required_scope).value
        if scope not in token.scopes and TokenScope.ADMIN.value not in token.scopes:
            raise PermissionDeniedError(
                f"API token {token.prefix}... lacks scope {scope!r} (has {token.scopes})"
            )
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() >= (
        touch_interval_s
    ):
        token.last_used_at = now
        session.flush()
    return token


def revoke_token(session: Session, token_id: int, *, now: dt.datetime | None = None) -> ApiToken:
    """Revoke a token (idempotent: a second call keeps the first revocation time)."""
    token: ApiToken = _get(session, ApiToken, token_id)
    if token.revoked_at is None:
        token.revoked_at = now or utc_now()
        session.flush()
    return token


# --- protocols ---------------------------------------------------------------------------------


def create_protocol(
    session: Session,
    name: str,
    *,
    body: Mapping[str, Any] | None = None,
    blob_key: str | None = None,
    blob_sha256: str | None = None,
    description: str = "",
) -> Protocol:
    """A new version of protocol ``name`` (versions count 1, 2, ...).

    Content is a JSON ``body`` or a blob (``blob_key`` + its ``blob_sha256``). Registering the
    same content as the latest version returns that version instead of a duplicate.
    """
    if (body is None) == (blob_key is None):
        raise ConflictError(f"protocol {name!r}: give exactly one of body or blob_key")
    if body is not None:
        content_hash = canonical_json_hash(body)
    else:
        assert blob_key is not None
        validate_key(blob_key)
        if blob_sha256 is None or not _SHA256_RE.match(blob_sha256):
            raise ConflictError(f"protocol {name!r}: blob_sha256 must be 64 lowercase hex digits")
        content_hash = blob_sha256
    latest = session.scalar(
        select(Protocol).where(Protocol.name == name).order_by(Protocol.version.desc()).limit(1)
    )
    if latest is not None and latest.content_hash == content_hash:
        return latest
    protocol = Protocol(
        name=name,
        version=1 if latest is None else latest.version + 1,
        content_hash=content_hash,
        description=description,
        body=dict(body) if body is not None else None,
        blob_key=blob_key,
    )
    session.add(protocol)
    session.flush()
    return protocol


def get_protocol(session: Session, name: str, version: int | None = None) -> Protocol:
    """Protocol ``name`` at ``version`` (default: the latest)."""
    query = select(Protocol).where(Protocol.name == name)
    if version is not None:
        query = query.where(Protocol.version == version)
    protocol = session.scalar(query.order_by(Protocol.version.desc()).limit(1))
    if protocol is None:
        suffix = "" if version is None else f" version {version}"
        raise NotFoundError(f"protocol {name!r}{suffix} not found")
    return protocol


# --- submissions -------------------------------------------------------------------------------


def create_submission(
    session: Session,
    team_id: int,
    name: str,
    kind: str,
    *,
    visibility: str = Visibility.PRIVATE,
    created_by_user_id: int | None = None,
    builtin_name: str | None = None,
    builtin_params: Mapping[str, Any] | None = None,
    archive_blob_key: str | None = None,
    archive_sha256: str | None = None,
    container_image: str | None = None,
    container_digest: str | None = None,
    accept: bool = True,
) -> Submission:
    """A new submission; accepted (and frozen) at once unless ``accept=False``.

    Each kind needs its own fields: ``builtin`` a name (+ params), ``archive`` a blob key and its
    sha256, ``container`` an image reference and a pinned ``sha256:`` digest.
    """
    try:
        kind_value = SubmissionKind(kind).value
        visibility_value = Visibility(visibility).value
    except ValueError as exc:
        raise ConflictError(f"submission {name!r}: {exc}") from None
    _get(session, Team, team_id)
    content: dict[str, Any] = {"kind": kind_value}
    if kind_value == SubmissionKind.BUILTIN:
        if not builtin_name:
            raise ConflictError(f"submission {name!r}: kind builtin needs builtin_name")
        content |= {"builtin_name": builtin_name, "builtin_params": dict(builtin_params or {})}
    elif kind_value == SubmissionKind.ARCHIVE:
        if not archive_blob_key or not archive_sha256 or not _SHA256_RE.match(archive_sha256):
            raise ConflictError(
                f"submission {name!r}: kind archive needs archive_blob_key and archive_sha256"
                " (64 lowercase hex digits)"
            )
        validate_key(archive_blob_key)
        content |= {"archive_sha256": archive_sha256}
    else:
        if not container_image or not container_digest or not _DIGEST_RE.match(container_digest):
            raise ConflictError(
                f"submission {name!r}: kind container needs container_image and"
                " container_digest of the form sha256:<64 hex digits>"
            )
        content |= {"container_digest": container_digest}
    submission = Submission(
        team_id=team_id,
        created_by_user_id=created_by_user_id,
        name=name,
        kind=kind_value,
        visibility=visibility_value,
        status=SubmissionStatus.PENDING.value,
        content_hash=canonical_json_hash(content),
        builtin_name=builtin_name if kind_value == SubmissionKind.BUILTIN else None,
        builtin_params=content.get("builtin_params"),
        archive_blob_key=archive_blob_key if kind_value == SubmissionKind.ARCHIVE else None,
        archive_sha256=archive_sha256 if kind_value == SubmissionKind.ARCHIVE else None,
        container_image=container_image if kind_value == SubmissionKind.CONTAINER else None,
        container_digest=container_digest if kind_value == SubmissionKind.CONTAINER else None,
    )
    session.add(submission)
    session.flush()
    if accept:
        accept_submission(session, submission.id)
    return submission


def accept_submission(
    session: Session, submission_id: int, *, now: dt.datetime | None = None
) -> Submission:
    """Mark a pending submission accepted; from then on its content cannot change."""
    submission: Submission = _get(session, Submission, submission_id)
    if submission.status == SubmissionStatus.ACCEPTED.value:
        return submission
    if submission.status != SubmissionStatus.PENDING.value:
        raise ConflictError(f"submission {submission_id} is {submission.status}, not pending")
    submission.status = SubmissionStatus.ACCEPTED.value
    submission.accepted_at = now or utc_now()
    session.flush()
    return submission


# --- jobs and stages ---------------------------------------------------------------------------


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
        existing = _job_by_idempotency_key(session, team_id, idempotency_key)
        if existing is not None:
            return JobCreation(_replay(existing, request_hash, idempotency_key), created=False)
    submission: Submission = _get(session, Submission, submission_id)
    if submission.status != SubmissionStatus.ACCEPTED.value:
        raise ConflictError(f"submission {submission_id} is {submission.status}, not accepted")
    if protocol_id is not None:
        _get(session, Protocol, protocol_id)
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
        existing = _job_by_idempotency_key(session, team_id, idempotency_key)
        if existing is None:
            raise
        return JobCreation(_replay(existing, request_hash, idempotency_key), created=False)
    return JobCreation(job, created=True)


def _job_by_idempotency_key(session: Session, team_id: int, key: str) -> Job | None:
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
    job: Job = _get(session, Job, job_id, lock=lock)
    return job


def _check_transition(
    kind: str,
    entity_id: int,
    current: str,
    new: RunState,
    table: Mapping[RunState, frozenset[RunState]],
) -> None:
    if new not in table[RunState(current)]:
        raise ConflictError(f"{kind} {entity_id}: illegal state change {current} -> {new.value}")


def transition_job(
    session: Session,
    job_id: int,
    new_state: str,
    *,
    error_message: str | None = None,
    now: dt.datetime | None = None,
) -> Job:
    """Move a job to ``new_state`` (row-locked on PostgreSQL); stamps started/finished times."""
    new = RunState(new_state)
    now = now or utc_now()
    job: Job = _get(session, Job, job_id, lock=True)
    _check_transition("job", job.id, job.state, new, JOB_TRANSITIONS)
    job.state = new.value
    if new == RunState.RUNNING and job.started_at is None:
        job.started_at = now
    if new in TERMINAL_STATES:
        job.finished_at = now
    if error_message is not None:
        job.error_message = error_message
    session.flush()
    if new == RunState.SUCCEEDED:
        # The leaderboard page reads this summary (services/storage/leaderboard_table.py).
        from services.storage.leaderboard_table import refresh_job_summary

        refresh_job_summary(session, job.id)
    if new in TERMINAL_STATES:
        # Outgoing webhooks: the event is stored in this transaction (services/storage/webhooks.py).
        from services.storage.webhooks import record_job_event

        record_job_event(session, job, now=now)
    return job


def get_stage(session: Session, job_id: int, name: str) -> Stage:
    """Stage ``name`` of job ``job_id``."""
    stage = session.scalar(select(Stage).where(Stage.job_id == job_id, Stage.name == name))
    if stage is None:
        raise NotFoundError(f"job {job_id} has no stage {name!r}")
    return stage


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
    stage: Stage = _get(session, Stage, stage_id, lock=True)
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
    stage: Stage = _get(session, Stage, stage_id)
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
    _get(session, Job, job_id)
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


def get_stage_for_update(session: Session, stage_id: int) -> Stage:
    """Stage ``stage_id``, row-locked on PostgreSQL (``SELECT ... FOR UPDATE``)."""
    stage: Stage = _get(session, Stage, stage_id, lock=True)
    return stage


def mark_stage_enqueued(
    session: Session, stage_id: int, *, now: dt.datetime | None = None
) -> Stage:
    """Record that the task of a queued stage was just sent (``heartbeat_at`` of a queued stage).

    For a queued stage ``heartbeat_at`` means "task last sent at"; the reaper re-sends a task
    that was sent long ago and never started (a message lost between commit and send).
    """
    stage: Stage = _get(session, Stage, stage_id)
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


def reject_submission(session: Session, submission_id: int) -> Submission:
    """Mark a pending submission rejected (e.g. its archive failed validation)."""
    submission: Submission = _get(session, Submission, submission_id)
    if submission.status == SubmissionStatus.REJECTED.value:
        return submission
    if submission.status != SubmissionStatus.PENDING.value:
        raise ConflictError(f"submission {submission_id} is {submission.status}, not pending")
    submission.status = SubmissionStatus.REJECTED.value
    session.flush()
    return submission


# --- results and artifacts ---------------------------------------------------------------------


@dataclass(frozen=True)
class ResultRow:
    """One metric value. ``seed`` = ``AGGREGATE_SEED`` for a value aggregated over seeds;
    ``value`` None or NaN = not computed."""

    scenario: str
    backend: str
    seed: int
    metric: str
    value: float | None


@dataclass(frozen=True)
class ArtifactRecord:
    """A blob produced by a job: key, size (bytes), sha256 (hex) and media type."""

    key: str
    size_bytes: int
    sha256: str
    media_type: str = "application/octet-stream"


def record_results_and_artifacts(
    session: Session,
    job_id: int,
    *,
    results: Sequence[ResultRow] = (),
    artifacts: Sequence[ArtifactRecord] = (),
    stage_id: int | None = None,
) -> None:
    """Store a job's results and artifacts all-or-nothing (one SAVEPOINT).

    A result row already present (same job, scenario, back-end, seed, metric) is overwritten, so a
    retried stage can record again. Invalid input raises before anything is written.
    """
    job: Job = _get(session, Job, job_id)
    if stage_id is not None:
        stage: Stage = _get(session, Stage, stage_id)
        if stage.job_id != job_id:
            raise ConflictError(f"stage {stage_id} belongs to job {stage.job_id}, not {job_id}")
    for artifact in artifacts:
        validate_key(artifact.key)
        if artifact.size_bytes < 0 or not _SHA256_RE.match(artifact.sha256):
            raise ConflictError(
                f"artifact {artifact.key!r}: size must be >= 0 and sha256 64 lowercase hex digits"
            )
    with session.begin_nested():
        existing = {
            (r.scenario, r.backend, r.seed, r.metric): r
            for r in session.scalars(select(Result).where(Result.job_id == job_id))
        }
        for row in results:
            value = None if row.value is None or math.isnan(row.value) else float(row.value)
            found = existing.get((row.scenario, row.backend, row.seed, row.metric))
            if found is not None:
                found.value = value
                continue
            result = Result(
                job_id=job_id,
                protocol_id=job.protocol_id,
                submission_id=job.submission_id,
                scenario=row.scenario,
                backend=row.backend,
                seed=row.seed,
                metric=row.metric,
                value=value,
            )
            session.add(result)
            existing[(row.scenario, row.backend, row.seed, row.metric)] = result
        for artifact in artifacts:
            session.add(
                Artifact(
                    job_id=job_id,
                    stage_id=stage_id,
                    key=artifact.key,
                    size_bytes=artifact.size_bytes,
                    sha256=artifact.sha256,
                    media_type=artifact.media_type,
                )
            )
        session.flush()
        if job.state == RunState.SUCCEEDED.value:
            # Results recorded after success: keep the leaderboard summary current.
            from services.storage.leaderboard_table import refresh_job_summary

            refresh_job_summary(session, job_id)


def replace_job_results(
    session: Session,
    job_id: int,
    *,
    results: Sequence[ResultRow] = (),
    artifacts: Sequence[ArtifactRecord] = (),
    stage_id: int | None = None,
) -> None:
    """Replace every result and artifact row of a job with these (one SAVEPOINT).

    A report recorded twice (a task delivered twice, a re-run after a lost worker) leaves exactly
    the last set; call it in the transaction that marks the job succeeded.
    """
    _get(session, Job, job_id)
    with session.begin_nested():
        session.execute(delete(Result).where(Result.job_id == job_id))
        session.execute(delete(Artifact).where(Artifact.job_id == job_id))
        session.flush()
        record_results_and_artifacts(
            session, job_id, results=results, artifacts=artifacts, stage_id=stage_id
        )


# --- listing -----------------------------------------------------------------------------------


def _keyset_page(
    session: Session, query: Any, id_column: Any, limit: int, cursor: str | None
) -> tuple[list[Any], str | None]:
    """Rows of ``query`` newest first (by ``id_column``) after ``cursor``, and the next cursor.

    The cursor is the last id of the previous page, so pages stay stable while new rows arrive
    (an offset would shift) and each page is one index range scan.
    """
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise ConflictError(f"page limit {limit} is not in 1..{MAX_PAGE_SIZE}")
    if cursor is not None:
        try:
            after_id = int(cursor)
        except ValueError:
            raise ConflictError(f"invalid page cursor {cursor!r}") from None
        query = query.where(id_column < after_id)
    rows = list(session.scalars(query.order_by(id_column.desc()).limit(limit + 1)))
    items = rows[:limit]
    return items, str(items[-1].id) if len(rows) > limit else None


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
) -> JobPage:
    """Jobs newest first, keyset-paginated on the job id (see :func:`_keyset_page`)."""
    query = select(Job)
    if team_id is not None:
        query = query.where(Job.team_id == team_id)
    if state is not None:
        query = query.where(Job.state == RunState(state).value)
    if submission_id is not None:
        query = query.where(Job.submission_id == submission_id)
    if protocol_id is not None:
        query = query.where(Job.protocol_id == protocol_id)
    items, next_cursor = _keyset_page(session, query, Job.id, limit, cursor)
    return JobPage(items=items, next_cursor=next_cursor)


# --- leaderboard -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaderboardEntry:
    """One row of a leaderboard. ``value`` None = the primary metric is missing (ranked last)."""

    rank: int
    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int
    value: float | None
    submitted_at: dt.datetime
    metrics: dict[str, float | None] = field(default_factory=dict)


def leaderboard(
    session: Session,
    protocol_id: int,
    metric: str,
    *,
    scenario: str,
    backend: str,
    higher_is_better: bool = True,
    viewer_team_id: int | None = None,
    limit: int = 100,
) -> list[LeaderboardEntry]:
    """Submissions ranked by ``metric`` under a protocol, scenario and back-end.

    Each submission is represented by its latest succeeded job under the protocol. Its value is
    the aggregate row (seed ``AGGREGATE_SEED``) when present, else the mean over seeds. Order:
    present values first (best first per ``higher_is_better``), then earlier submission time,
    then submission id; missing values rank last. Public submissions are listed, plus the private
    ones of ``viewer_team_id``. ``metrics`` holds every metric of the same job, scenario and
    back-end (same aggregation) for display.
    """
    latest = (
        select(
            Job.id.label("job_id"),
            Job.submission_id.label("submission_id"),
            func.row_number()
            .over(
                partition_by=Job.submission_id,
                order_by=(Job.finished_at.desc(), Job.id.desc()),
            )
            .label("recency"),
        )
        .where(Job.protocol_id == protocol_id, Job.state == RunState.SUCCEEDED.value)
        .subquery("latest")
    )
    aggregated = _aggregated_value(Result.seed, Result.value)
    values = (
        select(Result.job_id.label("job_id"), aggregated.label("value"))
        .where(
            Result.protocol_id == protocol_id,
            Result.metric == metric,
            Result.scenario == scenario,
            Result.backend == backend,
        )
        .group_by(Result.job_id)
        .subquery("metric_values")
    )
    visible = Submission.visibility == Visibility.PUBLIC.value
    if viewer_team_id is not None:
        visible = visible | (Submission.team_id == viewer_team_id)
    value_order = values.c.value.desc() if higher_is_better else values.c.value.asc()
    query = (
        select(
            Submission.id,
            Submission.name,
            Submission.created_at,
            Team.slug,
            latest.c.job_id,
            values.c.value,
        )
        .join(latest, and_(latest.c.submission_id == Submission.id, latest.c.recency == 1))
        .join(Team, Team.id == Submission.team_id)
        .outerjoin(values, values.c.job_id == latest.c.job_id)
        .where(visible)
        .order_by(
            case((values.c.value.is_(None), 1), else_=0),
            value_order,
            Submission.created_at.asc(),
            Submission.id.asc(),
        )
        .limit(limit)
    )
    rows = session.execute(query).all()
    metrics_by_job = _metrics_of_jobs(
        session, [row.job_id for row in rows], scenario=scenario, backend=backend
    )
    return [
        LeaderboardEntry(
            rank=position,
            submission_id=row.id,
            submission_name=row.name,
            team_slug=row.slug,
            job_id=row.job_id,
            value=None if row.value is None else float(row.value),
            submitted_at=row.created_at,
            metrics=metrics_by_job.get(row.job_id, {}),
        )
        for position, row in enumerate(rows, start=1)
    ]


def _aggregated_value(seed: Any, value: Any) -> Any:
    return func.coalesce(
        func.avg(case((seed == AGGREGATE_SEED, value))),
        func.avg(case((seed != AGGREGATE_SEED, value))),
    )


def _metrics_of_jobs(
    session: Session, job_ids: Sequence[int], *, scenario: str, backend: str
) -> dict[int, dict[str, float | None]]:
    if not job_ids:
        return {}
    query = (
        select(Result.job_id, Result.metric, _aggregated_value(Result.seed, Result.value))
        .where(Result.job_id.in_(job_ids), Result.scenario == scenario, Result.backend == backend)
        .group_by(Result.job_id, Result.metric)
    )
    out: dict[int, dict[str, float | None]] = {}
    for job_id, metric_name, value in session.execute(query):
        out.setdefault(job_id, {})[metric_name] = None if value is None else float(value)
    return out


# --- HTTP gateway helpers (added for api/) -------------------------------------------------------


def get_team(session: Session, team_id: int) -> Team:
    """The team with ``team_id`` or :class:`NotFoundError`."""
    team: Team = _get(session, Team, team_id)
    return team


def lock_team(session: Session, team_id: int) -> Team:
    """The team row, locked until the transaction ends (``SELECT ... FOR UPDATE`` on PostgreSQL).

    Quota checks take this lock first, so two concurrent requests of one team cannot both pass a
    check that only one of them fits under.
    """
    team: Team = _get(session, Team, team_id, lock=True)
    return team


def get_or_create_user(
    session: Session, team_id: int, email: str, display_name: str | None = None
) -> User:
    """The user with ``email`` (must belong to ``team_id``), created when missing."""
    normalized = email.strip().lower()
    user = session.scalar(select(User).where(User.email == normalized))
    if user is None:
        return create_user(session, team_id, normalized, display_name)
    if user.team_id != team_id:
        raise ConflictError(f"user email {normalized!r} belongs to another team")
    return user


def team_robot_email(slug: str) -> str:
    """The e-mail of the user that owns a team's API tokens when no person is named."""
    return f"api-robot@{slug}.teams.unmask.invalid"


def issue_team_token(
    session: Session,
    team_slug: str,
    *,
    hmac_key: str,
    scopes: Iterable[str],
    name: str = "",
    expires_in_s: float | None = None,
    email: str | None = None,
) -> IssuedToken:
    """Issue a token for team ``team_slug`` (owned by ``email``, default the team's robot user)."""
    team = get_team_by_slug(session, team_slug)
    user = get_or_create_user(session, team.id, email or team_robot_email(team.slug))
    return issue_token(
        session, user.id, hmac_key=hmac_key, scopes=scopes, name=name, expires_in_s=expires_in_s
    )


def get_token(session: Session, token_id: int) -> ApiToken:
    """The API token row with ``token_id`` or :class:`NotFoundError`."""
    token: ApiToken = _get(session, ApiToken, token_id)
    return token


def get_protocol_by_id(session: Session, protocol_id: int) -> Protocol:
    """The protocol with ``protocol_id`` or :class:`NotFoundError`."""
    protocol: Protocol = _get(session, Protocol, protocol_id)
    return protocol


def list_protocols(session: Session, *, name: str | None = None) -> list[Protocol]:
    """Every protocol version (optionally of one ``name``), by name then version."""
    query = select(Protocol)
    if name is not None:
        query = query.where(Protocol.name == name)
    return list(session.scalars(query.order_by(Protocol.name, Protocol.version)))


def get_submission(session: Session, submission_id: int) -> Submission:
    """The submission with ``submission_id`` or :class:`NotFoundError`."""
    submission: Submission = _get(session, Submission, submission_id)
    return submission


def find_submission_by_archive_key(
    session: Session, team_id: int, archive_blob_key: str
) -> Submission | None:
    """The team's archive submission stored under ``archive_blob_key``, if any."""
    return session.scalar(
        select(Submission).where(
            Submission.team_id == team_id, Submission.archive_blob_key == archive_blob_key
        )
    )


@dataclass(frozen=True)
class SubmissionPage:
    """One page of submissions, newest first; ``next_cursor`` None = last page."""

    items: list[Submission]
    next_cursor: str | None


def list_submissions(
    session: Session,
    *,
    team_id: int | None = None,
    kind: str | None = None,
    status: str | None = None,
    limit: int = DEFAULT_PAGE_SIZE,
    cursor: str | None = None,
) -> SubmissionPage:
    """Submissions newest first, keyset-paginated on the id (see :func:`_keyset_page`)."""
    query = select(Submission)
    if team_id is not None:
        query = query.where(Submission.team_id == team_id)
    if kind is not None:
        query = query.where(Submission.kind == SubmissionKind(kind).value)
    if status is not None:
        query = query.where(Submission.status == SubmissionStatus(status).value)
    items, next_cursor = _keyset_page(session, query, Submission.id, limit, cursor)
    return SubmissionPage(items=items, next_cursor=next_cursor)


def find_job_by_idempotency_key(session: Session, team_id: int, key: str) -> Job | None:
    """The team's job created with idempotency key ``key``, if any."""
    return _job_by_idempotency_key(session, team_id, key)


@dataclass(frozen=True)
class WindowUsage:
    """How many rows count against a quota, and when the oldest of them was created."""

    count: int
    oldest_at: dt.datetime | None


def count_jobs(
    session: Session,
    team_id: int,
    *,
    states: Iterable[str] | None = None,
    exclude_states: Iterable[str] = (),
    since: dt.datetime | None = None,
) -> WindowUsage:
    """Jobs of a team in ``states`` (default all), minus ``exclude_states``, created ``since``."""
    query = select(func.count(Job.id), func.min(Job.created_at)).where(Job.team_id == team_id)
    if states is not None:
        query = query.where(Job.state.in_([RunState(s).value for s in states]))
    excluded = [RunState(s).value for s in exclude_states]
    if excluded:
        query = query.where(Job.state.not_in(excluded))
    if since is not None:
        query = query.where(Job.created_at >= since)
    count, oldest = session.execute(query).one()
    return WindowUsage(int(count), oldest)


def count_submissions(
    session: Session,
    team_id: int,
    *,
    since: dt.datetime | None = None,
    exclude_statuses: Iterable[str] = (),
) -> WindowUsage:
    """Submissions of a team created ``since``, not in ``exclude_statuses``."""
    query = select(func.count(Submission.id), func.min(Submission.created_at)).where(
        Submission.team_id == team_id
    )
    excluded = [SubmissionStatus(s).value for s in exclude_statuses]
    if excluded:
        query = query.where(Submission.status.not_in(excluded))
    if since is not None:
        query = query.where(Submission.created_at >= since)
    count, oldest = session.execute(query).one()
    return WindowUsage(int(count), oldest)


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


def list_results(session: Session, job_id: int) -> list[Result]:
    """A job's result rows ordered by scenario, back-end, metric, seed."""
    return list(
        session.scalars(
            select(Result)
            .where(Result.job_id == job_id)
            .order_by(Result.scenario, Result.backend, Result.metric, Result.seed)
        )
    )


def list_artifacts(session: Session, job_id: int) -> list[Artifact]:
    """A job's artifacts in the order they were recorded."""
    return list(
        session.scalars(select(Artifact).where(Artifact.job_id == job_id).order_by(Artifact.id))
    )


def get_artifact(session: Session, job_id: int, artifact_id: int) -> Artifact:
    """Artifact ``artifact_id`` of job ``job_id`` or :class:`NotFoundError`."""
    artifact = session.get(Artifact, artifact_id)
    if artifact is None or artifact.job_id != job_id:
        raise NotFoundError(f"job {job_id} has no artifact {artifact_id}")
    return artifact
