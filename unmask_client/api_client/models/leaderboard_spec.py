from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="LeaderboardSpec")


@_attrs_define
class LeaderboardSpec:
    """What a protocol's leaderboard ranks by (defaults of the leaderboard route).

    Attributes:
        backend (None | str | Unset): Scoring back-end; default the first one.
        higher_is_better (bool | Unset): EER: higher = more privacy = better (the default). Default: True.
        metric (str | Unset): Primary metric (a result row's `metric`). Default: 'eer_percent'.
        scenario (None | str | Unset): Scenario; default `semi-informed` if evaluated, else the last one.
    """

    backend: str | Unset | None = UNSET
    higher_is_better: bool | Unset = True
    metric: str | Unset = "eer_percent"
    scenario: str | Unset | None = UNSET

    def to_dict(self) -> dict[str, Any]:
        backend: str | Unset | None
        if isinstance(self.backend, Unset):
            backend = UNSET
        else:
            backend = self.backend

        higher_is_better = self.higher_is_better

        metric = self.metric

        scenario: str | Unset | None
        if isinstance(self.scenario, Unset):
            scenario = UNSET
        else:
            scenario = self.scenario

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if backend is not UNSET:
            field_dict["backend"] = backend
        if higher_is_better is not UNSET:
            field_dict["higher_is_better"] = higher_is_better
        if metric is not UNSET:
            field_dict["metric"] = metric
        if scenario is not UNSET:
            field_dict["scenario"] = scenario

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_backend(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        backend = _parse_backend(d.pop("backend", UNSET))

        higher_is_better = d.pop("higher_is_better", UNSET)

        metric = d.pop("metric", UNSET)

        def _parse_scenario(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        scenario = _parse_scenario(d.pop("scenario", UNSET))

        leaderboard_spec = cls(
            backend=backend,
            higher_is_better=higher_is_better,
            metric=metric,
            scenario=scenario,
        )

        return leaderboard_spec
