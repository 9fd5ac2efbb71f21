from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ContainerSpec")


@_attrs_define
class ContainerSpec:
    """An OCI image pinned by digest (run by the container runner).

    Attributes:
        image (str): `name[:tag]@sha256:<64 hex>`; tags alone are refused (not reproducible). From the server's
            registries only (UNMASK_CONTAINER_REGISTRIES; the server's document states them in the pattern).
    """

    image: str

    def to_dict(self) -> dict[str, Any]:
        image = self.image

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "image": image,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        image = d.pop("image")

        container_spec = cls(
            image=image,
        )

        return container_spec
