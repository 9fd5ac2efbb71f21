from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.quotas import Quotas


T = TypeVar("T", bound="Me")


@_attrs_define
class Me:
    """The caller: token, team and scopes.

    Attributes:
        quotas (Quotas): The team's quotas (failed/cancelled jobs and rejected submissions are not charged).
        scopes (list[str]):
        team_id (int):
        team_slug (str):
        token_prefix (str):
        user_id (int):
    """

    quotas: Quotas
    scopes: list[str]
    team_id: int
    team_slug: str
    token_prefix: str
    user_id: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        quotas = self.quotas.to_dict()

        scopes = self.scopes

        team_id = self.team_id

        team_slug = self.team_slug

        token_prefix = self.token_prefix

        user_id = self.user_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "quotas": quotas,
                "scopes": scopes,
                "team_id": team_id,
                "team_slug": team_slug,
                "token_prefix": token_prefix,
                "user_id": user_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.quotas import Quotas

        d = dict(src_dict)
        quotas = Quotas.from_dict(d.pop("quotas"))

        scopes = cast(list[str], d.pop("scopes"))

        team_id = d.pop("team_id")

        team_slug = d.pop("team_slug")

        token_prefix = d.pop("token_prefix")

        user_id = d.pop("user_id")

        me = cls(
            quotas=quotas,
            scopes=scopes,
            team_id=team_id,
            team_slug=team_slug,
            token_prefix=token_prefix,
            user_id=user_id,
        )

        me.additional_properties = d
        return me

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
