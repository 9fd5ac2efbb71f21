from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.submission_out_kind import SubmissionOutKind
from ..models.submission_out_status import SubmissionOutStatus
from ..models.submission_out_visibility import SubmissionOutVisibility
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.builtin_spec import BuiltinSpec


T = TypeVar("T", bound="SubmissionOut")


@_attrs_define
class SubmissionOut:
    """A submission. Content fields never change once accepted.

    Attributes:
        accepted_at (datetime.datetime | None):
        content_hash (str):
        created_at (datetime.datetime):
        id (int):
        kind (SubmissionOutKind):
        name (str):
        status (SubmissionOutStatus):
        team_slug (str):
        visibility (SubmissionOutVisibility):
        archive_protocol_id (int | None | Unset): Archive submissions: the protocol the audio was anonymized for.
        archive_sha256 (None | str | Unset):
        builtin (BuiltinSpec | None | Unset):
        code_url (None | str | Unset):
        container_image (None | str | Unset):
        description (None | str | Unset):
        paper_url (None | str | Unset):
        rejection_reason (None | str | Unset): `rejected` only: why (e.g. the archive's validation problems).
        service_secret (None | str | Unset): Service submissions, in the creation answer only: the secret the endpoint
            checks `Unmask-Signature` with (docs/service-contract.md); never shown again.
        service_url (None | str | Unset):
    """

    accepted_at: datetime.datetime | None
    content_hash: str
    created_at: datetime.datetime
    id: int
    kind: SubmissionOutKind
    name: str
    status: SubmissionOutStatus
    team_slug: str
    visibility: SubmissionOutVisibility
    archive_protocol_id: int | Unset | None = UNSET
    archive_sha256: str | Unset | None = UNSET
    builtin: BuiltinSpec | Unset | None = UNSET
    code_url: str | Unset | None = UNSET
    container_image: str | Unset | None = UNSET
    description: str | Unset | None = UNSET
    paper_url: str | Unset | None = UNSET
    rejection_reason: str | Unset | None = UNSET
    service_secret: str | Unset | None = UNSET
    service_url: str | Unset | None = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.builtin_spec import BuiltinSpec

        accepted_at: str | None
        if isinstance(self.accepted_at, datetime.datetime):
            accepted_at = self.accepted_at.isoformat()
        else:
            accepted_at = self.accepted_at

        content_hash = self.content_hash

        created_at = self.created_at.isoformat()

        id = self.id

        kind = self.kind.value

        name = self.name

        status = self.status.value

        team_slug = self.team_slug

        visibility = self.visibility.value

        archive_protocol_id: int | Unset | None
        if isinstance(self.archive_protocol_id, Unset):
            archive_protocol_id = UNSET
        else:
            archive_protocol_id = self.archive_protocol_id

        archive_sha256: str | Unset | None
        if isinstance(self.archive_sha256, Unset):
            archive_sha256 = UNSET
        else:
            archive_sha256 = self.archive_sha256

        builtin: dict[str, Any] | Unset | None
        if isinstance(self.builtin, Unset):
            builtin = UNSET
        elif isinstance(self.builtin, BuiltinSpec):
            builtin = self.builtin.to_dict()
        else:
            builtin = self.builtin

        code_url: str | Unset | None
        if isinstance(self.code_url, Unset):
            code_url = UNSET
        else:
            code_url = self.code_url

        container_image: str | Unset | None
        if isinstance(self.container_image, Unset):
            container_image = UNSET
        else:
            container_image = self.container_image

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

        rejection_reason: str | Unset | None
        if isinstance(self.rejection_reason, Unset):
            rejection_reason = UNSET
        else:
            rejection_reason = self.rejection_reason

        service_secret: str | Unset | None
        if isinstance(self.service_secret, Unset):
            service_secret = UNSET
        else:
            service_secret = self.service_secret

        service_url: str | Unset | None
        if isinstance(self.service_url, Unset):
            service_url = UNSET
        else:
            service_url = self.service_url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "accepted_at": accepted_at,
                "content_hash": content_hash,
                "created_at": created_at,
                "id": id,
                "kind": kind,
                "name": name,
                "status": status,
                "team_slug": team_slug,
                "visibility": visibility,
            }
        )
        if archive_protocol_id is not UNSET:
            field_dict["archive_protocol_id"] = archive_protocol_id
        if archive_sha256 is not UNSET:
            field_dict["archive_sha256"] = archive_sha256
        if builtin is not UNSET:
            field_dict["builtin"] = builtin
        if code_url is not UNSET:
            field_dict["code_url"] = code_url
        if container_image is not UNSET:
            field_dict["container_image"] = container_image
        if description is not UNSET:
            field_dict["description"] = description
        if paper_url is not UNSET:
            field_dict["paper_url"] = paper_url
        if rejection_reason is not UNSET:
            field_dict["rejection_reason"] = rejection_reason
        if service_secret is not UNSET:
            field_dict["service_secret"] = service_secret
        if service_url is not UNSET:
            field_dict["service_url"] = service_url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.builtin_spec import BuiltinSpec

        d = dict(src_dict)

        def _parse_accepted_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                accepted_at_type_0 = datetime.datetime.fromisoformat(data)

                return accepted_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        accepted_at = _parse_accepted_at(d.pop("accepted_at"))

        content_hash = d.pop("content_hash")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = d.pop("id")

        kind = SubmissionOutKind(d.pop("kind"))

        name = d.pop("name")

        status = SubmissionOutStatus(d.pop("status"))

        team_slug = d.pop("team_slug")

        visibility = SubmissionOutVisibility(d.pop("visibility"))

        def _parse_archive_protocol_id(data: object) -> int | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        archive_protocol_id = _parse_archive_protocol_id(d.pop("archive_protocol_id", UNSET))

        def _parse_archive_sha256(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        archive_sha256 = _parse_archive_sha256(d.pop("archive_sha256", UNSET))

        def _parse_builtin(data: object) -> BuiltinSpec | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                builtin_type_0 = BuiltinSpec.from_dict(data)

                return builtin_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BuiltinSpec | None | Unset, data)

        builtin = _parse_builtin(d.pop("builtin", UNSET))

        def _parse_code_url(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        code_url = _parse_code_url(d.pop("code_url", UNSET))

        def _parse_container_image(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        container_image = _parse_container_image(d.pop("container_image", UNSET))

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

        def _parse_rejection_reason(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        rejection_reason = _parse_rejection_reason(d.pop("rejection_reason", UNSET))

        def _parse_service_secret(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        service_secret = _parse_service_secret(d.pop("service_secret", UNSET))

        def _parse_service_url(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        service_url = _parse_service_url(d.pop("service_url", UNSET))

        submission_out = cls(
            accepted_at=accepted_at,
            content_hash=content_hash,
            created_at=created_at,
            id=id,
            kind=kind,
            name=name,
            status=status,
            team_slug=team_slug,
            visibility=visibility,
            archive_protocol_id=archive_protocol_id,
            archive_sha256=archive_sha256,
            builtin=builtin,
            code_url=code_url,
            container_image=container_image,
            description=description,
            paper_url=paper_url,
            rejection_reason=rejection_reason,
            service_secret=service_secret,
            service_url=service_url,
        )

        submission_out.additional_properties = d
        return submission_out

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
