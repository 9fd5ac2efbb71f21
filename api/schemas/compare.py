"""Two submissions of a protocol side by side (the JSON twin of the compare page)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from services.platform.comparison import Comparison


class SideOut(BaseModel):
    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int = Field(description="The job that stands for it (its leaderboard job).")


class MetricComparisonOut(BaseModel):
    metric: str
    label: str
    unit: str
    scenario: str
    backend: str
    a: float | None
    b: float | None
    difference: float | None = Field(description="b - a, in the metric's unit.")
    better: str | None = Field(description="`a`, `b`, `equal`, or null when a value is missing.")
    higher_is_better: bool
    paired_interval: tuple[float, float] | None = Field(
        None,
        description="95 % paired speaker-bootstrap interval of the difference (EER rows of a "
        "(scenario, back-end) where both jobs kept their trials on the same trial grid).",
    )


class PerSpeakerOut(BaseModel):
    speakers: list[str]
    a: list[float] = Field(description="Per-speaker EER (%) of a, in `speakers` order.")
    b: list[float] = Field(description="Per-speaker EER (%) of b, in `speakers` order.")


class ComparisonOut(BaseModel):
    """Every catalogued metric of both submissions' leaderboard jobs, side by side."""

    protocol_id: int
    a: SideOut
    b: SideOut
    metrics: list[MetricComparisonOut]
    utility: list[MetricComparisonOut]
    det_curves: dict[str, dict[str, Any]] = Field(
        description='"<scenario>|<backend>" -> {"a": curve, "b": curve} (pfa, pmiss, eer %).'
    )
    per_speaker_eer: dict[str, PerSpeakerOut] = Field(
        description='"<scenario>|<backend>" -> both jobs\' per-speaker EERs (mean over seeds, of '
        "the attacker shown), where both kept their trials."
    )
    paired_notes: dict[str, str] = Field(
        description='"<scenario>|<backend>" -> why it has no paired interval.'
    )

    @classmethod
    def of(cls, c: Comparison) -> ComparisonOut:
        def out(m: Any) -> MetricComparisonOut:
            return MetricComparisonOut(
                **{k: getattr(m, k) for k in MetricComparisonOut.model_fields}
            )

        return cls(
            protocol_id=c.protocol_id,
            a=SideOut(**vars(c.a)),
            b=SideOut(**vars(c.b)),
            metrics=[out(m) for m in c.privacy],
            utility=[out(m) for m in c.utility],
            det_curves=c.det_curves,
            per_speaker_eer={k: PerSpeakerOut(**vars(v)) for k, v in c.per_speaker.items()},
            paired_notes=c.paired_notes,
        )
