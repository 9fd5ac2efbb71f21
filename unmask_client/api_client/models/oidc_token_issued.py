from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="OidcTokenIssued")


@_attrs_define
class OidcTokenIssued:
    """A short-lived API token for the trusted submitter's team (plaintext shown this once).

    Attributes:
        exchange_id (int): The audit row of this exchange.
        expires_at (datetime.datetime):
        prefix (str):
        ref (None | str):
        repository (str):
        run_id (None | str):
        scopes (list[str]):
        team_slug (str):
        token (str):
    """

    exchange_id: int
    expires_at: datetime.datetime
    prefix: str
    ref: str | None
    repository: str
    run_id: str | None
    scopes: list[str]
    team_slug: str
    token: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        exchange_id = self.exchange_id

        expires_at = self.expires_at.isoformat()

        prefix = self.prefix

        ref: str | None
        ref = self.ref

        repository = self.repository

        run_id: str | None
        run_id = self.run_id

        scopes = self.scopes

        team_slug = self.team_slug

        token = self.token

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "exchange_id": exchange_id,
                "expires_at": expires_at,
                "prefix": prefix,
                "ref": ref,
                "repository": repository,
                "run_id": run_id,
                "scopes": scopes,
                "team_slug": team_slug,
                "token": token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        exchange_id = d.pop("exchange_id")

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        prefix = d.pop("prefix")

        def _parse_ref(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        ref = _parse_ref(d.pop("ref"))

        repository = d.pop("repository")

        def _parse_run_id(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        run_id = _parse_run_id(d.pop("run_id"))

        scopes = cast(list[str], d.pop("scopes"))

        team_slug = d.pop("team_slug")

        token = d.pop("token")

        oidc_token_issued = cls(
            exchange_id=exchange_id,
            expires_at=expires_at,
            prefix=prefix,
            ref=ref,
            repository=repository,
            run_id=run_id,
            scopes=scopes,
            team_slug=team_slug,
            token=token,
        )

        oidc_token_issued.additional_properties = d
        return oidc_token_issued

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
