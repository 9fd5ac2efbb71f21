from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.webhook_delivery_out_state import WebhookDeliveryOutState

if TYPE_CHECKING:
    from ..models.webhook_attempt_out import WebhookAttemptOut
    from ..models.webhook_delivery_out_payload import WebhookDeliveryOutPayload


T = TypeVar("T", bound="WebhookDeliveryOut")


@_attrs_define
class WebhookDeliveryOut:
    """One event sent (or to be sent) to an endpoint, with every attempt.

    Attributes:
        attempt_log (list[WebhookAttemptOut]):
        attempts (int):
        created_at (datetime.datetime):
        delivered_at (datetime.datetime | None):
        event_id (str): The `webhook-id` header (the same on every retry).
        event_type (str):
        id (int):
        job_id (int | None):
        last_error (None | str):
        last_status_code (int | None):
        next_attempt_at (datetime.datetime | None):
        payload (WebhookDeliveryOutPayload):
        state (WebhookDeliveryOutState):
    """

    attempt_log: list[WebhookAttemptOut]
    attempts: int
    created_at: datetime.datetime
    delivered_at: datetime.datetime | None
    event_id: str
    event_type: str
    id: int
    job_id: int | None
    last_error: str | None
    last_status_code: int | None
    next_attempt_at: datetime.datetime | None
    payload: WebhookDeliveryOutPayload
    state: WebhookDeliveryOutState
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt_log = []
        for attempt_log_item_data in self.attempt_log:
            attempt_log_item = attempt_log_item_data.to_dict()
            attempt_log.append(attempt_log_item)

        attempts = self.attempts

        created_at = self.created_at.isoformat()

        delivered_at: str | None
        if isinstance(self.delivered_at, datetime.datetime):
            delivered_at = self.delivered_at.isoformat()
        else:
            delivered_at = self.delivered_at

        event_id = self.event_id

        event_type = self.event_type

        id = self.id

        job_id: int | None
        job_id = self.job_id

        last_error: str | None
        last_error = self.last_error

        last_status_code: int | None
        last_status_code = self.last_status_code

        next_attempt_at: str | None
        if isinstance(self.next_attempt_at, datetime.datetime):
            next_attempt_at = self.next_attempt_at.isoformat()
        else:
            next_attempt_at = self.next_attempt_at

        payload = self.payload.to_dict()

        state = self.state.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt_log": attempt_log,
                "attempts": attempts,
                "created_at": created_at,
                "delivered_at": delivered_at,
                "event_id": event_id,
                "event_type": event_type,
                "id": id,
                "job_id": job_id,
                "last_error": last_error,
                "last_status_code": last_status_code,
                "next_attempt_at": next_attempt_at,
                "payload": payload,
                "state": state,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.webhook_attempt_out import WebhookAttemptOut
        from ..models.webhook_delivery_out_payload import WebhookDeliveryOutPayload

        d = dict(src_dict)
        attempt_log = []
        _attempt_log = d.pop("attempt_log")
        for attempt_log_item_data in _attempt_log:
            attempt_log_item = WebhookAttemptOut.from_dict(attempt_log_item_data)

            attempt_log.append(attempt_log_item)

        attempts = d.pop("attempts")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_delivered_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                delivered_at_type_0 = datetime.datetime.fromisoformat(data)

                return delivered_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        delivered_at = _parse_delivered_at(d.pop("delivered_at"))

        event_id = d.pop("event_id")

        event_type = d.pop("event_type")

        id = d.pop("id")

        def _parse_job_id(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        job_id = _parse_job_id(d.pop("job_id"))

        def _parse_last_error(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        last_error = _parse_last_error(d.pop("last_error"))

        def _parse_last_status_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_status_code = _parse_last_status_code(d.pop("last_status_code"))

        def _parse_next_attempt_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_attempt_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_attempt_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at"))

        payload = WebhookDeliveryOutPayload.from_dict(d.pop("payload"))

        state = WebhookDeliveryOutState(d.pop("state"))

        webhook_delivery_out = cls(
            attempt_log=attempt_log,
            attempts=attempts,
            created_at=created_at,
            delivered_at=delivered_at,
            event_id=event_id,
            event_type=event_type,
            id=id,
            job_id=job_id,
            last_error=last_error,
            last_status_code=last_status_code,
            next_attempt_at=next_attempt_at,
            payload=payload,
            state=state,
        )

        webhook_delivery_out.additional_properties = d
        return webhook_delivery_out

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
