from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.challenger_scenario_out import ChallengerScenarioOut


T = TypeVar("T", bound="ChallengerOutScenarios")


@_attrs_define
class ChallengerOutScenarios:
    """The same challenge per attack scenario scored."""

    additional_properties: dict[str, ChallengerScenarioOut] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.challenger_scenario_out import ChallengerScenarioOut

        d = dict(src_dict)
        challenger_out_scenarios = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = ChallengerScenarioOut.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        challenger_out_scenarios.additional_properties = additional_properties
        return challenger_out_scenarios

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> ChallengerScenarioOut:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: ChallengerScenarioOut) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
