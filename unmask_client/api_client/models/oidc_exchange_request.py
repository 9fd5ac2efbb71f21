from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="OidcExchangeRequest")


@_attrs_define
class OidcExchangeRequest:
    """An OpenID Connect ID token of a CI run (GitHub Actions, GitLab CI).

    Attributes:
        token (str): The compact JWT the CI platform minted (its `aud` must be the server's audience,
            `UNMASK_OIDC_AUDIENCE` or `UNMASK_PUBLIC_URL`).
    """

    token: str

    def to_dict(self) -> dict[str, Any]:
        token = self.token

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "token": token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        token = d.pop("token")

        oidc_exchange_request = cls(
            token=token,
        )

        return oidc_exchange_request
