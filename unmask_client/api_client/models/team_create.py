from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TeamCreate")


@_attrs_define
class TeamCreate:
    """A new team.

    Attributes:
        slug (str): Lowercase letters, digits and '-', at most 64 characters; unique.
        display_name (None | str | Unset):
    """

    slug: str
    display_name: str | Unset | None = UNSET

    def to_dict(self) -> dict[str, Any]:
        slug = self.slug

        display_name: str | Unset | None
        if isinstance(self.display_name, Unset):
            display_name = UNSET
        else:
            display_name = self.display_name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "slug": slug,
            }
        )
        if display_name is not UNSET:
            field_dict["display_name"] = display_name

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        slug = d.pop("slug")

        def _parse_display_name(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        display_name = _parse_display_name(d.pop("display_name", UNSET))

        team_create = cls(
            slug=slug,
            display_name=display_name,
        )

        return team_create
