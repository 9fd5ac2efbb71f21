from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.upload_part import UploadPart


T = TypeVar("T", bound="ArchiveUploadOut")


@_attrs_define
class ArchiveUploadOut:
    """Where to upload the parts, and the ticket for the `complete` call.

    Attributes:
        complete_url (str):
        expires_at (datetime.datetime):
        key (str):
        multipart (bool): True: S3 multipart; send the parts' ETags to complete.
        part_size_bytes (int):
        parts (list[UploadPart]):
        upload_id (str): Opaque signed ticket; pass it to `.../complete`.
    """

    complete_url: str
    expires_at: datetime.datetime
    key: str
    multipart: bool
    part_size_bytes: int
    parts: list[UploadPart]
    upload_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        complete_url = self.complete_url

        expires_at = self.expires_at.isoformat()

        key = self.key

        multipart = self.multipart

        part_size_bytes = self.part_size_bytes

        parts = []
        for parts_item_data in self.parts:
            parts_item = parts_item_data.to_dict()
            parts.append(parts_item)

        upload_id = self.upload_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "complete_url": complete_url,
                "expires_at": expires_at,
                "key": key,
                "multipart": multipart,
                "part_size_bytes": part_size_bytes,
                "parts": parts,
                "upload_id": upload_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.upload_part import UploadPart

        d = dict(src_dict)
        complete_url = d.pop("complete_url")

        expires_at = datetime.datetime.fromisoformat(d.pop("expires_at"))

        key = d.pop("key")

        multipart = d.pop("multipart")

        part_size_bytes = d.pop("part_size_bytes")

        parts = []
        _parts = d.pop("parts")
        for parts_item_data in _parts:
            parts_item = UploadPart.from_dict(parts_item_data)

            parts.append(parts_item)

        upload_id = d.pop("upload_id")

        archive_upload_out = cls(
            complete_url=complete_url,
            expires_at=expires_at,
            key=key,
            multipart=multipart,
            part_size_bytes=part_size_bytes,
            parts=parts,
            upload_id=upload_id,
        )

        archive_upload_out.additional_properties = d
        return archive_upload_out

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
