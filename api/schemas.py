"""Request and response bodies of the HTTP API (Pydantic models; they are the OpenAPI schemas).

Conversions from storage rows live next to the models (``*.of(row)``) so every route renders an
entity the same way.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

from annotated_types import Ge, Le
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
)

from services.anonymizers.registry import BUILTIN_NAMES
from services.errors import InvalidInputError
from services.metrics import catalogue
from services.pipeline.config import EvaluationConfig
from services.platform.jobs.config import COST_KNOB_NAMES, PROTOCOL_FIXED_FIELDS
from services.platform.submissions import info as submission_info
from services.storage.models import (
    ApiToken,
    Artifact,
    Job,
    Protocol,
    Result,
    Stage,
    Submission,
    SubmissionKind,
    SubmissionStatus,
)

Visibility = Literal["public", "private"]
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled"]
# API-level submission status: an archive whose upload finished but which the workers have not
# validated yet is "validating" (stored as "pending").
SubmissionApiStatus = Literal["validating", "accepted", "rejected"]
Scope = Literal["submit", "read", "admin"]

# name[:tag]@sha256:<64 hex>: a tag alone can be re-pointed to other code, a digest cannot.
PINNED_IMAGE_RE = re.compile(
    r"^(?P<name>[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9._-]{0,127}))?"
    r"@(?P<digest>sha256:[0-9a-f]{64})$"
)
# The same rule for the OpenAPI document (no named groups: portable regex syntax).
PINNED_IMAGE_PATTERN = re.sub(r"\(\?P<\w+>", "(?:", PINNED_IMAGE_RE.pattern)
SHA256_HEX_RE = re.compile(r"^[0-9a-f]{64}$")
SHA256_HEX_PATTERN = SHA256_HEX_RE.pattern

# --- shared field types: one rule per kind of value ------------------------------------------

# Ids are PostgreSQL INTEGER columns: a larger path, query or body id is a 422, not a 500.
DB_ID_MAX = 2**31 - 1
DbId = Annotated[int, Ge(1), Le(DB_ID_MAX)]
# Page cursors are the last id of the previous page, as a decimal string.
CURSOR_PATTERN = r"^[0-9]{1,10}$"

# PostgreSQL text and jsonb cannot store NUL (U+0000); refusing it here names the field.
NO_NUL_PATTERN = r"^[^\x00]*$"
NUL_MESSAGE = "must not contain the NUL character (U+0000)"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError(NUL_MESSAGE)
    return value


def _cursor_in_range(value: str) -> str:
    if int(value) > DB_ID_MAX:
        raise ValueError(f"cursor must be at most {DB_ID_MAX} (a `next_cursor` value)")
    return value


def _json_without_nul(value: Any, path: str = "") -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{path or 'value'}: {NUL_MESSAGE}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _json_without_nul(key, f"{path}.{key}".lstrip(".") if "\x00" not in key else path)
            _json_without_nul(item, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _json_without_nul(item, f"{path}[{index}]")


def _object_without_nul(value: dict[str, Any]) -> dict[str, Any]:
    _json_without_nul(value)
    return value


def _text_field(max_length: int, min_length: int = 0) -> Any:
    return Field(
        min_length=min_length,
        max_length=max_length,
        json_schema_extra={"pattern": NO_NUL_PATTERN},
    )


def Text(max_length: int, *, min_length: int = 0) -> Any:
    """Free text stored or filtered on: at most ``max_length`` characters, no NUL."""
    # The pattern is documented; the validator enforces it, with a message naming the NUL.
    return Annotated[str, _text_field(max_length, min_length), AfterValidator(_no_nul)]


# A page cursor (the `next_cursor` of the previous page).
Cursor = Annotated[
    str,
    Field(pattern=CURSOR_PATTERN, description="`next_cursor`."),
    AfterValidator(_cursor_in_range),
]
# A JSON object stored in a jsonb column: no NUL in any key or string.
JsonObject = Annotated[dict[str, Any], AfterValidator(_object_without_nul)]
# Spelled out (not ``Text(...)``) so that type checkers see them as type aliases.
NameText = Annotated[str, _text_field(200, 1), AfterValidator(_no_nul)]
ShortText = Annotated[str, _text_field(200), AfterValidator(_no_nul)]
LabelText = Annotated[str, _text_field(64), AfterValidator(_no_nul)]
BuiltinName = Literal[BUILTIN_NAMES]  # type: ignore[valid-type]


class StrictModel(BaseModel):
    """Request bodies refuse unknown fields (a typo is an error, not a silent default)."""

    model_config = ConfigDict(extra="forbid")


# --- identity ----------------------------------------------------------------------------------


class QuotaUsage(BaseModel):
    """One quota: the limit and what the team uses now."""

    limit: int
    used: int
    window: str = Field(description="`rolling 24 h` or `now` (concurrent).")


class Quotas(BaseModel):
    """The team's quotas (failed/cancelled jobs and rejected submissions are not charged)."""

    submissions_per_day: QuotaUsage
    jobs_per_day: QuotaUsage
    concurrent_jobs: QuotaUsage
    archive_storage_bytes: QuotaUsage = Field(
        description="Bytes of stored archives, open presigned uploads and archives rejected in "
        "the last 24 h."
    )


class Me(BaseModel):
    """The caller: token, team and scopes."""

    token_prefix: str
    user_id: int
    team_id: int
    team_slug: str
    scopes: list[str]
    quotas: Quotas


# --- admin -------------------------------------------------------------------------------------


class TeamCreate(StrictModel):
    """A new team."""

    slug: str = Field(
        pattern=r"^[a-z0-9][a-z0-9-]{0,63}$",
        description="Lowercase letters, digits and '-', at most 64 characters; unique.",
        examples=["speech-lab"],
    )
    display_name: ShortText | None = None


class TeamOut(BaseModel):
    """A team."""

    id: int
    slug: str
    display_name: str
    created_at: dt.datetime


class TokenCreate(StrictModel):
    """A new API token for a team."""

    team: LabelText = Field(description="The team's slug.", examples=["speech-lab"])
    scopes: list[Scope] = Field(min_length=1, examples=[["submit", "read"]])
    name: ShortText = Field("", description="A label (e.g. `ci`).")
    expires_days: float | None = Field(
        None, gt=0, le=3650, description="Lifetime in days; null = no expiry."
    )
    email: Text(254, min_length=3) | None = Field(  # type: ignore[valid-type]
        None, description="Owner; default: the team's robot user (created on first use)."
    )


class TokenOut(BaseModel):
    """An API token (never its plaintext, except once at creation)."""

    id: int
    prefix: str
    name: str
    team_slug: str
    user_email: str
    scopes: list[str]
    expires_at: dt.datetime | None
    last_used_at: dt.datetime | None
    revoked_at: dt.datetime | None
    created_at: dt.datetime

    @classmethod
    def of(cls, token: ApiToken) -> TokenOut:
        return cls(
            id=token.id,
            prefix=token.prefix,
            name=token.name,
            team_slug=token.user.team.slug,
            user_email=token.user.email,
            scopes=list(token.scopes),
            expires_at=token.expires_at,
            last_used_at=token.last_used_at,
            revoked_at=token.revoked_at,
            created_at=token.created_at,
        )


class TokenIssued(TokenOut):
    """A freshly issued token; ``token`` is the plaintext, shown this once and never again."""

    token: str


# --- protocols ---------------------------------------------------------------------------------


class LeaderboardSpec(StrictModel):
    """What a protocol's leaderboard ranks by (defaults of the leaderboard route)."""

    metric: LabelText = Field(
        catalogue.HEADLINE.key, description="Primary metric (a result row's `metric`)."
    )
    scenario: LabelText | None = Field(
        None, description="Scenario; default `semi-informed` if evaluated, else the last one."
    )
    backend: LabelText | None = Field(None, description="Scoring back-end; default the first one.")
    higher_is_better: StrictBool = Field(
        True, description="EER: higher = more privacy = better (the default)."
    )


class CostLimits(StrictModel):
    """Per-protocol upper bounds of a job's cost knobs (null = the server's default)."""

    epochs: int | None = Field(None, ge=1, le=DB_ID_MAX, description="training.epochs")
    seeds: int | None = Field(None, ge=1, le=DB_ID_MAX, description="Entries of `seeds`.")
    batch_size: int | None = Field(None, ge=2, le=DB_ID_MAX, description="training.batch_size")
    bootstrap_resamples: int | None = Field(
        None, ge=0, le=DB_ID_MAX, description="Bootstrap resamples (metrics and SRD analysis)."
    )
    size_study_samples: int | None = Field(None, ge=1, le=DB_ID_MAX)
    size_study_target_seeds: int | None = Field(None, ge=1, le=DB_ID_MAX)
    phone_units: int | None = Field(None, ge=2, le=DB_ID_MAX)
    synthetic_speakers: int | None = Field(None, ge=6, le=DB_ID_MAX)
    synthetic_utts_per_speaker: int | None = Field(None, ge=4, le=DB_ID_MAX)

    def stored(self) -> dict[str, int]:
        """The set bounds (stored in the protocol body's ``limits``)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


assert set(CostLimits.model_fields) == set(COST_KNOB_NAMES), "CostLimits must list every knob"


class ProtocolCreate(StrictModel):
    """A protocol: the evaluation config every job on its leaderboard shares.

    ``config`` is an `EvaluationConfig` without `anonymizer` (that comes from each submission):
    either `synthetic` (the built-in synthetic corpus spec) or `protocol` (the path of a protocol
    JSON on the worker hosts, made by `unmask corpus protocol`; its corpus must be readable at
    the paths the JSON names on every worker), plus scenarios, back-ends, training, seeds,
    metrics.
    """

    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$",
        description="Lowercase letters, digits, '.', '_', '-'. Registering a new body under an "
        "existing name makes the next version.",
        examples=["synthetic-small"],
    )
    description: Text(10_000) = ""  # type: ignore[valid-type]
    config: JsonObject = Field(
        default_factory=dict,
        description="EvaluationConfig fields (see docs/evaluation.md), no `anonymizer`.",
        examples=[{"synthetic": {"n_speakers": 24}, "scenarios": ["ignorant", "semi-informed"]}],
    )
    leaderboard: LeaderboardSpec = Field(default_factory=LeaderboardSpec)
    limits: CostLimits = Field(
        default_factory=lambda: CostLimits(),
        description="Upper bounds of the cost knobs of this protocol's jobs; an unset one is the "
        "server's `UNMASK_MAX_JOB_<NAME>` (docs/deploy.md). A job above one is a 422.",
    )


class ProtocolOut(BaseModel):
    """A registered protocol version."""

    id: int
    name: str
    version: int
    description: str
    content_hash: str
    config: dict[str, Any]
    leaderboard: LeaderboardSpec
    limits: dict[str, int] = Field(
        default_factory=dict, description="The protocol's own cost bounds (unset: server's)."
    )
    created_at: dt.datetime

    @classmethod
    def of(cls, protocol: Protocol) -> ProtocolOut:
        body = protocol.body or {}
        return cls(
            id=protocol.id,
            name=protocol.name,
            version=protocol.version,
            description=protocol.description,
            content_hash=protocol.content_hash,
            config=dict(body.get("config", {})),
            leaderboard=LeaderboardSpec.model_validate(body.get("leaderboard", {})),
            limits=dict(body.get("limits") or {}),
            created_at=protocol.created_at,
        )


# --- submissions -------------------------------------------------------------------------------


class BuiltinSpec(StrictModel):
    """A built-in anonymizer (docs/anonymizers.md)."""

    name: BuiltinName = Field(examples=["pitch"], description="A built-in anonymizer.")
    params: JsonObject = Field(default_factory=dict, examples=[{"semitones": 4}])


class ContainerSpec(StrictModel):
    """An OCI image pinned by digest (run by the container runner)."""

    image: str = Field(
        max_length=1024,
        description="`name[:tag]@sha256:<64 hex>`; tags alone are refused (not reproducible).",
        examples=["ghcr.io/lab/anon@sha256:" + "0" * 64],
        json_schema_extra={"pattern": PINNED_IMAGE_PATTERN},
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if not PINNED_IMAGE_RE.match(value):
            raise ValueError(
                f"image {value!r} must be pinned by digest: name[:tag]@sha256:<64 hex digits>"
            )
        return value


def _checked_description(value: str | None) -> str | None:
    try:
        return submission_info.check_description(value)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


def _checked_link(value: str | None, info: ValidationInfo) -> str | None:
    try:
        return submission_info.check_link(value, str(info.field_name))
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


DescriptionText = Annotated[
    str | None,
    Field(
        max_length=submission_info.MAX_DESCRIPTION_CHARS,
        description="Optional: what the anonymizer does (plain text, shown on the leaderboard).",
        json_schema_extra={"pattern": NO_NUL_PATTERN},
    ),
    AfterValidator(_checked_description),
]
LinkUrl = Annotated[
    str | None,
    Field(
        max_length=submission_info.MAX_URL_CHARS,
        description="Optional absolute `http://` or `https://` URL.",
        examples=["https://arxiv.org/abs/2401.00001"],
    ),
    AfterValidator(_checked_link),
]


class SubmissionInfo(StrictModel):
    """The optional public description and links of a submission."""

    description: DescriptionText = None
    paper_url: LinkUrl = None
    code_url: LinkUrl = None


class BuiltinSubmissionCreate(SubmissionInfo):
    """Submit a built-in anonymizer with parameters."""

    kind: Literal["builtin"]
    name: NameText
    visibility: Visibility = "private"
    builtin: BuiltinSpec


class ContainerSubmissionCreate(SubmissionInfo):
    """Submit an anonymizer as a pinned container image."""

    kind: Literal["container"]
    name: NameText
    visibility: Visibility = "private"
    container: ContainerSpec


SubmissionCreate = Annotated[
    BuiltinSubmissionCreate | ContainerSubmissionCreate, Field(discriminator="kind")
]


class SubmissionOut(BaseModel):
    """A submission. Content fields never change once accepted."""

    id: int
    team_slug: str
    name: str
    kind: Literal["builtin", "archive", "container"]
    visibility: Visibility
    status: SubmissionApiStatus
    content_hash: str
    builtin: BuiltinSpec | None = None
    container_image: str | None = None
    archive_sha256: str | None = None
    archive_protocol_id: int | None = Field(
        None, description="Archive submissions: the protocol the audio was anonymized for."
    )
    rejection_reason: str | None = Field(
        None, description="`rejected` only: why (e.g. the archive's validation problems)."
    )
    description: str | None = None
    paper_url: str | None = None
    code_url: str | None = None
    created_at: dt.datetime
    accepted_at: dt.datetime | None

    @classmethod
    def of(cls, submission: Submission) -> SubmissionOut:
        status: SubmissionApiStatus = (
            "validating"
            if submission.status == SubmissionStatus.PENDING.value
            else "accepted"
            if submission.status == SubmissionStatus.ACCEPTED.value
            else "rejected"
        )
        builtin = None
        if submission.kind == SubmissionKind.BUILTIN.value and submission.builtin_name:
            builtin = BuiltinSpec(
                name=submission.builtin_name, params=dict(submission.builtin_params or {})
            )
        image = None
        if submission.kind == SubmissionKind.CONTAINER.value:
            image = f"{submission.container_image}@{submission.container_digest}"
        return cls(
            id=submission.id,
            team_slug=submission.team.slug,
            name=submission.name,
            kind=submission.kind,
            visibility=submission.visibility,
            status=status,
            content_hash=submission.content_hash,
            builtin=builtin,
            container_image=image,
            archive_sha256=submission.archive_sha256,
            archive_protocol_id=submission.protocol_id,
            rejection_reason=submission.rejection_reason,
            description=submission.description,
            paper_url=submission.paper_url,
            code_url=submission.code_url,
            created_at=submission.created_at,
            accepted_at=submission.accepted_at,
        )


class SubmissionPageOut(BaseModel):
    """A page of submissions, newest first."""

    items: list[SubmissionOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null = end.")


class ArchiveUploadCreate(StrictModel):
    """Start a presigned (multipart) upload of a large archive."""

    name: NameText
    visibility: Visibility = "private"
    protocol_id: DbId = Field(description="The protocol whose audio the archive anonymizes.")
    size_bytes: int = Field(gt=0, le=2**63 - 1, description="Exact archive size, bytes.")
    sha256: str = Field(
        pattern=SHA256_HEX_PATTERN,
        description="Hex SHA-256 of the whole archive (64 lowercase digits).",
    )
    media_type: Text(255) = "application/octet-stream"  # type: ignore[valid-type]


class UploadPart(BaseModel):
    """One presigned request of an upload: send ``headers`` unchanged."""

    part_number: int
    url: str
    method: str
    headers: dict[str, str]
    size_bytes: int = Field(description="Exactly this many bytes of the archive go in this part.")


class ArchiveUploadOut(BaseModel):
    """Where to upload the parts, and the ticket for the `complete` call."""

    upload_id: str = Field(description="Opaque signed ticket; pass it to `.../complete`.")
    key: str
    multipart: bool = Field(description="True: S3 multipart; send the parts' ETags to complete.")
    part_size_bytes: int
    parts: list[UploadPart]
    expires_at: dt.datetime
    complete_url: str


class CompletedPart(StrictModel):
    """An uploaded part: its number and the ``ETag`` response header of its PUT."""

    part_number: int = Field(ge=1, le=10_000)
    etag: Text(200, min_length=1)  # type: ignore[valid-type]


class ArchiveUploadComplete(StrictModel):
    """Finish a presigned upload (``parts``: required for multipart uploads)."""

    parts: list[CompletedPart] = Field(default_factory=list)


# --- jobs --------------------------------------------------------------------------------------


OVERRIDABLE_CONFIG_FIELDS = tuple(
    name for name in EvaluationConfig.model_fields if name not in PROTOCOL_FIXED_FIELDS
)


class JobCreate(StrictModel):
    """Evaluate a submission under a protocol, optionally overriding config fields."""

    submission_id: DbId
    protocol_id: DbId
    config_overrides: JsonObject = Field(
        default_factory=dict,
        description="Merged (recursively) into the protocol's config; validated as an "
        "EvaluationConfig (docs/evaluation.md). `anonymizer`, `protocol` and `synthetic` cannot "
        "be overridden; the cost knobs are bounded by the protocol's `limits`.",
        examples=[{"seeds": [0, 1], "training": {"epochs": 8}}],
        json_schema_extra={"propertyNames": {"enum": list(OVERRIDABLE_CONFIG_FIELDS)}},
    )
    phase: Text(64) | None = Field(  # type: ignore[valid-type]
        None,
        description="The protocol's phase to submit to (default: the one open now); 409 after "
        "its end or over its per-team limit.",
    )


class StageOut(BaseModel):
    """One stage of a job: state, progress (0..1), attempts, log tail."""

    name: str
    position: int
    state: JobState
    progress: float
    attempts: int
    worker_host: str | None
    heartbeat_at: dt.datetime | None
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    error: str | None
    log_tail: str = Field(description="The last characters of the stage log (see `log_chars`).")

    @classmethod
    def of(cls, stage: Stage, log_chars: int) -> StageOut:
        tail = stage.log_tail or ""
        return cls(
            name=stage.name,
            position=stage.position,
            state=stage.state,
            progress=stage.progress,
            attempts=stage.attempts,
            worker_host=stage.worker_host,
            heartbeat_at=stage.heartbeat_at,
            started_at=stage.started_at,
            finished_at=stage.finished_at,
            error=stage.error,
            log_tail=tail[-log_chars:] if log_chars > 0 else "",
        )


class JobOut(BaseModel):
    """A job: what it evaluates, its state and per-stage progress."""

    id: int
    team_slug: str
    submission_id: int
    protocol_id: int | None
    state: JobState
    progress: float = Field(description="Mean stage progress, 0..1.")
    config: dict[str, Any]
    config_hash: str
    idempotency_key: str | None = Field(None, description="Shown to the owning team only.")
    error_message: str | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    stages: list[StageOut]
    phase_id: int | None = Field(None, description="The challenge phase the job is in.")
    evaluator: dict[str, Any] | None = Field(
        None,
        description="Unmask version, git commit, stage versions, config hash and scorer id of "
        "the code that evaluated it (at creation, then the worker's that completed it).",
    )
    charged: bool = Field(True, description="False: an administrator's uncharged re-run.")
    rerun_of_job_id: int | None = None

    @classmethod
    def of(cls, job: Job, *, log_chars: int = 2000, show_key: bool = False) -> JobOut:
        stages = [StageOut.of(stage, log_chars) for stage in job.stages]
        progress = sum(s.progress for s in stages) / len(stages) if stages else 0.0
        return cls(
            id=job.id,
            team_slug=job.submission.team.slug,
            submission_id=job.submission_id,
            protocol_id=job.protocol_id,
            state=job.state,
            progress=progress,
            config=job.config,
            config_hash=job.config_hash,
            idempotency_key=job.idempotency_key if show_key else None,
            error_message=job.error_message,
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            stages=stages,
            phase_id=job.phase_id,
            evaluator=job.evaluator,
            charged=job.charged,
            rerun_of_job_id=job.rerun_of_job_id,
        )


class JobSummary(BaseModel):
    """A job in a list (no config, no logs)."""

    id: int
    submission_id: int
    protocol_id: int | None
    state: JobState
    created_at: dt.datetime
    finished_at: dt.datetime | None

    @classmethod
    def of(cls, job: Job) -> JobSummary:
        return cls(
            id=job.id,
            submission_id=job.submission_id,
            protocol_id=job.protocol_id,
            state=job.state,
            created_at=job.created_at,
            finished_at=job.finished_at,
        )


class JobPageOut(BaseModel):
    """A page of jobs, newest first (keyset pagination on the id)."""

    items: list[JobSummary]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null = end.")


class ResultOut(BaseModel):
    """One metric value (seed -1 = aggregate over seeds; value null = not computed)."""

    attacker: str = Field(
        "baseline",
        description="The attacker of an attacker zoo that measured it (`baseline` when the job "
        "ran one attacker; docs/scoring.md, Attacker zoo).",
    )
    scenario: str
    backend: str
    seed: int
    metric: str
    value: float | None

    @classmethod
    def of(cls, row: Result) -> ResultOut:
        return cls(
            attacker=row.attacker,
            scenario=row.scenario,
            backend=row.backend,
            seed=row.seed,
            metric=row.metric,
            value=row.value,
        )


class TrustReasonOut(BaseModel):
    """One thing that undermines a verdict (services/pipeline/trust.py)."""

    code: str
    message: str
    value: float | None = None
    threshold: float | None = None


class TrustOut(BaseModel):
    """The report's trust check: can its verdict be trusted?"""

    trustworthy: bool | None = Field(
        description="false: see reasons; null: unknown (no report yet, or one without the check)."
    )
    reasons: list[TrustReasonOut]
    attacker: str | None = Field(
        None, description="With an attacker zoo: the worst-case attacker the check is of."
    )


class WorstCaseMetricOut(BaseModel):
    """A metric's worst value for the maker over a zoo's attackers, and who achieved it."""

    value: float
    attacker: str
    backend: str


class WorstCaseOut(BaseModel):
    """One scenario's worst case over an attacker zoo (services/pipeline/zoo.py)."""

    attacker: str = Field(description="The attacker with the lowest mean EER.")
    backend: str
    eer_percent: float | None = Field(description="Its EER (%), mean over seeds.")
    n_seeds: int
    attackers: list[str] = Field(description="Every attacker scored in this scenario.")
    metrics: dict[str, WorstCaseMetricOut] = Field(
        description="Per seed-summary metric: the worst value and its attacker and back-end."
    )


class ResultsOut(BaseModel):
    """A job's metric rows (long format) and its report's trust check."""

    job_id: int
    state: JobState
    results: list[ResultOut]
    trust: TrustOut
    worst_case: dict[str, WorstCaseOut] | None = Field(
        None,
        description="Per scenario, the worst case for the maker over the job's attacker zoo; "
        "null = the job ran one attacker (or has no report yet).",
    )


class ArtifactOut(BaseModel):
    """A file a job produced, with a short-lived download link."""

    id: int
    key: str
    size_bytes: int
    sha256: str
    media_type: str
    stage: str | None
    url: str = Field(description="Presigned GET URL (no token needed) until `url_expires_at`.")
    url_expires_at: dt.datetime
    headers: dict[str, str] = Field(default_factory=dict, description="Send with the GET.")

    @classmethod
    def of(
        cls,
        artifact: Artifact,
        *,
        stage: str | None,
        url: str,
        expires_at: float,
        headers: dict[str, str],
    ) -> ArtifactOut:
        return cls(
            id=artifact.id,
            key=artifact.key,
            size_bytes=artifact.size_bytes,
            sha256=artifact.sha256,
            media_type=artifact.media_type,
            stage=stage,
            url=url,
            url_expires_at=dt.datetime.fromtimestamp(expires_at, dt.UTC),
            headers=headers,
        )


class ArtifactsOut(BaseModel):
    """A job's artifacts."""

    job_id: int
    artifacts: list[ArtifactOut]


# --- leaderboard -------------------------------------------------------------------------------


class LeaderboardRow(BaseModel):
    """One submission on a leaderboard."""

    rank: int
    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int
    value: float | None = Field(description="The primary metric; null = missing (ranked last).")
    submitted_at: dt.datetime
    metrics: dict[str, float | None] = Field(
        description="Every metric of the same job, scenario and back-end."
    )


class LeaderboardOut(BaseModel):
    """A protocol's ranking, with the rules it was ranked by."""

    protocol_id: int
    protocol_name: str
    protocol_version: int
    metric: str
    scenario: str
    backend: str
    higher_is_better: bool
    rules: list[str]
    entries: list[LeaderboardRow]


# --- health ------------------------------------------------------------------------------------


class CheckOut(BaseModel):
    """One dependency check of the readiness probe."""

    status: Literal["ok", "failed", "skipped"]
    latency_ms: float | None = None
    detail: str = ""


class Liveness(BaseModel):
    """The process answers."""

    status: Literal["ok"]


class Readiness(BaseModel):
    """Whether the database, the broker and the blob store answer."""

    status: Literal["ready"]
    checks: dict[str, CheckOut]
