from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ServiceSpec")


@_attrs_define
class ServiceSpec:
    """An anonymizer served over HTTPS (docs/service-contract.md).

    Attributes:
        url (str): Base URL of the endpoint (`GET {url}/info`, `POST {url}/anonymize`): https, a globally routable
            address.
        credential (None | str | Unset): The header's value.
        credential_header (None | str | Unset): Optional header the endpoint requires (e.g. `Authorization`, `X-Api-
            Key`); its value is stored encrypted and never shown again.
    """

    url: str
    credential: str | Unset | None = UNSET
    credential_header: str | Unset | None = UNSET

    def to_dict(self) -> dict[str, Any]:
        url = self.url

        credential: str | Unset | None
        if isinstance(self.credential, Unset):
            credential = UNSET
        else:
            credential = self.credential

        credential_header: str | Unset | None
        if isinstance(self.credential_header, Unset):
            credential_header = UNSET
        else:
            credential_header = self.credential_header

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "url": url,
            }
        )
        if credential is not UNSET:
            field_dict["credential"] = credential
        if credential_header is not UNSET:
            field_dict["credential_header"] = credential_header

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        url = d.pop("url")

        def _parse_credential(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        credential = _parse_credential(d.pop("credential", UNSET))

        def _parse_credential_header(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        credential_header = _parse_credential_header(d.pop("credential_header", UNSET))

        service_spec = cls(
            url=url,
            credential=credential,
            credential_header=credential_header,
        )

        return service_spec
