from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="TrustedSubmitterCreate")


@_attrs_define
class TrustedSubmitterCreate:
    """A CI workflow allowed to submit for a team with its OpenID Connect ID token.

    Attributes:
        issuer (str): The ID tokens' issuer, one of `UNMASK_OIDC_ISSUERS`.
        repository (str): `owner/name` (GitHub `repository`, GitLab `project_path`), for the record.
        repository_id (str): The repository's numeric id (GitHub `repository_id`, GitLab `project_id`): what is matched,
            so a renamed or re-created repository of the same name does not.
        team (str): The team's slug.
        allow_pull_requests (bool | Unset): Let pull-request (GitHub `pull_request`, `pull_request_target`) and merge-
            request runs submit. GitHub's ID token does not say whether a pull request comes from a fork, so leave this off
            unless every pull-request run may spend the quota. Default: False.
        environment (None | str | Unset): Optional: only jobs of this deployment environment.
        name (str | Unset): A label. Default: ''.
        ref (None | str | Unset): Optional: only runs of this ref (`refs/heads/main`, `refs/tags/v1`).
        repository_owner_id (None | str | Unset): Optional: the owner's numeric id (GitHub `repository_owner_id`, GitLab
            `namespace_id`).
        workflow (None | str | Unset): Optional: only this workflow file (`.github/workflows/privacy.yml`; GitLab:
            `.gitlab-ci.yml`).
    """

    issuer: str
    repository: str
    repository_id: str
    team: str
    allow_pull_requests: bool | Unset = False
    environment: str | Unset | None = UNSET
    name: str | Unset = ""
    ref: str | Unset | None = UNSET
    repository_owner_id: str | Unset | None = UNSET
    workflow: str | Unset | None = UNSET

    def to_dict(self) -> dict[str, Any]:
        issuer = self.issuer

        repository = self.repository

        repository_id = self.repository_id

        team = self.team

        allow_pull_requests = self.allow_pull_requests

        environment: str | Unset | None
        if isinstance(self.environment, Unset):
            environment = UNSET
        else:
            environment = self.environment

        name = self.name

        ref: str | Unset | None
        if isinstance(self.ref, Unset):
            ref = UNSET
        else:
            ref = self.ref

        repository_owner_id: str | Unset | None
        if isinstance(self.repository_owner_id, Unset):
            repository_owner_id = UNSET
        else:
            repository_owner_id = self.repository_owner_id

        workflow: str | Unset | None
        if isinstance(self.workflow, Unset):
            workflow = UNSET
        else:
            workflow = self.workflow

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "issuer": issuer,
                "repository": repository,
                "repository_id": repository_id,
                "team": team,
            }
        )
        if allow_pull_requests is not UNSET:
            field_dict["allow_pull_requests"] = allow_pull_requests
        if environment is not UNSET:
            field_dict["environment"] = environment
        if name is not UNSET:
            field_dict["name"] = name
        if ref is not UNSET:
            field_dict["ref"] = ref
        if repository_owner_id is not UNSET:
            field_dict["repository_owner_id"] = repository_owner_id
        if workflow is not UNSET:
            field_dict["workflow"] = workflow

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        issuer = d.pop("issuer")

        repository = d.pop("repository")

        repository_id = d.pop("repository_id")

        team = d.pop("team")

        allow_pull_requests = d.pop("allow_pull_requests", UNSET)

        def _parse_environment(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        environment = _parse_environment(d.pop("environment", UNSET))

        name = d.pop("name", UNSET)

        def _parse_ref(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        ref = _parse_ref(d.pop("ref", UNSET))

        def _parse_repository_owner_id(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        repository_owner_id = _parse_repository_owner_id(d.pop("repository_owner_id", UNSET))

        def _parse_workflow(data: object) -> str | Unset | None:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        workflow = _parse_workflow(d.pop("workflow", UNSET))

        trusted_submitter_create = cls(
            issuer=issuer,
            repository=repository,
            repository_id=repository_id,
            team=team,
            allow_pull_requests=allow_pull_requests,
            environment=environment,
            name=name,
            ref=ref,
            repository_owner_id=repository_owner_id,
            workflow=workflow,
        )

        return trusted_submitter_create
