"""Archive uploads: the multipart upload of a pre-anonymized archive."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from api.schemas.common import SHA256_HEX_PATTERN, DbId, NameText, StrictModel, Text, Visibility
from services.settings import DEPLOYMENT_RULE


class ArchiveUploadCreate(StrictModel):
    """Start a presigned (multipart) upload of a large archive."""

    name: NameText
    visibility: Visibility = "private"
    protocol_id: DbId = Field(description="The protocol whose audio the archive anonymizes.")
    size_bytes: int = Field(
        gt=0,
        # 2^53 (8 PiB): exact as a double, so every JSON reader agrees on the bound. The
        # document states this server's own limit (UNMASK_MAX_PRESIGNED_ARCHIVE_BYTES) as the
        # maximum (api.app.DEPLOYMENT_RULES); the route checks it.
        le=2**53,
        description="Exact archive size, bytes, at most this server's limit "
        "(UNMASK_MAX_PRESIGNED_ARCHIVE_BYTES, 50 GiB by default; above it: 422).",
        json_schema_extra={DEPLOYMENT_RULE: "max_presigned_archive_bytes"},
    )
    sha256: str = Field(
        pattern=SHA256_HEX_PATTERN,
        description="Hex SHA-256 of the whole archive (64 lowercase digits).",
    )
    media_type: Text(255) = "application/octet-stream"  # type: ignore[valid-type]


class UploadPart(BaseModel):
    """One presigned request of an upload: send ``headers`` unchanged."""

    part_number: int
    url: str
    method: str
    headers: dict[str, str]
    size_bytes: int = Field(description="Exactly this many bytes of the archive go in this part.")


class ArchiveUploadOut(BaseModel):
    """Where to upload the parts, and the ticket for the `complete` call."""

    upload_id: str = Field(description="Opaque signed ticket; pass it to `.../complete`.")
    key: str
    multipart: bool = Field(description="True: S3 multipart; send the parts' ETags to complete.")
    part_size_bytes: int
    parts: list[UploadPart]
    expires_at: dt.datetime
    complete_url: str


class CompletedPart(StrictModel):
    """An uploaded part: its number and the ``ETag`` response header of its PUT."""

    part_number: int = Field(ge=1, le=10_000)
    etag: Text(200, min_length=1)  # type: ignore[valid-type]


class ArchiveUploadComplete(StrictModel):
    """Finish a presigned upload (``parts``: required for multipart uploads)."""

    parts: list[CompletedPart] = Field(default_factory=list)
