"""A job's results, trust check, worst case and artifacts."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from api.schemas.common import JobState
from services.storage.models import Artifact, Result


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


class ChallengerAttackerOut(BaseModel):
    """An attacker the challenger is compared with, or the one a scenario's row reports."""

    attacker: str | None = None
    backend: str | None = None
    eer_percent: float | None = Field(None, description="Its EER (%).")
    n_seeds: int | None = Field(None, description="Seeds its EER is the mean of.")
    pretrained: bool | None = Field(
        None, description="In a row: whether the pretrained verifier gave it."
    )


class ChallengerScenarioOut(BaseModel):
    """The challenge of one attack scenario, and the row the verdict reports for it."""

    eer_percent: float | None = Field(None, description="The challenger's EER (%).")
    headline: ChallengerAttackerOut | None = Field(
        None, description="The trained worst-case attacker of the scenario."
    )
    difference_points: float | None = Field(
        None, description="EER(challenger) - EER(trained attacker), percentage points."
    )
    interval_points: list[float] | None = Field(
        None, description="Paired speaker bootstrap interval of the difference (points)."
    )
    stronger: bool | None = Field(None, description="The whole interval is below 0.")
    row: ChallengerAttackerOut | None = Field(
        None,
        description="The row the verdict reports: for ignorant and lazy-informed the lower EER "
        "of the trained attacker and the pretrained verifier (never weaker than it); for "
        "semi-informed the trained attacker's.",
    )


class ChallengerOut(BaseModel):
    """A pretrained verifier scored on the verdict's trials (services/pipeline/challenger.py):
    when it beats the verdict's attacker beyond the paired interval, the verdict is not
    trustworthy."""

    attacker: str = Field(description="The challenger (`ge2e`).")
    family: str | None = None
    scenario: str = Field(description="The headline scenario it was scored on.")
    backend: str | None = None
    eer_percent: float | None = Field(None, description="Its EER (%) on the headline's trials.")
    headline: ChallengerAttackerOut | None = None
    difference_points: float | None = None
    interval_points: list[float] | None = None
    confidence: float | None = None
    n_speakers: int | None = Field(None, description="Evaluation speakers the interval draws.")
    stronger: bool | None = None
    cpu_seconds: float | None = Field(None, description="CPU seconds it cost this run.")
    compute_seconds: float | None = Field(
        None, description="Wall seconds its stages took when they were computed."
    )
    scenarios: dict[str, ChallengerScenarioOut] = Field(
        default_factory=dict, description="The same challenge per attack scenario scored."
    )


class TrustOut(BaseModel):
    """The report's trust check: can its verdict be trusted?"""

    trustworthy: bool | None = Field(
        description="false: see reasons; null: unknown (no report yet, or one without the check)."
    )
    reasons: list[TrustReasonOut]
    attacker: str | None = Field(
        None, description="With an attacker zoo: the worst-case attacker the check is of."
    )
    challenger: ChallengerOut | None = Field(
        None,
        description="The challenger block of the report (null: none was scored, e.g. "
        "`UNMASK_CHALLENGER=false`, or the verdict's attacker is itself a pretrained verifier).",
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
