from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.worst_case_out import WorstCaseOut


T = TypeVar("T", bound="ResultsOutWorstCaseType0")


@_attrs_define
class ResultsOutWorstCaseType0:
    additional_properties: dict[str, WorstCaseOut] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.worst_case_out import WorstCaseOut

        d = dict(src_dict)
        results_out_worst_case_type_0 = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = WorstCaseOut.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        results_out_worst_case_type_0.additional_properties = additional_properties
        return results_out_worst_case_type_0

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> WorstCaseOut:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: WorstCaseOut) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
