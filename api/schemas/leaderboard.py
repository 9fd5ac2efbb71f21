"""A protocol's leaderboard as the JSON route returns it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, Field


class LeaderboardRow(BaseModel):
    """One submission on a leaderboard."""

    rank: int
    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int
    value: float | None = Field(
        description="The primary metric; null = missing (ranked last in its tier)."
    )
    tier: int = Field(
        0,
        description="Index into the leaderboard's `tiers` (0 = the best): rows rank by tier first.",
    )
    submitted_at: dt.datetime
    metrics: dict[str, float | None] = Field(
        description="Every metric of the same job, scenario and back-end."
    )
    evaluator: dict[str, Any] | None = Field(
        None,
        description="What evaluated the job: `unmask_version`, `git_commit` (null when unknown), "
        "`stage_versions`, `config_hash` and `scorer` (a digest of the stage versions); null = "
        "evaluated before evaluators were recorded.",
    )
    evaluator_outdated: bool = Field(
        False,
        description="True when an older scorer than the current one produced the row (or it is "
        "unknown); an administrator's re-run of outdated results replaces it.",
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
    tiers: list[str] = Field(
        default_factory=list,
        description="The utility tiers, best first: a row never ranks above one of a better tier.",
    )
    entries: list[LeaderboardRow]
