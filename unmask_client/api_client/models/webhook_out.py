from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WebhookOut")


@_attrs_define
class WebhookOut:
    """A registered endpoint (the secret is never shown again after creation).

    Attributes:
        active (bool):
        created_at (datetime.datetime):
        description (str):
        events (list[str]):
        id (int):
        secret_prefix (str): The first characters of the secret, to tell apart.
        url (str):
    """

    active: bool
    created_at: datetime.datetime
    description: str
    events: list[str]
    id: int
    secret_prefix: str
    url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        active = self.active

        created_at = self.created_at.isoformat()

        description = self.description

        events = self.events

        id = self.id

        secret_prefix = self.secret_prefix

        url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "active": active,
                "created_at": created_at,
                "description": description,
                "events": events,
                "id": id,
                "secret_prefix": secret_prefix,
                "url": url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        active = d.pop("active")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        events = cast(list[str], d.pop("events"))

        id = d.pop("id")

        secret_prefix = d.pop("secret_prefix")

        url = d.pop("url")

        webhook_out = cls(
            active=active,
            created_at=created_at,
            description=description,
            events=events,
            id=id,
            secret_prefix=secret_prefix,
            url=url,
        )

        webhook_out.additional_properties = d
        return webhook_out

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
