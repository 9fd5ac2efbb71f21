"""Jobs: creating one, its stages, its state and the summary a list shows."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, Field

from api.schemas.common import DbId, JobState, JsonObject, StrictModel, Text
from services.pipeline.config import EvaluationConfig
from services.platform.jobs.config import PROTOCOL_FIXED_FIELDS
from services.storage.models import Job, Stage

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


class CancelledJobsOut(BaseModel):
    """The jobs a bulk cancel stopped."""

    submission_id: int
    cancelled_job_ids: list[int] = Field(
        description="The submission's jobs that were queued or running, now cancelled (oldest "
        "first); empty when none was."
    )
