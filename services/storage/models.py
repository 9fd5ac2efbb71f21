"""The relational schema of the platform (SQLAlchemy 2 typed declarative models).

One table per entity: teams, users, API tokens, protocols, submissions, jobs, stages, results,
artifacts. Every table has a surrogate integer key and a timezone-aware ``created_at``. Enumerated
columns are short strings guarded by CHECK constraints rather than native PostgreSQL enums, so
adding a state is a one-line migration on both PostgreSQL and SQLite.

``docs/storage.md`` explains the choices (long-format results, denormalized leaderboard keys).
Alembic migrations in ``migrations/`` are generated from these models; a test fails when the two
diverge.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    event,
    inspect,
    true,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from services import vocab
from services.storage.errors import ImmutableSubmissionError
from services.storage.types import UTCDateTime, json_type, utc_now
from services.vocab import ProtocolAsrState, RunState

# Deterministic constraint names: Alembic can drop/alter what it can name, and SQLite batch
# migrations need names to recreate tables.
NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

SHA256_HEX_LENGTH = 64
MAX_BLOB_KEY_LENGTH = 1024
# A container image name without its digest (``name[:tag]``), as stored.
MAX_CONTAINER_IMAGE_LENGTH = 512
# ``Result.seed`` of a row that aggregates over seeds (one definition, services.vocab).
AGGREGATE_SEED = vocab.AGGREGATE_SEED


class TokenScope(StrEnum):
    """What an API token may do. ``admin`` implies the other two."""

    SUBMIT = "submit"
    READ = "read"
    ADMIN = "admin"


SUBMISSION_KIND_VALUES: tuple[str, ...] = ("builtin", "archive", "container", "service")
"""The anonymizer kinds the ``submissions`` table's checks admit (an Alembic revision changes
them). What each kind means and stores is ``services.anonymizers.kinds``; a test keeps the two
lists equal."""


class Visibility(StrEnum):
    """Whether a submission (and its results) appear on public leaderboards."""

    PUBLIC = "public"
    PRIVATE = "private"


class SubmissionStatus(StrEnum):
    """Lifecycle of a submission; content is frozen once ``accepted``."""

    PENDING = "pending"  # e.g. archive upload not verified yet
    ACCEPTED = "accepted"
    REJECTED = "rejected"


def _in_check(column: str, enum: type[StrEnum] | tuple[str, ...]) -> str:
    values = ", ".join(f"'{member}'" for member in enum)
    return f"{column} IN ({values})"


class Base(DeclarativeBase):
    """Declarative base carrying the naming convention."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Team(Base):
    """A group of users that owns submissions and jobs."""

    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)

    users: Mapped[list[User]] = relationship(back_populates="team", passive_deletes=True)


class User(Base):
    """A person (or a CI robot) belonging to one team."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)

    team: Mapped[Team] = relationship(back_populates="users")
    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user", passive_deletes=True)


class ApiToken(Base):
    """A bearer token. Only ``HMAC-SHA256(Settings.token_hmac_key, token)`` is stored."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    # The first characters of the plaintext, safe to show so a user can tell tokens apart.
    prefix: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH), unique=True)
    scopes: Mapped[list[str]] = mapped_column(json_type())
    expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_used_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)

    user: Mapped[User] = relationship(back_populates="tokens")

    @property
    def revoked(self) -> bool:
        """Whether the token has been revoked."""
        return self.revoked_at is not None


class TrustedSubmitter(Base):
    """A CI workflow allowed to submit for a team without a stored secret (OpenID Connect).

    An ID token of ``issuer`` whose repository id (and owner id, when set) match, and whose ref,
    environment and workflow file match the optional constraints, is exchanged for a short-lived
    token of the team (services/platform/identity/trusted.py). Pull-request events are refused
    unless ``allow_pull_requests``.
    """

    __tablename__ = "trusted_submitters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    issuer: Mapped[str] = mapped_column(String(512))
    # GitHub ``repository`` / GitLab ``project_path``: shown, matched as well as the id.
    repository: Mapped[str] = mapped_column(String(256))
    # GitHub ``repository_id`` / GitLab ``project_id``: survives a rename or a re-created name.
    repository_id: Mapped[str] = mapped_column(String(64), index=True)
    # GitHub ``repository_owner_id`` / GitLab ``namespace_id``.
    repository_owner_id: Mapped[str | None] = mapped_column(String(64))
    ref: Mapped[str | None] = mapped_column(String(256))
    environment: Mapped[str | None] = mapped_column(String(256))
    workflow: Mapped[str | None] = mapped_column(String(512))
    allow_pull_requests: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


class OidcExchange(Base):
    """The audit row of one ID token exchanged for a short-lived API token.

    ``(issuer, jti)`` is unique: an ID token is exchanged once (a replay is refused).
    """

    __tablename__ = "oidc_exchanges"
    __table_args__ = (UniqueConstraint("issuer", "jti"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    trusted_submitter_id: Mapped[int | None] = mapped_column(
        ForeignKey("trusted_submitters.id", ondelete="SET NULL"), index=True
    )
    token_id: Mapped[int | None] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="SET NULL"), index=True
    )
    issuer: Mapped[str] = mapped_column(String(512))
    jti: Mapped[str] = mapped_column(String(256))
    subject: Mapped[str] = mapped_column(String(512))
    repository: Mapped[str] = mapped_column(String(256))
    ref: Mapped[str | None] = mapped_column(String(256))
    run_id: Mapped[str | None] = mapped_column(String(64))
    event_name: Mapped[str | None] = mapped_column(String(64))
    id_token_expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


class ProtocolRecord(Base):
    """A versioned evaluation protocol (the config every job on a leaderboard shares)."""

    __tablename__ = "protocols"
    __table_args__ = (
        UniqueConstraint("name", "version"),
        CheckConstraint("version >= 1", name="version_positive"),
        CheckConstraint("body IS NOT NULL OR blob_key IS NOT NULL", name="body_or_blob"),
        CheckConstraint(
            "asr_state IS NULL OR " + _in_check("asr_state", ProtocolAsrState), name="asr_state"
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    version: Mapped[int] = mapped_column(Integer)
    content_hash: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH), index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    body: Mapped[dict[str, Any] | None] = mapped_column(json_type())
    blob_key: Mapped[str | None] = mapped_column(String(MAX_BLOB_KEY_LENGTH))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    # The utility ASR trained at registration (NULL state: the protocol trains none: no WER, or
    # an operator's pretrained ASR); ``asr_key`` names its ``utility-asr`` stage once ready.
    asr_state: Mapped[str | None] = mapped_column(String(16))
    asr_key: Mapped[str | None] = mapped_column(String(128))
    asr_error: Mapped[str | None] = mapped_column(Text)
    asr_updated_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class PhaseVisibility(StrEnum):
    """When a phase's results are shown to everyone (``services/platform/phases/``)."""

    PUBLIC = "public"  # as they finish
    HIDDEN = "hidden"  # to the submitting team and admins only, until ``reveal_at``


class Phase(Base):
    """One period of a protocol's challenge (e.g. development, evaluation): when jobs may be
    created under it, how many per team, and when its results are shown to everyone."""

    __tablename__ = "phases"
    __table_args__ = (
        UniqueConstraint("protocol_id", "name"),
        CheckConstraint(_in_check("visibility", PhaseVisibility), name="visibility"),
        CheckConstraint("ends_at IS NULL OR ends_at > starts_at", name="window"),
        CheckConstraint("submission_limit IS NULL OR submission_limit >= 1", name="limit_positive"),
        CheckConstraint("visibility <> 'hidden' OR reveal_at IS NOT NULL", name="hidden_reveal"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    protocol_id: Mapped[int] = mapped_column(
        ForeignKey("protocols.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer)
    starts_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    ends_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # Jobs per team in this phase (failed, cancelled and uncharged re-runs not counted).
    submission_limit: Mapped[int | None] = mapped_column(Integer)
    visibility: Mapped[str] = mapped_column(String(16), default=PhaseVisibility.PUBLIC.value)
    reveal_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    # The submission kinds whose jobs the phase accepts (None: every kind), e.g. ["container"]
    # for an official phase that must rerun the code.
    allowed_kinds: Mapped[list[str] | None] = mapped_column(json_type())
    # When the webhook events held back until the reveal were recorded (None: not yet).
    events_released_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


class Submission(Base):
    """An anonymizer handed in for evaluation. Its content is immutable once accepted."""

    __tablename__ = "submissions"
    __table_args__ = (
        CheckConstraint(_in_check("kind", SUBMISSION_KIND_VALUES), name="kind"),
        CheckConstraint(_in_check("visibility", Visibility), name="visibility"),
        CheckConstraint(_in_check("status", SubmissionStatus), name="status"),
        CheckConstraint(
            "(kind = 'builtin' AND builtin_name IS NOT NULL)"
            " OR (kind = 'archive' AND archive_blob_key IS NOT NULL)"
            " OR (kind = 'container' AND container_image IS NOT NULL"
            " AND container_digest IS NOT NULL)"
            " OR (kind = 'service' AND service_url IS NOT NULL AND service_secret IS NOT NULL)",
            name="kind_fields",
        ),
        Index("ix_submissions_team_id_created_at", "team_id", "created_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    created_by_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(16))
    visibility: Mapped[str] = mapped_column(String(16), default=Visibility.PRIVATE.value)
    status: Mapped[str] = mapped_column(String(16), default=SubmissionStatus.ACCEPTED.value)
    # sha256 of the canonical JSON of the kind-specific fields: equal content, equal hash.
    content_hash: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH), index=True)
    builtin_name: Mapped[str | None] = mapped_column(String(128))
    builtin_params: Mapped[dict[str, Any] | None] = mapped_column(json_type())
    archive_blob_key: Mapped[str | None] = mapped_column(String(MAX_BLOB_KEY_LENGTH))
    archive_sha256: Mapped[str | None] = mapped_column(String(SHA256_HEX_LENGTH))
    # Archives only: the archive's size (bytes), charged to the team's storage quota.
    archive_size_bytes: Mapped[int | None] = mapped_column(BigInteger)
    # Why a submission was rejected (e.g. the archive's validation problems), shown to the team.
    rejection_reason: Mapped[str | None] = mapped_column(Text)
    # Shown on the leaderboard and the submission page (services/platform/submissions/info.py).
    description: Mapped[str | None] = mapped_column(Text)
    paper_url: Mapped[str | None] = mapped_column(String(2048))
    code_url: Mapped[str | None] = mapped_column(String(2048))
    # Archives only: the protocol whose audio the archive anonymizes (its jobs run under it).
    protocol_id: Mapped[int | None] = mapped_column(
        ForeignKey("protocols.id", ondelete="RESTRICT"), index=True
    )
    container_image: Mapped[str | None] = mapped_column(String(MAX_CONTAINER_IMAGE_LENGTH))
    container_digest: Mapped[str | None] = mapped_column(String(128))
    # Services only (services/anonymizers/kinds/service.py): the endpoint, the request-signing
    # secret and the maker's credential header (name; value), secrets Fernet-encrypted with
    # ``Settings.service_secret_key``.
    service_url: Mapped[str | None] = mapped_column(String(2048))
    service_secret: Mapped[str | None] = mapped_column(Text)
    service_credential_header: Mapped[str | None] = mapped_column(String(128))
    service_credential: Mapped[str | None] = mapped_column(Text)
    accepted_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)

    team: Mapped[Team] = relationship()


# Columns an accepted submission may still change: its labels, its state and bookkeeping. Every
# other column (the team, the kind and each kind's own columns, the content hash, accepted_at)
# defines what was evaluated; changing it would silently re-label existing results. Listed this
# way round, the columns of a new anonymizer kind are immutable without being named here.
SUBMISSION_MUTABLE_COLUMNS: frozenset[str] = frozenset(
    {
        "name",
        "visibility",
        "status",
        "rejection_reason",
        "description",
        "paper_url",
        "code_url",
        "created_by_user_id",
        "created_at",
    }
)


def submission_content_columns() -> tuple[str, ...]:
    """The columns of ``submissions`` an accepted submission may not change."""
    return tuple(
        c.key for c in Submission.__table__.columns if c.key not in SUBMISSION_MUTABLE_COLUMNS
    )


@event.listens_for(Submission, "before_update")
def _refuse_changes_to_accepted_submission(_mapper: Any, _connection: Any, target: Any) -> None:
    state = inspect(target)
    status_history = state.attrs.status.history
    was_accepted = (
        status_history.deleted[0] if status_history.deleted else target.status
    ) == SubmissionStatus.ACCEPTED.value
    if not was_accepted:
        return
    changed = [name for name in submission_content_columns() if state.attrs[name].history.deleted]
    if status_history.deleted and target.status != SubmissionStatus.ACCEPTED.value:
        changed.append("status")
    if changed:
        raise ImmutableSubmissionError(
            f"submission {target.id} is accepted and immutable; refused change to "
            f"{', '.join(changed)} (create a new submission instead)"
        )


class Job(Base):
    """One evaluation of a submission under a config (usually a protocol)."""

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(_in_check("state", RunState), name="state"),
        UniqueConstraint("team_id", "idempotency_key"),
        Index("ix_jobs_team_id_id", "team_id", "id"),
        Index("ix_jobs_state_created_at", "state", "created_at"),
        Index("ix_jobs_protocol_id_submission_id_state", "protocol_id", "submission_id", "state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    # RESTRICT: a protocol that has results must not vanish under its leaderboard.
    protocol_id: Mapped[int | None] = mapped_column(ForeignKey("protocols.id", ondelete="RESTRICT"))
    created_by_user_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True
    )
    state: Mapped[str] = mapped_column(String(16), default=RunState.QUEUED.value)
    config: Mapped[dict[str, Any]] = mapped_column(json_type())
    config_hash: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH), index=True)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    # sha256 of the request (submission, protocol, config): same key + other body = conflict.
    request_hash: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH))
    error_message: Mapped[str | None] = mapped_column(Text)
    # The challenge phase the job was created in (None: the protocol has no phases).
    phase_id: Mapped[int | None] = mapped_column(
        ForeignKey("phases.id", ondelete="RESTRICT"), index=True
    )
    # What evaluates it (services/platform/evaluator/): Unmask version, git commit, stage-key
    # versions, config hash and their digest ``scorer``.
    evaluator: Mapped[dict[str, Any] | None] = mapped_column(json_type())
    # An administrator's re-run with the current evaluator: the job it re-evaluates.
    rerun_of_job_id: Mapped[int | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), index=True
    )
    # False: not counted against the team's quotas or its phase's submission limit.
    charged: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    submission: Mapped[Submission] = relationship()
    protocol: Mapped[ProtocolRecord | None] = relationship()
    stages: Mapped[list[Stage]] = relationship(
        back_populates="job", order_by="Stage.position", passive_deletes=True
    )


class Stage(Base):
    """One step of a job's plan (anonymize, train, embed, score, ...)."""

    __tablename__ = "stages"
    __table_args__ = (
        CheckConstraint(_in_check("state", RunState), name="state"),
        CheckConstraint("progress >= 0 AND progress <= 1", name="progress_fraction"),
        CheckConstraint("attempts >= 0", name="attempts_nonnegative"),
        UniqueConstraint("job_id", "name"),
        Index("ix_stages_state_heartbeat_at", "state", "heartbeat_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default=RunState.QUEUED.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker_host: Mapped[str | None] = mapped_column(String(255))
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    log_tail: Mapped[str] = mapped_column(Text, default="")
    artifact_keys: Mapped[dict[str, str]] = mapped_column(json_type(), default=dict)
    # Content hash of the stage's inputs + config: the cache key of its outputs.
    input_hash: Mapped[str | None] = mapped_column(String(SHA256_HEX_LENGTH), index=True)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    started_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())

    job: Mapped[Job] = relationship(back_populates="stages")


class Result(Base):
    """One metric value of one job (long format: one row per attacker/scenario/back-end/seed/
    metric). ``attacker`` names the zoo attacker (``services.pipeline.zoo``); a job without a
    zoo has the one attacker ``baseline``.

    ``protocol_id`` and ``submission_id`` repeat the job's, so a leaderboard reads one index
    range (protocol, metric, scenario, back-end) instead of joining through jobs. ``value`` NULL
    means "not computed" (it ranks last).
    """

    __tablename__ = "results"
    __table_args__ = (
        UniqueConstraint("job_id", "attacker", "scenario", "backend", "seed", "metric"),
        Index(
            "ix_results_leaderboard",
            "protocol_id",
            "metric",
            "scenario",
            "backend",
            "job_id",
            "value",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    protocol_id: Mapped[int | None] = mapped_column(ForeignKey("protocols.id", ondelete="RESTRICT"))
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    attacker: Mapped[str] = mapped_column(String(32), default="baseline", server_default="baseline")
    scenario: Mapped[str] = mapped_column(String(64))
    backend: Mapped[str] = mapped_column(String(64))
    # AGGREGATE_SEED (-1) = an aggregate over seeds; not NULL, because NULLs never collide in the
    # unique key.
    seed: Mapped[int] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(64))
    value: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


class Artifact(Base):
    """A blob a job produced (plot, scores, checkpoint), with its size and sha256."""

    __tablename__ = "artifacts"
    __table_args__ = (
        UniqueConstraint("job_id", "key"),
        CheckConstraint("size_bytes >= 0", name="size_nonnegative"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"))
    stage_id: Mapped[int | None] = mapped_column(
        ForeignKey("stages.id", ondelete="SET NULL"), index=True
    )
    # Blobs are content-addressed and may be shared between jobs: indexed, not unique.
    key: Mapped[str] = mapped_column(String(MAX_BLOB_KEY_LENGTH), index=True)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(SHA256_HEX_LENGTH))
    media_type: Mapped[str] = mapped_column(String(255), default="application/octet-stream")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


# --- outgoing webhooks (docs/api.md "Webhooks") --------------------------------------------------


class WebhookDeliveryState(StrEnum):
    """Lifecycle of one event sent to one endpoint."""

    PENDING = "pending"  # not delivered yet; next try at ``next_attempt_at``
    SUCCEEDED = "succeeded"  # a 2xx answer
    FAILED = "failed"  # attempts exhausted, or the URL is not allowed


class WebhookEndpoint(Base):
    """A URL a team registered to receive job events, with its signing secret.

    The secret must be usable for signing, so it is stored as issued (``whsec_`` + base64); the
    API shows it once, at creation.
    """

    __tablename__ = "webhook_endpoints"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2048))
    description: Mapped[str] = mapped_column(String(200), default="")
    secret: Mapped[str] = mapped_column(String(128))
    # Event types delivered here (``job.succeeded``, ``job.failed``, ``job.cancelled``).
    event_types: Mapped[list[str]] = mapped_column(json_type())
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


class WebhookDelivery(Base):
    """One event for one endpoint (the transactional outbox row) and its delivery state."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        CheckConstraint(_in_check("state", WebhookDeliveryState), name="state"),
        CheckConstraint("attempts >= 0", name="attempts_nonnegative"),
        # The sweeper's scan: pending deliveries that are due.
        Index("ix_webhook_deliveries_state_next_attempt_at", "state", "next_attempt_at"),
        Index("ix_webhook_deliveries_endpoint_id_id", "endpoint_id", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("webhook_endpoints.id", ondelete="CASCADE"))
    job_id: Mapped[int | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="CASCADE"), index=True
    )
    # The ``webhook-id`` header: the same for every retry of this delivery (receivers dedupe).
    event_id: Mapped[str] = mapped_column(String(64), unique=True)
    event_type: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(json_type())
    state: Mapped[str] = mapped_column(String(16), default=WebhookDeliveryState.PENDING.value)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    last_status_code: Mapped[int | None] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    delivered_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)

    endpoint: Mapped[WebhookEndpoint] = relationship()
    attempt_log: Mapped[list[WebhookAttempt]] = relationship(
        order_by="WebhookAttempt.number", passive_deletes=True
    )


class WebhookAttempt(Base):
    """One HTTP try of a delivery: the delivery log the API shows."""

    __tablename__ = "webhook_attempts"
    __table_args__ = (UniqueConstraint("delivery_id", "number"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    delivery_id: Mapped[int] = mapped_column(
        ForeignKey("webhook_deliveries.id", ondelete="CASCADE")
    )
    number: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[float] = mapped_column(Float)
    response_excerpt: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


class JobSummaryRecord(Base):
    """The leaderboard metrics of a succeeded job, precomputed when it succeeds.

    ``metric_values`` maps ``"<scenario>|<backend>|<metric>"`` to the value aggregated like the
    leaderboard (the ``AGGREGATE_SEED`` row when present, else the mean over seeds; None =
    missing), for every metric the job recorded. The leaderboard page and its JSON read one of
    these per submission instead of aggregating thousands of result rows.
    """

    __tablename__ = "job_summaries"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    protocol_id: Mapped[int | None] = mapped_column(
        ForeignKey("protocols.id", ondelete="RESTRICT"), index=True
    )
    metric_values: Mapped[dict[str, float | None]] = mapped_column(json_type())
    trustworthy: Mapped[bool | None] = mapped_column(Boolean)
    """The report's ``trust.trustworthy``; None = the report has no trust block (unknown)."""
    trust_reasons: Mapped[list[dict[str, Any]] | None] = mapped_column(json_type())
    """The report's ``trust.reasons`` (code, message, value, threshold), as read."""
    det_curves: Mapped[dict[str, Any] | None] = mapped_column(json_type())
    """``{"<scenario>|<backend>": {"seed", "pfa", "pmiss", "eer"}}``: the DET points of
    each (scenario, back-end)'s first seed in the report (probabilities in [0, 1])."""
    worst_case: Mapped[dict[str, Any] | None] = mapped_column(json_type())
    """The report's ``worst_case`` block (an attacker zoo's worst case per scenario: attacker,
    back-end, EER); None = the job ran one attacker."""
    challenger: Mapped[dict[str, Any] | None] = mapped_column(json_type())
    """The report's ``challenger`` block (a pretrained verifier scored on the verdict's trials,
    ``services.pipeline.challenger``); None = the report has none."""
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)


# --- the outbox (services/platform/outbox/) -------------------------------------------------------


class OutboxMessage(Base):
    """Work to hand to the workers once the transaction that wrote this row has committed.

    Written in the same transaction as the state change it follows (a phase queued, a job
    cancelled, a webhook event, an archive uploaded), so the message exists exactly when the change
    committed. ``sent_at`` is set only after the broker accepted the message; until then a sender
    may claim it (``claimed_at``, a lease) from ``available_at`` on.
    """

    __tablename__ = "outbox_messages"
    __table_args__ = (
        CheckConstraint("attempts >= 0", name="attempts_nonnegative"),
        # The re-send scan: unsent messages that are due, oldest first.
        Index("ix_outbox_messages_sent_at_available_at", "sent_at", "available_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # What to send: ``run_phase``, ``revoke_job``, ``validate_archive``, ``deliver_webhook``.
    topic: Mapped[str] = mapped_column(String(64))
    payload: Mapped[dict[str, Any]] = mapped_column(json_type())
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    available_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    claimed_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text)


# --- presigned archive uploads (services/platform/archives/upload_records.py) --------------------


class ArchiveUploadState(StrEnum):
    """Lifecycle of a presigned archive upload."""

    OPEN = "open"  # URLs handed out; the client may still upload and complete
    COMPLETED = "completed"  # a submission holds the blob now
    ABORTED = "aborted"  # expired unfinished: multipart upload aborted, partial blob deleted


class ArchiveUpload(Base):
    """A presigned (multipart) archive upload handed out by the API, until it completes.

    Recorded when the URLs are handed out, so an upload that is never completed is charged to the
    team's storage quota (its declared size) and aborted by the reaper once its ticket expired.
    """

    __tablename__ = "archive_uploads"
    __table_args__ = (
        CheckConstraint(_in_check("state", ArchiveUploadState), name="state"),
        CheckConstraint("size_bytes >= 0", name="size_bytes_nonnegative"),
        Index("ix_archive_uploads_state_expires_at", "state", "expires_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    blob_key: Mapped[str] = mapped_column(String(MAX_BLOB_KEY_LENGTH), unique=True)
    # The S3 multipart upload id; None for a single presigned PUT (local blob store).
    s3_upload_id: Mapped[str | None] = mapped_column(String(1024))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    state: Mapped[str] = mapped_column(String(16), default=ArchiveUploadState.OPEN.value)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())


class StageClaimState(StrEnum):
    """Where the computation of one stage key stands (``services/pipeline/stage_claims.py``)."""

    COMPUTING = "computing"  # ``owner`` computes it while ``lease_expires_at`` is in the future
    PUBLISHED = "published"  # its folder is in the blob store (``stages/<stage>/<key>``)
    RELEASED = "released"  # its computation failed: the next worker that asks takes it


class StageClaim(Base):
    """The cross-host claim of one content-addressed stage key, kept after publication.

    Not tied to a job: the same key serves every job whose inputs hash to it. ``computations``
    counts how often a worker acquired the key to compute it (1 when nothing was redone).
    """

    __tablename__ = "stage_claims"
    __table_args__ = (
        CheckConstraint(_in_check("state", StageClaimState), name="state"),
        CheckConstraint("computations >= 0", name="computations_nonnegative"),
        UniqueConstraint("stage", "key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    stage: Mapped[str] = mapped_column(String(64))
    key: Mapped[str] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(16), default=StageClaimState.COMPUTING.value)
    # host:pid:tag of the process that computes (or last computed) the key.
    owner: Mapped[str] = mapped_column(String(255))
    lease_expires_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
    computations: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime(), default=utc_now)
    published_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime())
