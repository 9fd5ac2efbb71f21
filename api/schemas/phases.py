"""Challenge phases of a protocol, and the administrators' re-run of older results."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field, StrictBool

from api.schemas.common import DB_ID_MAX, StrictModel
from api.schemas.submissions import SubmissionKindName
from services.platform import phases as phase_rules
from services.storage.models import Phase, PhaseVisibility


class PhaseIn(StrictModel):
    """A phase of a protocol: its window, per-team limit and visibility."""

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    starts_at: dt.datetime = Field(description="When jobs are accepted from (with a time zone).")
    ends_at: dt.datetime | None = Field(
        None, description="When jobs stop being accepted (409 after it); none: open-ended."
    )
    submission_limit: int | None = Field(
        None,
        ge=1,
        le=DB_ID_MAX,
        description="Jobs per team in this phase (failed and cancelled not counted).",
    )
    visibility: PhaseVisibility = Field(
        PhaseVisibility.PUBLIC,
        description="`public`: results shown as they finish; `hidden`: to the submitting team "
        "and administrators only until `reveal_at`.",
    )
    reveal_at: dt.datetime | None = Field(
        None, description="Hidden phases: when results are shown to everyone (in the future)."
    )
    allowed_kinds: list[SubmissionKindName] | None = Field(
        None,
        min_length=1,
        description='Submission kinds whose jobs the phase accepts (e.g. `["container"]` for an '
        "official phase that reruns the code); none: every kind. Other kinds get 409.",
    )


class PhasePatch(StrictModel):
    """Fields of a phase to change (the others stay); `reveal_at` may be now or past (reveals
    the results at once)."""

    starts_at: dt.datetime | None = None
    ends_at: dt.datetime | None = None
    submission_limit: int | None = Field(None, ge=1, le=DB_ID_MAX)
    visibility: PhaseVisibility | None = None
    reveal_at: dt.datetime | None = None
    allowed_kinds: list[SubmissionKindName] | None = Field(None, min_length=1)


class PhaseOut(BaseModel):
    """A phase as stored, with whether it accepts jobs and hides results now."""

    name: str
    position: int
    starts_at: dt.datetime
    ends_at: dt.datetime | None
    submission_limit: int | None
    visibility: PhaseVisibility
    reveal_at: dt.datetime | None
    allowed_kinds: list[SubmissionKindName] | None = Field(
        description="Submission kinds the phase accepts; null: every kind."
    )
    open: bool = Field(description="Whether it accepts jobs now.")
    hidden: bool = Field(description="Whether its results are hidden now.")

    @classmethod
    def of(cls, phase: Phase, now: dt.datetime) -> PhaseOut:
        return cls(
            name=phase.name,
            position=phase.position,
            starts_at=phase.starts_at,
            ends_at=phase.ends_at,
            submission_limit=phase.submission_limit,
            visibility=PhaseVisibility(phase.visibility),
            reveal_at=phase.reveal_at,
            allowed_kinds=phase.allowed_kinds,
            open=phase_rules.is_open(phase, now),
            hidden=phase_rules.is_hidden(phase, now),
        )


class RerunRequest(StrictModel):
    """Which leaderboard jobs to re-run with the current evaluator."""

    include_current: StrictBool = Field(
        False, description="Also re-run jobs already evaluated by the current scorer."
    )


class RerunOut(BaseModel):
    """The re-runs queued (uncharged): old job id -> new job id."""

    current_scorer: str
    current_evaluator: dict[str, object]
    queued: dict[int, int]
    already_running: list[int] = Field(
        description="Submissions skipped: a re-run of theirs is still queued or running."
    )
