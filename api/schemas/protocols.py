"""Protocols: what an administrator registers, what a caller reads."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, Field, StrictBool

from api.schemas.common import (
    DB_ID_MAX,
    JsonObject,
    LabelText,
    Prose,
    ProtocolAsrState,
    StrictModel,
)
from services.metrics import catalogue
from services.platform.jobs.cost import COST_KNOB_NAMES
from services.storage.models import ProtocolRecord


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
    crop_seconds: float | None = Field(
        None, gt=0, le=3600, description="training.crop_seconds (s), every attacker."
    )
    attackers: int | None = Field(None, ge=1, le=1000, description="Attackers of the zoo.")
    seeds: int | None = Field(None, ge=1, le=DB_ID_MAX, description="Entries of `seeds`.")
    training_work: float | None = Field(
        None,
        gt=0,
        le=1e12,
        description="seeds x trained scenarios x sum of attackers' epochs x crop_seconds.",
    )
    batch_size: int | None = Field(None, ge=2, le=DB_ID_MAX, description="training.batch_size")
    bootstrap_resamples: int | None = Field(
        None, ge=0, le=DB_ID_MAX, description="Bootstrap resamples (metrics and SRD analysis)."
    )
    size_study_samples: int | None = Field(None, ge=1, le=DB_ID_MAX)
    size_study_target_seeds: int | None = Field(None, ge=1, le=DB_ID_MAX)
    size_study_counts: int | None = Field(None, ge=1, le=DB_ID_MAX)
    phone_units: int | None = Field(None, ge=2, le=DB_ID_MAX)
    synthetic_speakers: int | None = Field(None, ge=6, le=DB_ID_MAX)
    synthetic_utts_per_speaker: int | None = Field(None, ge=4, le=DB_ID_MAX)

    def stored(self) -> dict[str, float]:
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
        max_length=128,
        pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$",
        description="Lowercase letters, digits, '.', '_', '-'. Registering a new body under an "
        "existing name makes the next version.",
        examples=["synthetic-small"],
    )
    description: Prose(10_000) = Field(  # type: ignore[valid-type]
        "", description="What the protocol evaluates: one line of plain text."
    )
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


class ProtocolAsrOut(BaseModel):
    """The protocol's utility ASR, trained once at registration and shared by its jobs."""

    state: ProtocolAsrState = Field(
        description="`ready`: jobs reuse it; `queued`/`running`: a job that needs it first waits "
        "for it; `failed`: jobs train it themselves (registering the protocol again retries)."
    )
    error: str | None = Field(None, description="Why the training failed (state `failed`).")
    updated_at: dt.datetime | None = None

    @classmethod
    def of(cls, protocol: ProtocolRecord) -> ProtocolAsrOut | None:
        if protocol.asr_state is None:
            return None
        return cls(
            state=protocol.asr_state,
            error=protocol.asr_error,
            updated_at=protocol.asr_updated_at,
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
    limits: dict[str, int | float] = Field(
        default_factory=dict, description="The protocol's own cost bounds (unset: server's)."
    )
    created_at: dt.datetime
    asr: ProtocolAsrOut | None = Field(
        None,
        description="The utility ASR trained at registration (docs/utility.md); null when the "
        "protocol trains none (no WER, or an operator's pretrained ASR).",
    )

    @classmethod
    def of(cls, protocol: ProtocolRecord) -> ProtocolOut:
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
            asr=ProtocolAsrOut.of(protocol),
        )
