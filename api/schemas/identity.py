"""The caller (``/v1/me``), teams and API tokens (``/v1/admin``)."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from api.schemas.common import LabelText, Scope, ShortText, StrictModel, Text
from services.platform.quotas import QuotaStatus, TeamQuotas
from services.storage.models import ApiToken, TrustedSubmitter


class QuotaUsage(BaseModel):
    """One quota: the limit and what the team uses now."""

    limit: int
    used: int
    window: str = Field(description="`rolling 24 h` or `now` (concurrent).")

    @classmethod
    def of(cls, status: QuotaStatus) -> QuotaUsage:
        return cls(limit=status.limit, used=status.used, window=status.window)


class Quotas(BaseModel):
    """The team's quotas (failed/cancelled jobs and rejected submissions are not charged)."""

    submissions_per_day: QuotaUsage
    jobs_per_day: QuotaUsage
    concurrent_jobs: QuotaUsage
    archive_storage_bytes: QuotaUsage = Field(
        description="Bytes of stored archives, open presigned uploads and archives rejected in "
        "the last 24 h."
    )

    @classmethod
    def of(cls, report: TeamQuotas) -> Quotas:
        """The team's limits and usage (``services.platform.quotas.team_quotas``) as the API
        shows them (``GET /v1/me``)."""
        return cls(
            submissions_per_day=QuotaUsage.of(report.submissions_per_day),
            jobs_per_day=QuotaUsage.of(report.jobs_per_day),
            concurrent_jobs=QuotaUsage.of(report.concurrent_jobs),
            archive_storage_bytes=QuotaUsage.of(report.archive_storage_bytes),
        )


class Me(BaseModel):
    """The caller: token, team and scopes."""

    token_prefix: str
    user_id: int
    team_id: int
    team_slug: str
    scopes: list[str]
    quotas: Quotas


# --- admin -------------------------------------------------------------------------------------


class TeamCreate(StrictModel):
    """A new team."""

    slug: str = Field(
        max_length=64,
        pattern=r"^[a-z0-9][a-z0-9-]{0,63}$",
        description="Lowercase letters, digits and '-', at most 64 characters; unique.",
        examples=["speech-lab"],
    )
    display_name: ShortText | None = None


class TeamOut(BaseModel):
    """A team."""

    id: int
    slug: str
    display_name: str
    created_at: dt.datetime


class TokenCreate(StrictModel):
    """A new API token for a team."""

    team: LabelText = Field(description="The team's slug.", examples=["speech-lab"])
    scopes: list[Scope] = Field(min_length=1, examples=[["submit", "read"]])
    name: ShortText = Field("", description="A label (e.g. `ci`).")
    expires_days: float | None = Field(
        None, gt=0, le=3650, description="Lifetime in days; null = no expiry."
    )
    email: Text(254, min_length=3) | None = Field(  # type: ignore[valid-type]
        None, description="Owner; default: the team's robot user (created on first use)."
    )


class TokenOut(BaseModel):
    """An API token (never its plaintext, except once at creation)."""

    id: int
    prefix: str
    name: str
    team_slug: str
    user_email: str
    scopes: list[str]
    expires_at: dt.datetime | None
    last_used_at: dt.datetime | None
    revoked_at: dt.datetime | None
    created_at: dt.datetime

    @classmethod
    def of(cls, token: ApiToken) -> TokenOut:
        return cls(
            id=token.id,
            prefix=token.prefix,
            name=token.name,
            team_slug=token.user.team.slug,
            user_email=token.user.email,
            scopes=list(token.scopes),
            expires_at=token.expires_at,
            last_used_at=token.last_used_at,
            revoked_at=token.revoked_at,
            created_at=token.created_at,
        )


class TokenIssued(TokenOut):
    """A freshly issued token; ``token`` is the plaintext, shown this once and never again."""

    token: str


# --- OpenID Connect trusted submitters ----------------------------------------------------------


class TrustedSubmitterCreate(StrictModel):
    """A CI workflow allowed to submit for a team with its OpenID Connect ID token."""

    team: LabelText = Field(description="The team's slug.", examples=["speech-lab"])
    issuer: Text(512, min_length=8) = Field(  # type: ignore[valid-type]
        description="The ID tokens' issuer, one of `UNMASK_OIDC_ISSUERS`.",
        examples=["https://token.actions.githubusercontent.com"],
    )
    repository: Text(256, min_length=3) = Field(  # type: ignore[valid-type]
        description="`owner/name` (GitHub `repository`, GitLab `project_path`), for the record.",
        examples=["my-lab/anonymizer"],
    )
    repository_id: str = Field(
        pattern=r"^[0-9]{1,20}$",
        description="The repository's numeric id (GitHub `repository_id`, GitLab `project_id`): "
        "what is matched, so a renamed or re-created repository of the same name does not.",
        examples=["123456789"],
    )
    repository_owner_id: str | None = Field(
        None,
        pattern=r"^[0-9]{1,20}$",
        description="Optional: the owner's numeric id (GitHub `repository_owner_id`, GitLab "
        "`namespace_id`).",
    )
    ref: Text(256, min_length=1) | None = Field(  # type: ignore[valid-type]
        None,
        description="Optional: only runs of this ref (`refs/heads/main`, `refs/tags/v1`).",
    )
    environment: Text(256, min_length=1) | None = Field(  # type: ignore[valid-type]
        None, description="Optional: only jobs of this deployment environment."
    )
    workflow: Text(512, min_length=1) | None = Field(  # type: ignore[valid-type]
        None,
        description="Optional: only this workflow file (`.github/workflows/privacy.yml`; GitLab: "
        "`.gitlab-ci.yml`).",
    )
    allow_pull_requests: bool = Field(
        False,
        description="Let pull-request (GitHub `pull_request`, `pull_request_target`) and "
        "merge-request runs submit. GitHub's ID token does not say whether a pull request comes "
        "from a fork, so leave this off unless every pull-request run may spend the quota.",
    )
    name: ShortText = Field("", description="A label.")


class TrustedSubmitterOut(BaseModel):
    """A trusted submitter."""

    id: int
    team_id: int
    name: str
    issuer: str
    repository: str
    repository_id: str
    repository_owner_id: str | None
    ref: str | None
    environment: str | None
    workflow: str | None
    allow_pull_requests: bool
    created_at: dt.datetime

    @classmethod
    def of(cls, row: TrustedSubmitter) -> TrustedSubmitterOut:
        return cls.model_validate(row, from_attributes=True)


class OidcExchangeRequest(StrictModel):
    """An OpenID Connect ID token of a CI run (GitHub Actions, GitLab CI)."""

    token: str = Field(
        min_length=1,
        max_length=65536,
        description="The compact JWT the CI platform minted (its `aud` must be the server's "
        "audience, `UNMASK_OIDC_AUDIENCE` or `UNMASK_PUBLIC_URL`).",
    )


class OidcTokenIssued(BaseModel):
    """A short-lived API token for the trusted submitter's team (plaintext shown this once)."""

    token: str
    prefix: str
    team_slug: str
    scopes: list[str]
    expires_at: dt.datetime
    exchange_id: int = Field(description="The audit row of this exchange.")
    repository: str
    ref: str | None
    run_id: str | None
