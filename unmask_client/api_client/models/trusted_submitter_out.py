from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="TrustedSubmitterOut")


@_attrs_define
class TrustedSubmitterOut:
    """A trusted submitter.

    Attributes:
        allow_pull_requests (bool):
        created_at (datetime.datetime):
        environment (None | str):
        id (int):
        issuer (str):
        name (str):
        ref (None | str):
        repository (str):
        repository_id (str):
        repository_owner_id (None | str):
        team_id (int):
        workflow (None | str):
    """

    allow_pull_requests: bool
    created_at: datetime.datetime
    environment: str | None
    id: int
    issuer: str
    name: str
    ref: str | None
    repository: str
    repository_id: str
    repository_owner_id: str | None
    team_id: int
    workflow: str | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        allow_pull_requests = self.allow_pull_requests

        created_at = self.created_at.isoformat()

        environment: str | None
        environment = self.environment

        id = self.id

        issuer = self.issuer

        name = self.name

        ref: str | None
        ref = self.ref

        repository = self.repository

        repository_id = self.repository_id

        repository_owner_id: str | None
        repository_owner_id = self.repository_owner_id

        team_id = self.team_id

        workflow: str | None
        workflow = self.workflow

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "allow_pull_requests": allow_pull_requests,
                "created_at": created_at,
                "environment": environment,
                "id": id,
                "issuer": issuer,
                "name": name,
                "ref": ref,
                "repository": repository,
                "repository_id": repository_id,
                "repository_owner_id": repository_owner_id,
                "team_id": team_id,
                "workflow": workflow,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        allow_pull_requests = d.pop("allow_pull_requests")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        def _parse_environment(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        environment = _parse_environment(d.pop("environment"))

        id = d.pop("id")

        issuer = d.pop("issuer")

        name = d.pop("name")

        def _parse_ref(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        ref = _parse_ref(d.pop("ref"))

        repository = d.pop("repository")

        repository_id = d.pop("repository_id")

        def _parse_repository_owner_id(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        repository_owner_id = _parse_repository_owner_id(d.pop("repository_owner_id"))

        team_id = d.pop("team_id")

        def _parse_workflow(data: object) -> str | None:
            if data is None:
                return data
            return cast(None | str, data)

        workflow = _parse_workflow(d.pop("workflow"))

        trusted_submitter_out = cls(
            allow_pull_requests=allow_pull_requests,
            created_at=created_at,
            environment=environment,
            id=id,
            issuer=issuer,
            name=name,
            ref=ref,
            repository=repository,
            repository_id=repository_id,
            repository_owner_id=repository_owner_id,
            team_id=team_id,
            workflow=workflow,
        )

        trusted_submitter_out.additional_properties = d
        return trusted_submitter_out

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
