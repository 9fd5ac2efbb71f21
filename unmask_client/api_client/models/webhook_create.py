from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.webhook_create_events_item import WebhookCreateEventsItem
from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookCreate")


@_attrs_define
class WebhookCreate:
    """Register a URL for the team's job events.

    Attributes:
        url (str): http(s) URL that receives a POST per event; must resolve to a public address unless the server allows
            private hosts (`UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS`).
        description (str | Unset):  Default: ''.
        events (list[WebhookCreateEventsItem] | Unset): Event types to deliver (default: all).
    """

    url: str
    description: str | Unset = ""
    events: list[WebhookCreateEventsItem] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        description = self.description

        events: list[str] | Unset = UNSET
        if not isinstance(self.events, Unset):
            events = []
            for events_item_data in self.events:
                events_item = events_item_data.value
                events.append(events_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if description is not UNSET:
            field_dict["description"] = description
        if events is not UNSET:
            field_dict["events"] = events

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        url = d.pop("url")

        description = d.pop("description", UNSET)

        _events = d.pop("events", UNSET)
        events: list[WebhookCreateEventsItem] | Unset = UNSET
        if _events is not UNSET:
            events = []
            for events_item_data in _events:
                events_item = WebhookCreateEventsItem(events_item_data)

                events.append(events_item)

        webhook_create = cls(
            url=url,
            description=description,
            events=events,
        )

        return webhook_create
