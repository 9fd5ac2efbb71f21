from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PerSpeakerOut")


@_attrs_define
class PerSpeakerOut:
    """
    Attributes:
        a (list[float]): Per-speaker EER (%) of a, in `speakers` order.
        b (list[float]): Per-speaker EER (%) of b, in `speakers` order.
        speakers (list[str]):
    """

    a: list[float]
    b: list[float]
    speakers: list[str]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        a = self.a

        b = self.b

        speakers = self.speakers

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "a": a,
                "b": b,
                "speakers": speakers,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        a = cast(list[float], d.pop("a"))

        b = cast(list[float], d.pop("b"))

        speakers = cast(list[str], d.pop("speakers"))

        per_speaker_out = cls(
            a=a,
            b=b,
            speakers=speakers,
        )

        per_speaker_out.additional_properties = d
        return per_speaker_out

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
