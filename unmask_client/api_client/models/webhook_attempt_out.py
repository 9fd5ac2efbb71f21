from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WebhookAttemptOut")


@_attrs_define
class WebhookAttemptOut:
    """One HTTP try of a delivery.

    Attributes:
        at (datetime.datetime):
        duration_ms (float):
        error (None | str):
        number (int):
        response_excerpt (str): The first 500 characters of the answer.
        status_code (int | None): HTTP status; null = no answer (see `error`).
    """

    at: datetime.datetime
    duration_ms: float
    error: str | None
    number: int
    response_excerpt: str
    status_code: int | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        duration_ms = self.duration_ms

        error: str | None
        error = self.error

        number = self.number

        response_excerpt = self.response_excerpt

        status_code: int | None
        status_code = self.status_code

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "at": at,
                "duration_ms": duration_ms,
                "error": error,
                "number": number,
                "response_excerpt": response_excerpt,
                "status_code": status_code,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        at = datetime.datetime.fromisoformat(d.pop("at"))

        duration_ms = d.pop("duration_ms")

        def _parse_error(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        number = d.pop("number")

        response_excerpt = d.pop("response_excerpt")

        def _parse_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        status_code = _parse_status_code(d.pop("status_code"))

        webhook_attempt_out = cls(
            at=at,
            duration_ms=duration_ms,
            error=error,
            number=number,
            response_excerpt=response_excerpt,
            status_code=status_code,
        )

        webhook_attempt_out.additional_properties = d
        return webhook_attempt_out

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
