from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..models.archive_upload_create_visibility import ArchiveUploadCreateVisibility
from ..types import UNSET, Unset

T = TypeVar("T", bound="ArchiveUploadCreate")


@_attrs_define
class ArchiveUploadCreate:
    """Start a presigned (multipart) upload of a large archive.

    Attributes:
        name (str):
        protocol_id (int): The protocol whose audio the archive anonymizes.
        sha256 (str): Hex SHA-256 of the whole archive (64 lowercase digits).
        size_bytes (int): Exact archive size, bytes, at most this server's limit (UNMASK_MAX_PRESIGNED_ARCHIVE_BYTES, 50
            GiB by default; above it: 422).
        media_type (str | Unset):  Default: 'application/octet-stream'.
        visibility (ArchiveUploadCreateVisibility | Unset):  Default: ArchiveUploadCreateVisibility.PRIVATE.
    """

    name: str
    protocol_id: int
    sha256: str
    size_bytes: int
    media_type: str | Unset = "application/octet-stream"
    visibility: ArchiveUploadCreateVisibility | Unset = ArchiveUploadCreateVisibility.PRIVATE

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        protocol_id = self.protocol_id

        sha256 = self.sha256

        size_bytes = self.size_bytes

        media_type = self.media_type

        visibility: str | Unset = UNSET
        if not isinstance(self.visibility, Unset):
            visibility = self.visibility.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "name": name,
                "protocol_id": protocol_id,
                "sha256": sha256,
                "size_bytes": size_bytes,
            }
        )
        if media_type is not UNSET:
            field_dict["media_type"] = media_type
        if visibility is not UNSET:
            field_dict["visibility"] = visibility

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        protocol_id = d.pop("protocol_id")

        sha256 = d.pop("sha256")

        size_bytes = d.pop("size_bytes")

        media_type = d.pop("media_type", UNSET)

        _visibility = d.pop("visibility", UNSET)
        visibility: ArchiveUploadCreateVisibility | Unset
        if isinstance(_visibility, Unset):
            visibility = UNSET
        else:
            visibility = ArchiveUploadCreateVisibility(_visibility)

        archive_upload_create = cls(
            name=name,
            protocol_id=protocol_id,
            sha256=sha256,
            size_bytes=size_bytes,
            media_type=media_type,
            visibility=visibility,
        )

        return archive_upload_create
