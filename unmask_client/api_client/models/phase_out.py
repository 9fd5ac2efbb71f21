from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.phase_out_allowed_kinds_type_0_item import PhaseOutAllowedKindsType0Item
from ..models.phase_visibility import PhaseVisibility

T = TypeVar("T", bound="PhaseOut")


@_attrs_define
class PhaseOut:
    """A phase as stored, with whether it accepts jobs and hides results now.

    Attributes:
        allowed_kinds (list[PhaseOutAllowedKindsType0Item] | None): Submission kinds the phase accepts; null: every
            kind.
        ends_at (datetime.datetime | None):
        hidden (bool): Whether its results are hidden now.
        name (str):
        open_ (bool): Whether it accepts jobs now.
        position (int):
        reveal_at (datetime.datetime | None):
        starts_at (datetime.datetime):
        submission_limit (int | None):
        visibility (PhaseVisibility): When a phase's results are shown to everyone (``services/platform/phases/``).
    """

    allowed_kinds: list[PhaseOutAllowedKindsType0Item] | None
    ends_at: datetime.datetime | None
    hidden: bool
    name: str
    open_: bool
    position: int
    reveal_at: datetime.datetime | None
    starts_at: datetime.datetime
    submission_limit: int | None
    visibility: PhaseVisibility
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allowed_kinds: list[str] | None
        if isinstance(self.allowed_kinds, list):
            allowed_kinds = []
            for allowed_kinds_type_0_item_data in self.allowed_kinds:
                allowed_kinds_type_0_item = allowed_kinds_type_0_item_data.value
                allowed_kinds.append(allowed_kinds_type_0_item)

        else:
            allowed_kinds = self.allowed_kinds

        ends_at: str | None
        if isinstance(self.ends_at, datetime.datetime):
            ends_at = self.ends_at.isoformat()
        else:
            ends_at = self.ends_at

        hidden = self.hidden

        name = self.name

        open_ = self.open_

        position = self.position

        reveal_at: str | None
        if isinstance(self.reveal_at, datetime.datetime):
            reveal_at = self.reveal_at.isoformat()
        else:
            reveal_at = self.reveal_at

        starts_at = self.starts_at.isoformat()

        submission_limit: int | None
        submission_limit = self.submission_limit

        visibility = self.visibility.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allowed_kinds": allowed_kinds,
                "ends_at": ends_at,
                "hidden": hidden,
                "name": name,
                "open": open_,
                "position": position,
                "reveal_at": reveal_at,
                "starts_at": starts_at,
                "submission_limit": submission_limit,
                "visibility": visibility,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_allowed_kinds(
            data: object,
        ) -> list[PhaseOutAllowedKindsType0Item] | None:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_kinds_type_0 = []
                _allowed_kinds_type_0 = data
                for allowed_kinds_type_0_item_data in _allowed_kinds_type_0:
                    allowed_kinds_type_0_item = PhaseOutAllowedKindsType0Item(
                        allowed_kinds_type_0_item_data
                    )

                    allowed_kinds_type_0.append(allowed_kinds_type_0_item)

                return allowed_kinds_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[PhaseOutAllowedKindsType0Item] | None, data)

        allowed_kinds = _parse_allowed_kinds(d.pop("allowed_kinds"))

        def _parse_ends_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ends_at_type_0 = datetime.datetime.fromisoformat(data)

                return ends_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        ends_at = _parse_ends_at(d.pop("ends_at"))

        hidden = d.pop("hidden")

        name = d.pop("name")

        open_ = d.pop("open")

        position = d.pop("position")

        def _parse_reveal_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reveal_at_type_0 = datetime.datetime.fromisoformat(data)

                return reveal_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        reveal_at = _parse_reveal_at(d.pop("reveal_at"))

        starts_at = datetime.datetime.fromisoformat(d.pop("starts_at"))

        def _parse_submission_limit(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        submission_limit = _parse_submission_limit(d.pop("submission_limit"))

        visibility = PhaseVisibility(d.pop("visibility"))

        phase_out = cls(
            allowed_kinds=allowed_kinds,
            ends_at=ends_at,
            hidden=hidden,
            name=name,
            open_=open_,
            position=position,
            reveal_at=reveal_at,
            starts_at=starts_at,
            submission_limit=submission_limit,
            visibility=visibility,
        )

        phase_out.additional_properties = d
        return phase_out

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
