from __future__ import annotations

from collections.abc import Mapping
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    Self,
    TypeVar,
    cast,
)

from attrs import define as _attrs_define

from ..models.container_submission_create_visibility import (
    ContainerSubmissionCreateVisibility,
)
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.container_spec import ContainerSpec


T = TypeVar("T", bound="ContainerSubmissionCreate")


@_attrs_define
class ContainerSubmissionCreate:
    """Submit an anonymizer as a pinned container image.

    Attributes:
        container (ContainerSpec): An OCI image pinned by digest (run by the container runner).
        kind (Literal['container']):
        name (str):
        code_url (None | str | Unset): Optional absolute `http://` or `https://` URL.
        description (None | str | Unset): Optional: what the anonymizer does (one line of plain text, shown on the
            leaderboard).
        paper_url (None | str | Unset): Optional absolute `http://` or `https://` URL.
        visibility (ContainerSubmissionCreateVisibility | Unset):  Default: ContainerSubmissionCreateVisibility.PRIVATE.
    """

    container: ContainerSpec
    kind: Literal["container"]
    name: str
    code_url: str | Unset | None = UNSET
    description: str | Unset | None = UNSET
    paper_url: str | Unset | None = UNSET
    visibility: ContainerSubmissionCreateVisibility | Unset = (
        ContainerSubmissionCreateVisibility.PRIVATE
    )

    def to_dict(self) -> dict[str, Any]:
        container = self.container.to_dict()

        kind = self.kind

        name = self.name

        code_url: str | Unset | None
        if isinstance(self.code_url, Unset):
            code_url = UNSET
        else:
            code_url = self.code_url

        description: str | Unset | None
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        paper_url: str | Unset | None
        if isinstance(self.paper_url, Unset):
            paper_url = UNSET
        else:
            paper_url = self.paper_url

        visibility: str | Unset = UNSET
        if not isinstance(self.visibility, Unset):
            visibility = self.visibility.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "container": container,
                "kind": kind,
                "name": name,
            }
        )
        if code_url is not UNSET:
            field_dict["code_url"] = code_url
        if description is not UNSET:
            field_dict["description"] = description
        if paper_url is not UNSET:
            field_dict["paper_url"] = paper_url
        if visibility is not UNSET:
            field_dict["visibility"] = visibility

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.container_spec import ContainerSpec

        d = dict(src_dict)
        container = ContainerSpec.from_dict(d.pop("container"))

        kind = cast(Literal["container"], d.pop("kind"))
        if kind != "container":
            raise ValueError(f"kind must match const 'container', got '{kind}'")

        name = d.pop("name")

        def _parse_code_url(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        code_url = _parse_code_url(d.pop("code_url", UNSET))

        def _parse_description(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        def _parse_paper_url(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        paper_url = _parse_paper_url(d.pop("paper_url", UNSET))

        _visibility = d.pop("visibility", UNSET)
        visibility: ContainerSubmissionCreateVisibility | Unset
        if isinstance(_visibility, Unset):
            visibility = UNSET
        else:
            visibility = ContainerSubmissionCreateVisibility(_visibility)

        container_submission_create = cls(
            container=container,
            kind=kind,
            name=name,
            code_url=code_url,
            description=description,
            paper_url=paper_url,
            visibility=visibility,
        )

        return container_submission_create
