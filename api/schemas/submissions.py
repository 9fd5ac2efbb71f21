"""Submissions: one of the anonymizer kinds (``services.anonymizers.kinds``) and public info.

The create body is a union of one model per kind submitted as JSON, built from the registry;
archives are uploaded (``api/schemas/archives.py``).
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union, cast

from pydantic import AfterValidator, BaseModel, Field, ValidationInfo, create_model

from api.schemas.common import (
    NameText,
    StrictModel,
    SubmissionApiStatus,
    TextPolicyPattern,
    Visibility,
)
from services.anonymizers.kinds.builtin import BuiltinSpec
from services.anonymizers.kinds.container import ContainerSpec
from services.anonymizers.kinds.registry import (
    KIND_NAMES,
    AnonymizerKind,
    kind_of,
    submitted_kinds,
)
from services.errors import InvalidInputError
from services.platform.submissions import info as submission_info
from services.storage.models import Submission, SubmissionStatus


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
        description="Optional: what the anonymizer does (one line of plain text, shown on the "
        "leaderboard).",
    ),
    TextPolicyPattern("prose"),
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


SubmissionKind = StrEnum(  # type: ignore[misc]
    "SubmissionKind", {name.upper(): name for name in KIND_NAMES}
)
SubmissionKind.__doc__ = "How an anonymizer is supplied."
"""The anonymizer kinds (``services.anonymizers.kinds.registry.KIND_NAMES``), as an enum."""

__all__ = [
    "BuiltinSpec",
    "ContainerSpec",
    "DescriptionText",
    "LinkUrl",
    "SubmissionCreate",
    "SubmissionCreateBase",
    "SubmissionInfo",
    "SubmissionKind",
    "SubmissionKindName",
    "SubmissionOut",
    "SubmissionPageOut",
]

SubmissionKindName = Literal[KIND_NAMES]  # type: ignore[valid-type]


class SubmissionCreateBase(SubmissionInfo):
    """What every kind's create body holds; each kind narrows ``kind`` and adds its field."""

    kind: str
    name: NameText
    visibility: Visibility = "private"


def _create_model(kind: AnonymizerKind) -> type[SubmissionCreateBase]:
    """``<Title>SubmissionCreate``: the shared fields, ``kind`` and the kind's own field."""
    assert kind.submission_field is not None and kind.submission_model is not None
    fields: dict[str, Any] = {
        "kind": (Literal[kind.name], ...),
        kind.submission_field: (kind.submission_model, ...),
    }
    model = create_model(
        f"{kind.title}SubmissionCreate",
        __base__=SubmissionCreateBase,
        __doc__=kind.submission_doc or f"Submit {kind.description}.",
        __module__=__name__,
        **fields,
    )
    return cast("type[SubmissionCreateBase]", model)


SUBMISSION_CREATE_MODELS: dict[str, type[SubmissionCreateBase]] = {
    kind.name: _create_model(kind) for kind in submitted_kinds()
}
"""One body model per kind submitted as JSON (built from the kinds registry)."""

if TYPE_CHECKING:
    SubmissionCreate = SubmissionCreateBase
else:
    SubmissionCreate = Annotated[
        Union[tuple(SUBMISSION_CREATE_MODELS.values())],  # noqa: UP007 (from the registry)
        Field(discriminator="kind"),
    ]


class SubmissionOut(BaseModel):
    """A submission. Content fields never change once accepted."""

    id: int
    team_slug: str
    name: str
    kind: SubmissionKindName
    visibility: Visibility
    status: SubmissionApiStatus
    content_hash: str
    builtin: BuiltinSpec | None = None
    container_image: str | None = None
    service_url: str | None = None
    service_secret: str | None = Field(
        None,
        description="Service submissions, in the creation answer only: the secret the endpoint "
        "checks `Unmask-Signature` with (docs/service-contract.md); never shown again.",
    )
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
        kind = kind_of(submission.kind)
        shown = kind.public_fields(kind.columns_of(submission))
        return cls(
            id=submission.id,
            team_slug=submission.team.slug,
            name=submission.name,
            kind=submission.kind,
            visibility=submission.visibility,
            status=status,
            content_hash=submission.content_hash,
            rejection_reason=submission.rejection_reason,
            description=submission.description,
            paper_url=submission.paper_url,
            code_url=submission.code_url,
            created_at=submission.created_at,
            accepted_at=submission.accepted_at,
            **shown,
        )


class SubmissionPageOut(BaseModel):
    """A page of submissions, newest first."""

    items: list[SubmissionOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null = end.")
