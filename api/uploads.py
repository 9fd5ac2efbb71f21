"""Archive uploads: streamed through the API (small) or by presigned URLs (large).

Streamed: the request body goes to the blob store chunk by chunk (never whole in memory); past
``Settings.max_archive_bytes`` the upload stops with 413 and the store keeps nothing (its writes
are atomic: a temporary file or spool that is dropped on error).

Presigned: the API hands out one presigned PUT per part (S3 multipart upload; the local store gets
a single signed PUT) and a signed *upload ticket*; the client uploads, then calls ``complete``
with the ticket (and the parts' ETags), and only then does a submission row exist. The ticket is
an HMAC-signed JSON (key: ``Settings.token_hmac_key``), so no table holds unfinished uploads.

Archive blobs live under ``archives/protocol-<protocol id>/team-<team id>/<uuid>``. The protocol an
archive was made for is stored in ``submissions.protocol_id`` (the source of truth); the key keeps
naming it so keys stored before that column existed (migration 0004 backfilled it from them) and
keys written now have one form.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import math
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any

import anyio.from_thread

from api.problems import ApiProblem
from services.storage.blobstore import BlobStore, S3BlobStore, new_upload_key

S3_MIN_PART_BYTES = 5 * 1024 * 1024
S3_MAX_PARTS = 10_000


def archive_key(protocol_id: int, team_id: int) -> str:
    """A fresh blob key for an archive of ``team_id`` made for ``protocol_id``."""
    return new_upload_key(f"archives/protocol-{protocol_id}/team-{team_id}")


class ArchiveTooLargeError(Exception):
    """The streamed body passed the size limit (bytes)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"archive is larger than the limit of {limit} bytes")
        self.limit = limit


class BoundedBodyReader(io.RawIOBase):
    """A blocking, file-like view of an ASGI request body, for use in a worker thread.

    Each ``read`` pulls chunks from the event loop (``anyio.from_thread.run``) and counts bytes;
    passing ``limit`` raises :class:`ArchiveTooLargeError`, which aborts the blob store's write.
    At most one read's worth of data (1 MiB for the stores) is buffered.
    """

    def __init__(self, chunks: AsyncIterator[bytes], limit: int) -> None:
        super().__init__()
        self._chunks = chunks
        self._limit = limit
        self._buffer = bytearray()
        self._done = False
        self.size_bytes = 0

    def readable(self) -> bool:
        return True

    async def _next_chunk(self) -> bytes | None:
        try:
            return await self._chunks.__anext__()
        except StopAsyncIteration:
            return None

    def read(self, size: int | None = -1) -> bytes:
        want = -1 if size is None else size
        while not self._done and (want < 0 or len(self._buffer) < want):
            chunk = anyio.from_thread.run(self._next_chunk)
            if chunk is None:
                self._done = True
                break
            self.size_bytes += len(chunk)
            if self.size_bytes > self._limit:
                raise ArchiveTooLargeError(self._limit)
            self._buffer += chunk
        if want < 0:
            out = bytes(self._buffer)
            self._buffer.clear()
        else:
            out = bytes(self._buffer[:want])
            del self._buffer[:want]
        return out


# --- presigned uploads -------------------------------------------------------------------------


@dataclass(frozen=True)
class UploadTicket:
    """What the API promised at the start of a presigned upload (signed, held by the client)."""

    team_id: int
    user_id: int
    key: str
    sha256: str
    size_bytes: int
    name: str
    visibility: str
    protocol_id: int
    media_type: str
    s3_upload_id: str | None
    expires_at: float


def _ticket_signature(payload: bytes, secret: str) -> str:
    return hmac.new(
        secret.encode(), b"unmask-upload-ticket\n" + payload, hashlib.sha256
    ).hexdigest()


def encode_ticket(ticket: UploadTicket, secret: str) -> str:
    """``base64url(json).signature`` of ``ticket``."""
    payload = json.dumps(asdict(ticket), sort_keys=True, separators=(",", ":")).encode()
    encoded = base64.urlsafe_b64encode(payload).decode().rstrip("=")
    return f"{encoded}.{_ticket_signature(payload, secret)}"


def decode_ticket(value: str, secret: str, *, now: float | None = None) -> UploadTicket:
    """The ticket in ``value``; 404 when malformed or forged, 410 when expired."""
    try:
        encoded, signature = value.rsplit(".", 1)
        payload = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        valid = hmac.compare_digest(_ticket_signature(payload, secret), signature)
        ticket = UploadTicket(**json.loads(payload)) if valid else None
    except (ValueError, TypeError):
        ticket = None
    if ticket is None:
        raise ApiProblem(404, "upload_id is not a ticket this server issued", slug="not-found")
    if (time.time() if now is None else now) > ticket.expires_at:
        raise ApiProblem(
            410,
            f"the upload ticket expired at {ticket.expires_at:.0f} (Unix s); start a new upload",
            slug="upload-expired",
            title="Upload expired",
        )
    return ticket


@dataclass(frozen=True)
class PresignedPart:
    """One presigned part request."""

    part_number: int
    url: str
    method: str
    headers: dict[str, str]
    size_bytes: int


def part_size_for(size_bytes: int, preferred: int) -> int:
    """Part size (bytes): ``preferred``, at least 5 MiB, and large enough for 10 000 parts."""
    return max(preferred, S3_MIN_PART_BYTES, math.ceil(size_bytes / S3_MAX_PARTS))


def start_presigned_upload(
    store: BlobStore,
    key: str,
    *,
    size_bytes: int,
    sha256: str,
    media_type: str,
    part_bytes: int,
    expires_s: int,
) -> tuple[str | None, int, list[PresignedPart]]:
    """Presign the upload of ``key``: (S3 upload id or None, part size, part requests)."""
    if isinstance(store, S3BlobStore):
        created = store.client.create_multipart_upload(
            Bucket=store.bucket,
            Key=key,
            ContentType=media_type,
            Metadata={"sha256": sha256},
        )
        upload_id: str = created["UploadId"]
        part_size = part_size_for(size_bytes, part_bytes)
        n_parts = max(1, math.ceil(size_bytes / part_size))
        parts = []
        for number in range(1, n_parts + 1):
            url = store.presign_client.generate_presigned_url(
                "upload_part",
                Params={
                    "Bucket": store.bucket,
                    "Key": key,
                    "UploadId": upload_id,
                    "PartNumber": number,
                },
                ExpiresIn=expires_s,
            )
            this_size = min(part_size, size_bytes - (number - 1) * part_size)
            parts.append(PresignedPart(number, url, "PUT", {}, this_size))
        return upload_id, part_size, parts
    request = store.presigned_put(key, expires_s, media_type=media_type, expected_sha256=sha256)
    if not request.url.startswith(("http://", "https://")):
        raise ApiProblem(
            409,
            "presigned uploads need an HTTP blob endpoint: set UNMASK_BLOB_PUBLIC_URL (e.g. "
            "http://HOST:PORT/v1/blobs) or stream the archive to POST /v1/submissions/archive",
            slug="presigned-unavailable",
        )
    return (
        None,
        size_bytes,
        [PresignedPart(1, request.url, request.method, dict(request.headers), size_bytes)],
    )


def finish_presigned_upload(
    store: BlobStore, ticket: UploadTicket, parts: list[tuple[int, str]]
) -> None:
    """Complete the S3 multipart upload of ``ticket`` (no-op for single presigned PUTs)."""
    if ticket.s3_upload_id is None:
        return
    if not isinstance(store, S3BlobStore):
        raise ApiProblem(409, "this upload was started on another blob store back-end")
    if not parts:
        raise ApiProblem(422, "body.parts: a multipart upload needs every part's number and ETag")
    from botocore.exceptions import ClientError

    try:
        store.client.complete_multipart_upload(
            Bucket=store.bucket,
            Key=ticket.key,
            UploadId=ticket.s3_upload_id,
            MultipartUpload={
                "Parts": [{"PartNumber": n, "ETag": etag} for n, etag in sorted(parts)]
            },
        )
    except ClientError as exc:
        error: Any = exc.response.get("Error", {})
        raise ApiProblem(
            422,
            f"body.parts: the blob store refused to complete the upload: "
            f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": "),
        ) from None


def abort_presigned_upload(store: BlobStore, ticket: UploadTicket) -> None:
    """Drop the parts of an unfinished S3 multipart upload (best effort)."""
    if ticket.s3_upload_id is None or not isinstance(store, S3BlobStore):
        return
    from botocore.exceptions import ClientError

    try:
        store.client.abort_multipart_upload(
            Bucket=store.bucket, Key=ticket.key, UploadId=ticket.s3_upload_id
        )
    except ClientError:
        pass
