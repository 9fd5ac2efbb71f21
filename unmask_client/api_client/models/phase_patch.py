from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.phase_patch_allowed_kinds_type_0_item import (
    PhasePatchAllowedKindsType0Item,
)
from ..models.phase_patch_visibility import PhasePatchVisibility
from ..types import UNSET, Unset

T = TypeVar("T", bound="PhasePatch")


@_attrs_define
class PhasePatch:
    """Fields of a phase to change (the others stay); `reveal_at` may be now or past (reveals
    the results at once).

        Attributes:
            allowed_kinds (list[PhasePatchAllowedKindsType0Item] | None | Unset):
            ends_at (datetime.datetime | None | Unset):
            reveal_at (datetime.datetime | None | Unset):
            starts_at (datetime.datetime | Unset):
            submission_limit (int | None | Unset):
            visibility (PhasePatchVisibility | Unset):
    """

    allowed_kinds: list[PhasePatchAllowedKindsType0Item] | Unset | None = UNSET
    ends_at: datetime.datetime | Unset | None = UNSET
    reveal_at: datetime.datetime | Unset | None = UNSET
    starts_at: datetime.datetime | Unset = UNSET
    submission_limit: int | Unset | None = UNSET
    visibility: PhasePatchVisibility | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        allowed_kinds: list[str] | Unset | None
        if isinstance(self.allowed_kinds, Unset):
            allowed_kinds = UNSET
        elif isinstance(self.allowed_kinds, list):
            allowed_kinds = []
            for allowed_kinds_type_0_item_data in self.allowed_kinds:
                allowed_kinds_type_0_item = allowed_kinds_type_0_item_data.value
                allowed_kinds.append(allowed_kinds_type_0_item)

        else:
            allowed_kinds = self.allowed_kinds

        ends_at: str | Unset | None
        if isinstance(self.ends_at, Unset):
            ends_at = UNSET
        elif isinstance(self.ends_at, datetime.datetime):
            ends_at = self.ends_at.isoformat()
        else:
            ends_at = self.ends_at

        reveal_at: str | Unset | None
        if isinstance(self.reveal_at, Unset):
            reveal_at = UNSET
        elif isinstance(self.reveal_at, datetime.datetime):
            reveal_at = self.reveal_at.isoformat()
        else:
            reveal_at = self.reveal_at

        starts_at: str | Unset = UNSET
        if not isinstance(self.starts_at, Unset):
            starts_at = self.starts_at.isoformat()

        submission_limit: int | Unset | None
        if isinstance(self.submission_limit, Unset):
            submission_limit = UNSET
        else:
            submission_limit = self.submission_limit

        visibility: str | Unset = UNSET
        if not isinstance(self.visibility, Unset):
            visibility = self.visibility.value

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if allowed_kinds is not UNSET:
            field_dict["allowed_kinds"] = allowed_kinds
        if ends_at is not UNSET:
            field_dict["ends_at"] = ends_at
        if reveal_at is not UNSET:
            field_dict["reveal_at"] = reveal_at
        if starts_at is not UNSET:
            field_dict["starts_at"] = starts_at
        if submission_limit is not UNSET:
            field_dict["submission_limit"] = submission_limit
        if visibility is not UNSET:
            field_dict["visibility"] = visibility

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

        def _parse_allowed_kinds(
            data: object,
        ) -> list[PhasePatchAllowedKindsType0Item] | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_kinds_type_0 = []
                _allowed_kinds_type_0 = data
                for allowed_kinds_type_0_item_data in _allowed_kinds_type_0:
                    allowed_kinds_type_0_item = PhasePatchAllowedKindsType0Item(
                        allowed_kinds_type_0_item_data
                    )

                    allowed_kinds_type_0.append(allowed_kinds_type_0_item)

                return allowed_kinds_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[PhasePatchAllowedKindsType0Item] | None | Unset, data)

        allowed_kinds = _parse_allowed_kinds(d.pop("allowed_kinds", UNSET))

        def _parse_ends_at(data: object) -> datetime.datetime | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ends_at_type_0 = datetime.datetime.fromisoformat(data)

                return ends_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        ends_at = _parse_ends_at(d.pop("ends_at", UNSET))

        def _parse_reveal_at(data: object) -> datetime.datetime | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reveal_at_type_0 = datetime.datetime.fromisoformat(data)

                return reveal_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        reveal_at = _parse_reveal_at(d.pop("reveal_at", UNSET))

        _starts_at = d.pop("starts_at", UNSET)
        starts_at: datetime.datetime | Unset
        if isinstance(_starts_at, Unset):
            starts_at = UNSET
        else:
            starts_at = datetime.datetime.fromisoformat(_starts_at)

        def _parse_submission_limit(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        submission_limit = _parse_submission_limit(d.pop("submission_limit", UNSET))

        _visibility = d.pop("visibility", UNSET)
        visibility: PhasePatchVisibility | Unset
        if isinstance(_visibility, Unset):
            visibility = UNSET
        else:
            visibility = PhasePatchVisibility(_visibility)

        phase_patch = cls(
            allowed_kinds=allowed_kinds,
            ends_at=ends_at,
            reveal_at=reveal_at,
            starts_at=starts_at,
            submission_limit=submission_limit,
            visibility=visibility,
        )

        return phase_patch
