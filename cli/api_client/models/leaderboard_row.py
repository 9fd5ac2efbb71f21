from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.leaderboard_row_metrics import LeaderboardRowMetrics


T = TypeVar("T", bound="LeaderboardRow")


@_attrs_define
class LeaderboardRow:
    """One submission on a leaderboard.

    Attributes:
        job_id (int):
        metrics (LeaderboardRowMetrics): Every metric of the same job, scenario and back-end.
        rank (int):
        submission_id (int):
        submission_name (str):
        submitted_at (datetime.datetime):
        team_slug (str):
        value (float | None): The primary metric; null = missing (ranked last in its tier).
        tier (int | Unset): Index into the leaderboard's `tiers` (0 = the best): rows rank by tier first. Default: 0.
    """

    job_id: int
    metrics: LeaderboardRowMetrics
    rank: int
    submission_id: int
    submission_name: str
    submitted_at: datetime.datetime
    team_slug: str
    value: float | None
    tier: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        job_id = self.job_id

        metrics = self.metrics.to_dict()

        rank = self.rank

        submission_id = self.submission_id

        submission_name = self.submission_name

        submitted_at = self.submitted_at.isoformat()

        team_slug = self.team_slug

        value: float | None
        value = self.value

        tier = self.tier

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "job_id": job_id,
                "metrics": metrics,
                "rank": rank,
                "submission_id": submission_id,
                "submission_name": submission_name,
                "submitted_at": submitted_at,
                "team_slug": team_slug,
                "value": value,
            }
        )
        if tier is not UNSET:
            field_dict["tier"] = tier

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.leaderboard_row_metrics import LeaderboardRowMetrics

        d = dict(src_dict)
        job_id = d.pop("job_id")

        metrics = LeaderboardRowMetrics.from_dict(d.pop("metrics"))

        rank = d.pop("rank")

        submission_id = d.pop("submission_id")

        submission_name = d.pop("submission_name")

        submitted_at = datetime.datetime.fromisoformat(d.pop("submitted_at"))

        team_slug = d.pop("team_slug")

        def _parse_value(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        value = _parse_value(d.pop("value"))

        tier = d.pop("tier", UNSET)

        leaderboard_row = cls(
            job_id=job_id,
            metrics=metrics,
            rank=rank,
            submission_id=submission_id,
            submission_name=submission_name,
            submitted_at=submitted_at,
            team_slug=team_slug,
            value=value,
            tier=tier,
        )

        leaderboard_row.additional_properties = d
        return leaderboard_row

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
