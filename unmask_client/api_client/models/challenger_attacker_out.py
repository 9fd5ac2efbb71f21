from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ChallengerAttackerOut")


@_attrs_define
class ChallengerAttackerOut:
    """An attacker the challenger is compared with, or the one a scenario's row reports.

    Attributes:
        attacker (None | str | Unset):
        backend (None | str | Unset):
        eer_percent (float | None | Unset): Its EER (%).
        n_seeds (int | None | Unset): Seeds its EER is the mean of.
        pretrained (bool | None | Unset): In a row: whether the pretrained verifier gave it.
    """

    attacker: str | Unset | None = UNSET
    backend: str | Unset | None = UNSET
    eer_percent: float | Unset | None = UNSET
    n_seeds: int | Unset | None = UNSET
    pretrained: bool | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attacker: str | Unset | None
        if isinstance(self.attacker, Unset):
            attacker = UNSET
        else:
            attacker = self.attacker

        backend: str | Unset | None
        if isinstance(self.backend, Unset):
            backend = UNSET
        else:
            backend = self.backend

        eer_percent: float | Unset | None
        if isinstance(self.eer_percent, Unset):
            eer_percent = UNSET
        else:
            eer_percent = self.eer_percent

        n_seeds: int | Unset | None
        if isinstance(self.n_seeds, Unset):
            n_seeds = UNSET
        else:
            n_seeds = self.n_seeds

        pretrained: bool | Unset | None
        if isinstance(self.pretrained, Unset):
            pretrained = UNSET
        else:
            pretrained = self.pretrained

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if attacker is not UNSET:
            field_dict["attacker"] = attacker
        if backend is not UNSET:
            field_dict["backend"] = backend
        if eer_percent is not UNSET:
            field_dict["eer_percent"] = eer_percent
        if n_seeds is not UNSET:
            field_dict["n_seeds"] = n_seeds
        if pretrained is not UNSET:
            field_dict["pretrained"] = pretrained

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_attacker(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        attacker = _parse_attacker(d.pop("attacker", UNSET))

        def _parse_backend(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        backend = _parse_backend(d.pop("backend", UNSET))

        def _parse_eer_percent(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        eer_percent = _parse_eer_percent(d.pop("eer_percent", UNSET))

        def _parse_n_seeds(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        n_seeds = _parse_n_seeds(d.pop("n_seeds", UNSET))

        def _parse_pretrained(data: object) -> bool | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        pretrained = _parse_pretrained(d.pop("pretrained", UNSET))

        challenger_attacker_out = cls(
            attacker=attacker,
            backend=backend,
            eer_percent=eer_percent,
            n_seeds=n_seeds,
            pretrained=pretrained,
        )

        challenger_attacker_out.additional_properties = d
        return challenger_attacker_out

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
