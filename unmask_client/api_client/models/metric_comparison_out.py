from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="MetricComparisonOut")


@_attrs_define
class MetricComparisonOut:
    """
    Attributes:
        a (float | None):
        b (float | None):
        backend (str):
        better (None | str): `a`, `b`, `equal`, or null when a value is missing.
        difference (float | None): b - a, in the metric's unit.
        higher_is_better (bool):
        label (str):
        metric (str):
        scenario (str):
        unit (str):
        paired_interval (list[float] | None | Unset): 95 % paired speaker-bootstrap interval of the difference (EER rows
            of a (scenario, back-end) where both jobs kept their trials on the same trial grid).
    """

    a: float | None
    b: float | None
    backend: str
    better: str | None
    difference: float | None
    higher_is_better: bool
    label: str
    metric: str
    scenario: str
    unit: str
    paired_interval: list[float] | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        a: float | None
        a = self.a

        b: float | None
        b = self.b

        backend = self.backend

        better: str | None
        better = self.better

        difference: float | None
        difference = self.difference

        higher_is_better = self.higher_is_better

        label = self.label

        metric = self.metric

        scenario = self.scenario

        unit = self.unit

        paired_interval: list[float] | Unset | None
        if isinstance(self.paired_interval, Unset):
            paired_interval = UNSET
        elif isinstance(self.paired_interval, list):
            paired_interval = []
            for paired_interval_type_0_item_data in self.paired_interval:
                paired_interval_type_0_item: float
                paired_interval_type_0_item = paired_interval_type_0_item_data
                paired_interval.append(paired_interval_type_0_item)

        else:
            paired_interval = self.paired_interval

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "a": a,
                "b": b,
                "backend": backend,
                "better": better,
                "difference": difference,
                "higher_is_better": higher_is_better,
                "label": label,
                "metric": metric,
                "scenario": scenario,
                "unit": unit,
            }
        )
        if paired_interval is not UNSET:
            field_dict["paired_interval"] = paired_interval

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_a(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        a = _parse_a(d.pop("a"))

        def _parse_b(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        b = _parse_b(d.pop("b"))

        backend = d.pop("backend")

        def _parse_better(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        better = _parse_better(d.pop("better"))

        def _parse_difference(data: object) -> float | None:
            if data is None:
                return data
            return cast(float | None, data)

        difference = _parse_difference(d.pop("difference"))

        higher_is_better = d.pop("higher_is_better")

        label = d.pop("label")

        metric = d.pop("metric")

        scenario = d.pop("scenario")

        unit = d.pop("unit")

        def _parse_paired_interval(data: object) -> list[float] | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                paired_interval_type_0 = []
                _paired_interval_type_0 = data
                for paired_interval_type_0_item_data in _paired_interval_type_0:

                    def _parse_paired_interval_type_0_item(data: object) -> float:
                        return cast(float, data)

                    paired_interval_type_0_item = _parse_paired_interval_type_0_item(
                        paired_interval_type_0_item_data
                    )

                    paired_interval_type_0.append(paired_interval_type_0_item)

                return paired_interval_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[float] | None | Unset, data)

        paired_interval = _parse_paired_interval(d.pop("paired_interval", UNSET))

        metric_comparison_out = cls(
            a=a,
            b=b,
            backend=backend,
            better=better,
            difference=difference,
            higher_is_better=higher_is_better,
            label=label,
            metric=metric,
            scenario=scenario,
            unit=unit,
            paired_interval=paired_interval,
        )

        metric_comparison_out.additional_properties = d
        return metric_comparison_out

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
