"""The caller (``/v1/me``), teams and API tokens (``/v1/admin``)."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from api.schemas.common import LabelText, Scope, ShortText, StrictModel, Text
from services.storage.models import ApiToken


class QuotaUsage(BaseModel):
    """One quota: the limit and what the team uses now."""

    limit: int
    used: int
    window: str = Field(description="`rolling 24 h` or `now` (concurrent).")


class Quotas(BaseModel):
    """The team's quotas (failed/cancelled jobs and rejected submissions are not charged)."""

    submissions_per_day: QuotaUsage
    jobs_per_day: QuotaUsage
    concurrent_jobs: QuotaUsage
    archive_storage_bytes: QuotaUsage = Field(
        description="Bytes of stored archives, open presigned uploads and archives rejected in "
        "the last 24 h."
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
