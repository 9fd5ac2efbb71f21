"""Submissions: built-in, container and archive anonymizers and their public info."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, ValidationInfo, field_validator

from api.schemas.common import (
    NO_NUL_PATTERN,
    PINNED_IMAGE_PATTERN,
    PINNED_IMAGE_RE,
    BuiltinName,
    JsonObject,
    NameText,
    StrictModel,
    SubmissionApiStatus,
    Visibility,
)
from services.errors import InvalidInputError
from services.platform.submissions import info as submission_info
from services.storage.models import (
    MAX_CONTAINER_IMAGE_LENGTH,
    Submission,
    SubmissionKind,
    SubmissionStatus,
)


class BuiltinSpec(StrictModel):
    """A built-in anonymizer (docs/anonymizers.md)."""

    name: BuiltinName = Field(examples=["pitch"], description="A built-in anonymizer.")
    params: JsonObject = Field(default_factory=dict, examples=[{"semitones": 4}])


class ContainerSpec(StrictModel):
    """An OCI image pinned by digest (run by the container runner)."""

    image: str = Field(
        # The stored name[:tag] (the column's length) plus "@sha256:" and 64 hex digits.
        max_length=MAX_CONTAINER_IMAGE_LENGTH + len("@sha256:") + 64,
        description="`name[:tag]@sha256:<64 hex>`; tags alone are refused (not reproducible).",
        examples=["ghcr.io/lab/anon@sha256:" + "0" * 64],
        json_schema_extra={"pattern": PINNED_IMAGE_PATTERN},
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        if not PINNED_IMAGE_RE.match(value):
            raise ValueError(
                f"image {value!r} must be pinned by digest: name[:tag]@sha256:<64 hex digits>"
            )
        return value


def _checked_description(value: str | None) -> str | None:
    try:
        return submission_info.check_description(value)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


def _checked_link(value: str | None, info: ValidationInfo) -> str | None:
    try:
        return submission_info.check_link(value, str(info.field_name))
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


DescriptionText = Annotated[
    str | None,
    Field(
        max_length=submission_info.MAX_DESCRIPTION_CHARS,
        description="Optional: what the anonymizer does (plain text, shown on the leaderboard).",
        json_schema_extra={"pattern": NO_NUL_PATTERN},
    ),
    AfterValidator(_checked_description),
]
LinkUrl = Annotated[
    str | None,
    Field(
        max_length=submission_info.MAX_URL_CHARS,
        description="Optional absolute `http://` or `https://` URL.",
        examples=["https://arxiv.org/abs/2401.00001"],
    ),
    AfterValidator(_checked_link),
]


class SubmissionInfo(StrictModel):
    """The optional public description and links of a submission."""

    description: DescriptionText = None
    paper_url: LinkUrl = None
    code_url: LinkUrl = None


class BuiltinSubmissionCreate(SubmissionInfo):
    """Submit a built-in anonymizer with parameters."""

    kind: Literal["builtin"]
    name: NameText
    visibility: Visibility = "private"
    builtin: BuiltinSpec


class ContainerSubmissionCreate(SubmissionInfo):
    """Submit an anonymizer as a pinned container image."""

    kind: Literal["container"]
    name: NameText
    visibility: Visibility = "private"
    container: ContainerSpec


SubmissionCreate = Annotated[
    BuiltinSubmissionCreate | ContainerSubmissionCreate, Field(discriminator="kind")
]


class SubmissionOut(BaseModel):
    """A submission. Content fields never change once accepted."""

    id: int
    team_slug: str
    name: str
    kind: Literal["builtin", "archive", "container"]
    visibility: Visibility
    status: SubmissionApiStatus
    content_hash: str
    builtin: BuiltinSpec | None = None
    container_image: str | None = None
    archive_sha256: str | None = None
    archive_protocol_id: int | None = Field(
        None, description="Archive submissions: the protocol the audio was anonymized for."
    )
    rejection_reason: str | None = Field(
        None, description="`rejected` only: why (e.g. the archive's validation problems)."
    )
    description: str | None = None
    paper_url: str | None = None
    code_url: str | None = None
    created_at: dt.datetime
    accepted_at: dt.datetime | None

    @classmethod
    def of(cls, submission: Submission) -> SubmissionOut:
        status: SubmissionApiStatus = (
            "validating"
            if submission.status == SubmissionStatus.PENDING.value
            else "accepted"
            if submission.status == SubmissionStatus.ACCEPTED.value
            else "rejected"
        )
        builtin = None
        if submission.kind == SubmissionKind.BUILTIN.value and submission.builtin_name:
            builtin = BuiltinSpec(
                name=submission.builtin_name, params=dict(submission.builtin_params or {})
            )
        image = None
        if submission.kind == SubmissionKind.CONTAINER.value:
            image = f"{submission.container_image}@{submission.container_digest}"
        return cls(
            id=submission.id,
            team_slug=submission.team.slug,
            name=submission.name,
            kind=submission.kind,
            visibility=submission.visibility,
            status=status,
            content_hash=submission.content_hash,
            builtin=builtin,
            container_image=image,
            archive_sha256=submission.archive_sha256,
            archive_protocol_id=submission.protocol_id,
            rejection_reason=submission.rejection_reason,
            description=submission.description,
            paper_url=submission.paper_url,
            code_url=submission.code_url,
            created_at=submission.created_at,
            accepted_at=submission.accepted_at,
        )


class SubmissionPageOut(BaseModel):
    """A page of submissions, newest first."""

    items: list[SubmissionOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null = end.")
