from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.upload_part_headers import UploadPartHeaders


T = TypeVar("T", bound="UploadPart")


@_attrs_define
class UploadPart:
    """One presigned request of an upload: send ``headers`` unchanged.

    Attributes:
        headers (UploadPartHeaders):
        method (str):
        part_number (int):
        size_bytes (int): Exactly this many bytes of the archive go in this part.
        url (str):
    """

    headers: UploadPartHeaders
    method: str
    part_number: int
    size_bytes: int
    url: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        headers = self.headers.to_dict()

        method = self.method

        part_number = self.part_number

        size_bytes = self.size_bytes

        url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "headers": headers,
                "method": method,
                "part_number": part_number,
                "size_bytes": size_bytes,
                "url": url,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.upload_part_headers import UploadPartHeaders

        d = dict(src_dict)
        headers = UploadPartHeaders.from_dict(d.pop("headers"))

        method = d.pop("method")

        part_number = d.pop("part_number")

        size_bytes = d.pop("size_bytes")

        url = d.pop("url")

        upload_part = cls(
            headers=headers,
            method=method,
            part_number=part_number,
            size_bytes=size_bytes,
            url=url,
        )

        upload_part.additional_properties = d
        return upload_part

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
