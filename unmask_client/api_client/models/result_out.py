from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ResultOut")


@_attrs_define
class ResultOut:
    """One metric value (seed -1 = aggregate over seeds; value null = not computed).

    Attributes:
        backend (str):
        metric (str):
        scenario (str):
        seed (int):
        value (float | None):
        attacker (str | Unset): The attacker of an attacker zoo that measured it (`baseline` when the job ran one
            attacker; docs/scoring.md, Attacker zoo). Default: 'baseline'.
    """

    backend: str
    metric: str
    scenario: str
    seed: int
    value: float | None
    attacker: str | Unset = "baseline"
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        backend = self.backend

        metric = self.metric

        scenario = self.scenario

        seed = self.seed

        value: float | None
        value = self.value

        attacker = self.attacker

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "backend": backend,
                "metric": metric,
                "scenario": scenario,
                "seed": seed,
                "value": value,
            }
        )
        if attacker is not UNSET:
            field_dict["attacker"] = attacker

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        backend = d.pop("backend")

        metric = d.pop("metric")

        scenario = d.pop("scenario")

        seed = d.pop("seed")

        def _parse_value(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        value = _parse_value(d.pop("value"))

        attacker = d.pop("attacker", UNSET)

        result_out = cls(
            backend=backend,
            metric=metric,
            scenario=scenario,
            seed=seed,
            value=value,
            attacker=attacker,
        )

        result_out.additional_properties = d
        return result_out

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
