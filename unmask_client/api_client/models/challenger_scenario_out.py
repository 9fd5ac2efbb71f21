from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.challenger_attacker_out import ChallengerAttackerOut


T = TypeVar("T", bound="ChallengerScenarioOut")


@_attrs_define
class ChallengerScenarioOut:
    """The challenge of one attack scenario, and the row the verdict reports for it.

    Attributes:
        difference_points (float | None | Unset): EER(challenger) - EER(trained attacker), percentage points.
        eer_percent (float | None | Unset): The challenger's EER (%).
        headline (ChallengerAttackerOut | None | Unset): The trained worst-case attacker of the scenario.
        interval_points (list[float] | None | Unset): Paired speaker bootstrap interval of the difference (points).
        row (ChallengerAttackerOut | None | Unset): The row the verdict reports: for ignorant and lazy-informed the
            lower EER of the trained attacker and the pretrained verifier (never weaker than it); for semi-informed the
            trained attacker's.
        stronger (bool | None | Unset): The whole interval is below 0.
    """

    difference_points: float | Unset | None = UNSET
    eer_percent: float | Unset | None = UNSET
    headline: ChallengerAttackerOut | Unset | None = UNSET
    interval_points: list[float] | Unset | None = UNSET
    row: ChallengerAttackerOut | Unset | None = UNSET
    stronger: bool | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.challenger_attacker_out import ChallengerAttackerOut

        difference_points: float | Unset | None
        if isinstance(self.difference_points, Unset):
            difference_points = UNSET
        else:
            difference_points = self.difference_points

        eer_percent: float | Unset | None
        if isinstance(self.eer_percent, Unset):
            eer_percent = UNSET
        else:
            eer_percent = self.eer_percent

        headline: dict[str, Any] | Unset | None
        if isinstance(self.headline, Unset):
            headline = UNSET
        elif isinstance(self.headline, ChallengerAttackerOut):
            headline = self.headline.to_dict()
        else:
            headline = self.headline

        interval_points: list[float] | Unset | None
        if isinstance(self.interval_points, Unset):
            interval_points = UNSET
        elif isinstance(self.interval_points, list):
            interval_points = self.interval_points

        else:
            interval_points = self.interval_points

        row: dict[str, Any] | Unset | None
        if isinstance(self.row, Unset):
            row = UNSET
        elif isinstance(self.row, ChallengerAttackerOut):
            row = self.row.to_dict()
        else:
            row = self.row

        stronger: bool | Unset | None
        if isinstance(self.stronger, Unset):
            stronger = UNSET
        else:
            stronger = self.stronger

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if difference_points is not UNSET:
            field_dict["difference_points"] = difference_points
        if eer_percent is not UNSET:
            field_dict["eer_percent"] = eer_percent
        if headline is not UNSET:
            field_dict["headline"] = headline
        if interval_points is not UNSET:
            field_dict["interval_points"] = interval_points
        if row is not UNSET:
            field_dict["row"] = row
        if stronger is not UNSET:
            field_dict["stronger"] = stronger

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.challenger_attacker_out import ChallengerAttackerOut

        d = dict(src_dict)

        def _parse_difference_points(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        difference_points = _parse_difference_points(d.pop("difference_points", UNSET))

        def _parse_eer_percent(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        eer_percent = _parse_eer_percent(d.pop("eer_percent", UNSET))

        def _parse_headline(data: object) -> ChallengerAttackerOut | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                headline_type_0 = ChallengerAttackerOut.from_dict(data)

                return headline_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ChallengerAttackerOut | None | Unset, data)

        headline = _parse_headline(d.pop("headline", UNSET))

        def _parse_interval_points(data: object) -> list[float] | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                interval_points_type_0 = cast(list[float], data)

                return interval_points_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        interval_points = _parse_interval_points(d.pop("interval_points", UNSET))

        def _parse_row(data: object) -> ChallengerAttackerOut | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                row_type_0 = ChallengerAttackerOut.from_dict(data)

                return row_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ChallengerAttackerOut | None | Unset, data)

        row = _parse_row(d.pop("row", UNSET))

        def _parse_stronger(data: object) -> bool | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        stronger = _parse_stronger(d.pop("stronger", UNSET))

        challenger_scenario_out = cls(
            difference_points=difference_points,
            eer_percent=eer_percent,
            headline=headline,
            interval_points=interval_points,
            row=row,
            stronger=stronger,
        )

        challenger_scenario_out.additional_properties = d
        return challenger_scenario_out

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
