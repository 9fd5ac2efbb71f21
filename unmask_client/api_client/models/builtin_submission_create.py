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

from ..models.builtin_submission_create_visibility import (
    BuiltinSubmissionCreateVisibility,
)
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.builtin_spec import BuiltinSpec


T = TypeVar("T", bound="BuiltinSubmissionCreate")


@_attrs_define
class BuiltinSubmissionCreate:
    """Submit a built-in anonymizer with parameters.

    Attributes:
        builtin (BuiltinSpec): A built-in anonymizer (docs/anonymizers.md).
        kind (Literal['builtin']):
        name (str):
        code_url (None | str | Unset): Optional absolute `http://` or `https://` URL.
        description (None | str | Unset): Optional: what the anonymizer does (one line of plain text, shown on the
            leaderboard).
        paper_url (None | str | Unset): Optional absolute `http://` or `https://` URL.
        visibility (BuiltinSubmissionCreateVisibility | Unset):  Default: BuiltinSubmissionCreateVisibility.PRIVATE.
    """

    builtin: BuiltinSpec
    kind: Literal["builtin"]
    name: str
    code_url: str | Unset | None = UNSET
    description: str | Unset | None = UNSET
    paper_url: str | Unset | None = UNSET
    visibility: BuiltinSubmissionCreateVisibility | Unset = (
        BuiltinSubmissionCreateVisibility.PRIVATE
    )

    def to_dict(self) -> dict[str, Any]:
        builtin = self.builtin.to_dict()

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
                "builtin": builtin,
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
        from ..models.builtin_spec import BuiltinSpec

        d = dict(src_dict)
        builtin = BuiltinSpec.from_dict(d.pop("builtin"))

        kind = cast(Literal["builtin"], d.pop("kind"))
        if kind != "builtin":
            raise ValueError(f"kind must match const 'builtin', got '{kind}'")

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
        visibility: BuiltinSubmissionCreateVisibility | Unset
        if isinstance(_visibility, Unset):
            visibility = UNSET
        else:
            visibility = BuiltinSubmissionCreateVisibility(_visibility)

        builtin_submission_create = cls(
            builtin=builtin,
            kind=kind,
            name=name,
            code_url=code_url,
            description=description,
            paper_url=paper_url,
            visibility=visibility,
        )

        return builtin_submission_create
