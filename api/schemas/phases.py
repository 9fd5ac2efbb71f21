"""Challenge phases of a protocol, and the administrators' re-run of older results."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    Discriminator,
    Field,
    StrictBool,
    StringConstraints,
    Tag,
    WithJsonSchema,
)

from api.schemas.common import DB_ID_MAX, StrictModel, Timestamp
from api.schemas.submissions import SubmissionKindName
from services.platform import phases as phase_rules
from services.storage.models import Phase, PhaseVisibility

PhaseName = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
]
"""A phase's name, as a new phase's body gives it and as the phase routes' ``{name}`` reads it."""


class _PhaseFields(StrictModel):
    """What every phase has: its name, window, per-team limit and the kinds it accepts."""

    name: PhaseName
    starts_at: Timestamp = Field(description="When jobs are accepted from (with a time zone).")
    ends_at: Timestamp | None = Field(
        None,
        description="When jobs stop being accepted (409 after it), after `starts_at`; none: "
        "open-ended.",
    )
    submission_limit: int | None = Field(
        None,
        ge=1,
        le=DB_ID_MAX,
        description="Jobs per team in this phase (failed and cancelled not counted).",
    )
    allowed_kinds: list[SubmissionKindName] | None = Field(
        None,
        min_length=1,
        description='Submission kinds whose jobs the phase accepts (e.g. `["container"]` for an '
        "official phase that reruns the code); none: every kind. Other kinds get 409.",
    )


class PublicPhaseIn(_PhaseFields):
    """A public phase: its results are shown as they finish."""

    visibility: Literal["public"] = Field("public", description="`public` (the default).")


class HiddenPhaseIn(_PhaseFields):
    """A hidden phase: its results are shown to the submitting team and administrators only
    until `reveal_at`."""

    visibility: Literal["hidden"] = Field(description="`hidden`.")
    reveal_at: Timestamp = Field(
        description="When results are shown to everyone (already past: at once)."
    )


assert {"public", "hidden"} == {v.value for v in PhaseVisibility}, "one model per visibility"


def _visibility_of(body: Any) -> str | None:
    """The tag of a phase body: its ``visibility`` (public when left out); None for anything
    else (a 422 naming the rule)."""
    if isinstance(body, dict):
        value = body.get("visibility", "public")
    else:
        value = getattr(body, "visibility", None)
    return value if value in ("public", "hidden") else None


# One model per visibility: the document states that a hidden phase needs `reveal_at` and a
# public one has none.
PhaseIn = Annotated[
    Annotated[PublicPhaseIn, Tag("public")] | Annotated[HiddenPhaseIn, Tag("hidden")],
    Discriminator(
        _visibility_of,
        custom_error_type="phase_visibility",
        custom_error_message="visibility must be `public` (the default) or `hidden`",
    ),
]


class PhasePatch(StrictModel):
    """Fields of a phase to change (the others stay); `reveal_at` may be now or past (reveals
    the results at once)."""

    # Not nullable (a phase always starts): the document says so; null is a 422 naming it.
    starts_at: Annotated[
        Timestamp | None, WithJsonSchema({"type": "string", "format": "date-time"})
    ] = None
    ends_at: Timestamp | None = None
    submission_limit: int | None = Field(None, ge=1, le=DB_ID_MAX)
    # Not nullable either (a phase always has one).
    visibility: Annotated[
        PhaseVisibility | None,
        WithJsonSchema({"type": "string", "enum": [v.value for v in PhaseVisibility]}),
    ] = None
    reveal_at: Timestamp | None = None
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
