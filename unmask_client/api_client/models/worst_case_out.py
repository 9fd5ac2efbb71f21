from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.worst_case_out_metrics import WorstCaseOutMetrics


T = TypeVar("T", bound="WorstCaseOut")


@_attrs_define
class WorstCaseOut:
    """One scenario's worst case over an attacker zoo (services/pipeline/zoo.py).

    Attributes:
        attacker (str): The attacker with the lowest mean EER.
        attackers (list[str]): Every attacker scored in this scenario.
        backend (str):
        eer_percent (float | None): Its EER (%), mean over seeds.
        metrics (WorstCaseOutMetrics): Per seed-summary metric: the worst value and its attacker and back-end.
        n_seeds (int):
    """

    attacker: str
    attackers: list[str]
    backend: str
    eer_percent: float | None
    metrics: WorstCaseOutMetrics
    n_seeds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attacker = self.attacker

        attackers = self.attackers

        backend = self.backend

        eer_percent: float | None
        eer_percent = self.eer_percent

        metrics = self.metrics.to_dict()

        n_seeds = self.n_seeds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attacker": attacker,
                "attackers": attackers,
                "backend": backend,
                "eer_percent": eer_percent,
                "metrics": metrics,
                "n_seeds": n_seeds,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.worst_case_out_metrics import WorstCaseOutMetrics

        d = dict(src_dict)
        attacker = d.pop("attacker")

        attackers = cast(list[str], d.pop("attackers"))

        backend = d.pop("backend")

        def _parse_eer_percent(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        eer_percent = _parse_eer_percent(d.pop("eer_percent"))

        metrics = WorstCaseOutMetrics.from_dict(d.pop("metrics"))

        n_seeds = d.pop("n_seeds")

        worst_case_out = cls(
            attacker=attacker,
            attackers=attackers,
            backend=backend,
            eer_percent=eer_percent,
            metrics=metrics,
            n_seeds=n_seeds,
        )

        worst_case_out.additional_properties = d
        return worst_case_out

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
