from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.leaderboard_row_evaluator_type_0 import LeaderboardRowEvaluatorType0
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
        evaluator (LeaderboardRowEvaluatorType0 | None | Unset): What evaluated the job: `unmask_version`, `git_commit`
            (null when unknown), `stage_versions`, `config_hash` and `scorer` (a digest of the stage versions); null =
            evaluated before evaluators were recorded.
        evaluator_outdated (bool | Unset): True when an older scorer than the current one produced the row (or it is
            unknown); an administrator's re-run of outdated results replaces it. Default: False.
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
    evaluator: LeaderboardRowEvaluatorType0 | Unset | None = UNSET
    evaluator_outdated: bool | Unset = False
    tier: int | Unset = 0
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.leaderboard_row_evaluator_type_0 import (
            LeaderboardRowEvaluatorType0,
        )

        job_id = self.job_id

        metrics = self.metrics.to_dict()

        rank = self.rank

        submission_id = self.submission_id

        submission_name = self.submission_name

        submitted_at = self.submitted_at.isoformat()

        team_slug = self.team_slug

        value: float | None
        value = self.value

        evaluator: dict[str, Any] | Unset | None
        if isinstance(self.evaluator, Unset):
            evaluator = UNSET
        elif isinstance(self.evaluator, LeaderboardRowEvaluatorType0):
            evaluator = self.evaluator.to_dict()
        else:
            evaluator = self.evaluator

        evaluator_outdated = self.evaluator_outdated

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
        if evaluator is not UNSET:
            field_dict["evaluator"] = evaluator
        if evaluator_outdated is not UNSET:
            field_dict["evaluator_outdated"] = evaluator_outdated
        if tier is not UNSET:
            field_dict["tier"] = tier

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.leaderboard_row_evaluator_type_0 import (
            LeaderboardRowEvaluatorType0,
        )
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

        def _parse_evaluator(
            data: object,
        ) -> LeaderboardRowEvaluatorType0 | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                evaluator_type_0 = LeaderboardRowEvaluatorType0.from_dict(data)

                return evaluator_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LeaderboardRowEvaluatorType0 | None | Unset, data)

        evaluator = _parse_evaluator(d.pop("evaluator", UNSET))

        evaluator_outdated = d.pop("evaluator_outdated", UNSET)

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
            evaluator=evaluator,
            evaluator_outdated=evaluator_outdated,
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
