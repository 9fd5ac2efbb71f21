from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.check_out_status import CheckOutStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="CheckOut")


@_attrs_define
class CheckOut:
    """One dependency check of the readiness probe.

    Attributes:
        status (CheckOutStatus):
        detail (str | Unset):  Default: ''.
        latency_ms (float | None | Unset):
    """

    status: CheckOutStatus
    detail: str | Unset = ""
    latency_ms: float | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status.value

        detail = self.detail

        latency_ms: float | Unset | None
        if isinstance(self.latency_ms, Unset):
            latency_ms = UNSET
        else:
            latency_ms = self.latency_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
            }
        )
        if detail is not UNSET:
            field_dict["detail"] = detail
        if latency_ms is not UNSET:
            field_dict["latency_ms"] = latency_ms

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        status = CheckOutStatus(d.pop("status"))

        detail = d.pop("detail", UNSET)

        def _parse_latency_ms(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        latency_ms = _parse_latency_ms(d.pop("latency_ms", UNSET))

        check_out = cls(
            status=status,
            detail=detail,
            latency_ms=latency_ms,
        )

        check_out.additional_properties = d
        return check_out

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
