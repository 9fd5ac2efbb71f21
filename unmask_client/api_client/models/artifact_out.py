from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.artifact_out_headers import ArtifactOutHeaders


T = TypeVar("T", bound="ArtifactOut")


@_attrs_define
class ArtifactOut:
    """A file a job produced, with a short-lived download link.

    Attributes:
        id (int):
        key (str):
        media_type (str):
        sha256 (str):
        size_bytes (int):
        stage (None | str):
        url (str): Presigned GET URL (no token needed) until `url_expires_at`.
        url_expires_at (datetime.datetime):
        headers (ArtifactOutHeaders | Unset): Send with the GET.
    """

    id: int
    key: str
    media_type: str
    sha256: str
    size_bytes: int
    stage: str | None
    url: str
    url_expires_at: datetime.datetime
    headers: ArtifactOutHeaders | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        key = self.key

        media_type = self.media_type

        sha256 = self.sha256

        size_bytes = self.size_bytes

        stage: str | None
        stage = self.stage

        url = self.url

        url_expires_at = self.url_expires_at.isoformat()

        headers: dict[str, Any] | Unset = UNSET
        if not isinstance(self.headers, Unset):
            headers = self.headers.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "key": key,
                "media_type": media_type,
                "sha256": sha256,
                "size_bytes": size_bytes,
                "stage": stage,
                "url": url,
                "url_expires_at": url_expires_at,
            }
        )
        if headers is not UNSET:
            field_dict["headers"] = headers

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.artifact_out_headers import ArtifactOutHeaders

        d = dict(src_dict)
        id = d.pop("id")

        key = d.pop("key")

        media_type = d.pop("media_type")

        sha256 = d.pop("sha256")

        size_bytes = d.pop("size_bytes")

        def _parse_stage(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        stage = _parse_stage(d.pop("stage"))

        url = d.pop("url")

        url_expires_at = datetime.datetime.fromisoformat(d.pop("url_expires_at"))

        _headers = d.pop("headers", UNSET)
        headers: ArtifactOutHeaders | Unset
        if isinstance(_headers, Unset):
            headers = UNSET
        else:
            headers = ArtifactOutHeaders.from_dict(_headers)

        artifact_out = cls(
            id=id,
            key=key,
            media_type=media_type,
            sha256=sha256,
            size_bytes=size_bytes,
            stage=stage,
            url=url,
            url_expires_at=url_expires_at,
            headers=headers,
        )

        artifact_out.additional_properties = d
        return artifact_out

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
