from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.token_create_scopes_item import TokenCreateScopesItem
from ..types import UNSET, Unset

T = TypeVar("T", bound="TokenCreate")


@_attrs_define
class TokenCreate:
    """A new API token for a team.

    Attributes:
        scopes (list[TokenCreateScopesItem]):
        team (str): The team's slug.
        email (None | str | Unset): Owner; default: the team's robot user (created on first use).
        expires_days (float | None | Unset): Lifetime in days; null = no expiry.
        name (str | Unset): A label (e.g. `ci`). Default: ''.
    """

    scopes: list[TokenCreateScopesItem]
    team: str
    email: str | Unset | None = UNSET
    expires_days: float | Unset | None = UNSET
    name: str | Unset = ""

    def to_dict(self) -> dict[str, Any]:
        scopes = []
        for scopes_item_data in self.scopes:
            scopes_item = scopes_item_data.value
            scopes.append(scopes_item)

        team = self.team

        email: str | Unset | None
        if isinstance(self.email, Unset):
            email = UNSET
        else:
            email = self.email

        expires_days: float | Unset | None
        if isinstance(self.expires_days, Unset):
            expires_days = UNSET
        else:
            expires_days = self.expires_days

        name = self.name

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "scopes": scopes,
                "team": team,
            }
        )
        if email is not UNSET:
            field_dict["email"] = email
        if expires_days is not UNSET:
            field_dict["expires_days"] = expires_days
        if name is not UNSET:
            field_dict["name"] = name

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        scopes = []
        _scopes = d.pop("scopes")
        for scopes_item_data in _scopes:
            scopes_item = TokenCreateScopesItem(scopes_item_data)

            scopes.append(scopes_item)

        team = d.pop("team")

        def _parse_email(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        email = _parse_email(d.pop("email", UNSET))

        def _parse_expires_days(data: object) -> float | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        expires_days = _parse_expires_days(d.pop("expires_days", UNSET))

        name = d.pop("name", UNSET)

        token_create = cls(
            scopes=scopes,
            team=team,
            email=email,
            expires_days=expires_days,
            name=name,
        )

        return token_create
