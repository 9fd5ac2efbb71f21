from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.leaderboard_row import LeaderboardRow


T = TypeVar("T", bound="LeaderboardOut")


@_attrs_define
class LeaderboardOut:
    """A protocol's ranking, with the rules it was ranked by.

    Attributes:
        backend (str):
        entries (list[LeaderboardRow]):
        higher_is_better (bool):
        metric (str):
        protocol_id (int):
        protocol_name (str):
        protocol_version (int):
        rules (list[str]):
        scenario (str):
        tiers (list[str] | Unset): The utility tiers, best first: a row never ranks above one of a better tier.
    """

    backend: str
    entries: list[LeaderboardRow]
    higher_is_better: bool
    metric: str
    protocol_id: int
    protocol_name: str
    protocol_version: int
    rules: list[str]
    scenario: str
    tiers: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        backend = self.backend

        entries = []
        for entries_item_data in self.entries:
            entries_item = entries_item_data.to_dict()
            entries.append(entries_item)

        higher_is_better = self.higher_is_better

        metric = self.metric

        protocol_id = self.protocol_id

        protocol_name = self.protocol_name

        protocol_version = self.protocol_version

        rules = self.rules

        scenario = self.scenario

        tiers: list[str] | Unset = UNSET
        if not isinstance(self.tiers, Unset):
            tiers = self.tiers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "backend": backend,
                "entries": entries,
                "higher_is_better": higher_is_better,
                "metric": metric,
                "protocol_id": protocol_id,
                "protocol_name": protocol_name,
                "protocol_version": protocol_version,
                "rules": rules,
                "scenario": scenario,
            }
        )
        if tiers is not UNSET:
            field_dict["tiers"] = tiers

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.leaderboard_row import LeaderboardRow

        d = dict(src_dict)
        backend = d.pop("backend")

        entries = []
        _entries = d.pop("entries")
        for entries_item_data in _entries:
            entries_item = LeaderboardRow.from_dict(entries_item_data)

            entries.append(entries_item)

        higher_is_better = d.pop("higher_is_better")

        metric = d.pop("metric")

        protocol_id = d.pop("protocol_id")

        protocol_name = d.pop("protocol_name")

        protocol_version = d.pop("protocol_version")

        rules = cast(list[str], d.pop("rules"))

        scenario = d.pop("scenario")

        tiers = cast(list[str], d.pop("tiers", UNSET))

        leaderboard_out = cls(
            backend=backend,
            entries=entries,
            higher_is_better=higher_is_better,
            metric=metric,
            protocol_id=protocol_id,
            protocol_name=protocol_name,
            protocol_version=protocol_version,
            rules=rules,
            scenario=scenario,
            tiers=tiers,
        )

        leaderboard_out.additional_properties = d
        return leaderboard_out

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
