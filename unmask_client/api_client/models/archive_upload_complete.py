from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.completed_part import CompletedPart


T = TypeVar("T", bound="ArchiveUploadComplete")


@_attrs_define
class ArchiveUploadComplete:
    """Finish a presigned upload (``parts``: required for multipart uploads).

    Attributes:
        parts (list[CompletedPart] | Unset):
    """

    parts: list[CompletedPart] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        parts: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.parts, Unset):
            parts = []
            for parts_item_data in self.parts:
                parts_item = parts_item_data.to_dict()
                parts.append(parts_item)

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if parts is not UNSET:
            field_dict["parts"] = parts

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.completed_part import CompletedPart

        d = dict(src_dict)
        _parts = d.pop("parts", UNSET)
        parts: list[CompletedPart] | Unset = UNSET
        if _parts is not UNSET:
            parts = []
            for parts_item_data in _parts:
                parts_item = CompletedPart.from_dict(parts_item_data)

                parts.append(parts_item)

        archive_upload_complete = cls(
            parts=parts,
        )

        return archive_upload_complete
