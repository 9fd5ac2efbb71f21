from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import (
    Any,
    Literal,
    Self,
    TypeVar,
    cast,
)

from attrs import define as _attrs_define

from ..models.public_phase_in_allowed_kinds_type_0_item import (
    PublicPhaseInAllowedKindsType0Item,
)
from ..types import UNSET, Unset

T = TypeVar("T", bound="PublicPhaseIn")


@_attrs_define
class PublicPhaseIn:
    """A public phase: its results are shown as they finish.

    Attributes:
        name (str):
        starts_at (datetime.datetime): When jobs are accepted from (with a time zone).
        allowed_kinds (list[PublicPhaseInAllowedKindsType0Item] | None | Unset): Submission kinds whose jobs the phase
            accepts (e.g. `["container"]` for an official phase that reruns the code); none: every kind. Other kinds get
            409.
        ends_at (datetime.datetime | None | Unset): When jobs stop being accepted (409 after it), after `starts_at`;
            none: open-ended.
        submission_limit (int | None | Unset): Jobs per team in this phase (failed and cancelled not counted).
        visibility (Literal['public'] | Unset): `public` (the default). Default: 'public'.
    """

    name: str
    starts_at: datetime.datetime
    allowed_kinds: list[PublicPhaseInAllowedKindsType0Item] | Unset | None = UNSET
    ends_at: datetime.datetime | Unset | None = UNSET
    submission_limit: int | Unset | None = UNSET
    visibility: Literal["public"] | Unset = "public"

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        starts_at = self.starts_at.isoformat()

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

        submission_limit: int | Unset | None
        if isinstance(self.submission_limit, Unset):
            submission_limit = UNSET
        else:
            submission_limit = self.submission_limit

        visibility = self.visibility

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "starts_at": starts_at,
            }
        )
        if allowed_kinds is not UNSET:
            field_dict["allowed_kinds"] = allowed_kinds
        if ends_at is not UNSET:
            field_dict["ends_at"] = ends_at
        if submission_limit is not UNSET:
            field_dict["submission_limit"] = submission_limit
        if visibility is not UNSET:
            field_dict["visibility"] = visibility

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        starts_at = datetime.datetime.fromisoformat(d.pop("starts_at"))

        def _parse_allowed_kinds(
            data: object,
        ) -> list[PublicPhaseInAllowedKindsType0Item] | Unset | None:
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
                    allowed_kinds_type_0_item = PublicPhaseInAllowedKindsType0Item(
                        allowed_kinds_type_0_item_data
                    )

                    allowed_kinds_type_0.append(allowed_kinds_type_0_item)

                return allowed_kinds_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[PublicPhaseInAllowedKindsType0Item] | None | Unset, data)

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

        def _parse_submission_limit(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        submission_limit = _parse_submission_limit(d.pop("submission_limit", UNSET))

        visibility = cast(Literal["public"] | Unset, d.pop("visibility", UNSET))
        if visibility != "public" and not isinstance(visibility, Unset):
            raise ValueError(f"visibility must match const 'public', got '{visibility}'")

        public_phase_in = cls(
            name=name,
            starts_at=starts_at,
            allowed_kinds=allowed_kinds,
            ends_at=ends_at,
            submission_limit=submission_limit,
            visibility=visibility,
        )

        return public_phase_in
