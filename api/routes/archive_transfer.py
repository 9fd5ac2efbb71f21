"""Archive uploads: streamed through the API (small) or by presigned URLs (large).

Streamed: the request body is read on the event loop into a local temporary file (never whole in
memory, and no worker thread waits on the client), then handed to the blob store. Past
``Settings.max_archive_bytes`` the upload stops with 413; a client that sends nothing for
``upload_read_timeout_s`` or takes longer than ``upload_max_duration_s`` gets 408; a team (a
client address for signed blob PUTs) has at most ``max_concurrent_uploads_per_team`` uploads in
progress per API process (429 beyond). The store keeps nothing of a failed upload.

Presigned: the API hands out one presigned PUT per part (S3 multipart upload; the local store gets
a single signed PUT) and a signed *upload ticket*; the client uploads, then calls ``complete``
with the ticket (and the parts' ETags), and only then does a submission row exist. The ticket is
an HMAC-signed JSON (key: ``Settings.token_hmac_key``). Each upload handed out is also recorded
(``services.platform.archives.upload_records``): its declared size counts against the team's storage
quota until it completes, and the reaper aborts it once its ticket expired.

Archive blobs live under ``archives/protocol-<protocol id>/team-<team id>/<uuid>``. The protocol an
archive was made for is stored in ``submissions.protocol_id`` (the source of truth); the key keeps
naming it so keys stored before that column existed (migration 0004 backfilled it from them) and
keys written now have one form.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import asdict, dataclass
from typing import IO, Any

import anyio
import anyio.to_thread

from api.problems import ApiProblem
from services.platform.archives import abort_multipart_upload
from services.storage.blob_interface import BlobStore, MultipartUploadError, new_upload_key


def archive_key(protocol_id: int, team_id: int) -> str:
    """A fresh blob key for an archive of ``team_id`` made for ``protocol_id``."""
    return new_upload_key(f"archives/protocol-{protocol_id}/team-{team_id}")


class ArchiveTooLargeError(Exception):
    """The streamed body passed the size limit (bytes)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"archive is larger than the limit of {limit} bytes")
        self.limit = limit


class UploadTimeoutError(Exception):
    """The client sent no body bytes for ``read_timeout_s`` or took longer than ``total_s``."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


@dataclass
class SpooledBody:
    """A request body read into a local temporary file: ``file`` (rewound) and its size."""

    file: IO[bytes]
    size_bytes: int


# Spooled bytes are written to the temporary file in slices of this size, each in a short worker
# thread call (a disk write never waits on the client).
SPOOL_WRITE_BYTES = 1 << 20


async def spool_body(
    chunks: AsyncIterator[bytes],
    *,
    limit: int,
    read_timeout_s: float,
    total_s: float,
) -> SpooledBody:
    """Read a request body on the event loop into a temporary file, bounded in size and time.

    Waiting on the client holds no worker thread (a thread-per-upload design let 41 stalled
    uploads exhaust AnyIO's 40 threads and stall every route): each chunk is awaited with
    ``read_timeout_s`` and the whole body with ``total_s`` (seconds), either raising
    :class:`UploadTimeoutError`; more than ``limit`` bytes raise :class:`ArchiveTooLargeError`.
    The caller closes ``file`` (a temporary file: closing deletes it).
    """
    file = tempfile.TemporaryFile(prefix="unmask-upload-")
    size = 0
    pending = bytearray()
    try:
        with anyio.fail_after(total_s):
            while True:
                try:
                    with anyio.fail_after(read_timeout_s):
                        chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise UploadTimeoutError(
                        f"no body bytes for {read_timeout_s:g} s after {size} bytes"
                    ) from None
                size += len(chunk)
                if size > limit:
                    raise ArchiveTooLargeError(limit)
                pending += chunk
                if len(pending) >= SPOOL_WRITE_BYTES:
                    await anyio.to_thread.run_sync(file.write, bytes(pending))
                    pending.clear()
            if pending:
                await anyio.to_thread.run_sync(file.write, bytes(pending))
            file.seek(0)
    except TimeoutError:
        file.close()
        raise UploadTimeoutError(f"the upload took longer than {total_s:g} s in all") from None
    except BaseException:
        file.close()
        raise
    return SpooledBody(file, size)


class UploadSlots:
    """Streamed uploads in progress per key (a team, or a client address), capped per process.

    ``acquire`` raises a 429 problem when ``key`` already has ``limit`` uploads in progress.
    """

    def __init__(self) -> None:
        self._active: dict[str, int] = {}

    def active(self, key: str) -> int:
        return self._active.get(key, 0)

    @contextlib.contextmanager
    def acquire(self, key: str, limit: int, who: str) -> Iterator[None]:
        # The event loop's single thread runs this check and increment: no lock needed.
        if self._active.get(key, 0) >= limit:
            raise ApiProblem(
                429,
                f"{who} already has {limit} uploads in progress (limit "
                "max_concurrent_uploads_per_team); wait for one to finish",
                slug="too-many-uploads",
                title="Too many uploads",
                headers={"Retry-After": "5"},
                extra={"limit": limit},
            )
        self._active[key] = self._active.get(key, 0) + 1
        try:
            yield
        finally:
            self._active[key] -= 1
            if not self._active[key]:
                del self._active[key]


def upload_slots(app: Any) -> UploadSlots:
    """The app's upload counter (one per API process)."""
    slots: UploadSlots | None = getattr(app.state, "upload_slots", None)
    if slots is None:
        slots = UploadSlots()
        app.state.upload_slots = slots
    return slots


def upload_timeout_problem(exc: UploadTimeoutError) -> ApiProblem:
    """The 408 answer to a stalled or too slow upload."""
    return ApiProblem(
        408,
        f"upload stopped: {exc}; nothing was stored",
        slug="upload-timeout",
        title="Upload timed out",
    )


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
    """Presign the upload of ``key``: (multipart upload id or None, part size, part requests).

    A store with multipart uploads (S3) gets one presigned PUT per part; others one signed PUT.
    """
    multipart = store.start_multipart_upload(
        key,
        size_bytes=size_bytes,
        sha256=sha256,
        media_type=media_type,
        part_bytes=part_bytes,
        expires_s=expires_s,
    )
    if multipart is not None:
        parts = [
            PresignedPart(number, request.url, request.method, dict(request.headers), size)
            for number, request, size in multipart.parts
        ]
        return multipart.upload_id, multipart.part_bytes, parts
    request = store.presigned_put(
        key, expires_s, media_type=media_type, expected_sha256=sha256, expected_size=size_bytes
    )
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
    """Complete the multipart upload of ``ticket`` (no-op for single presigned PUTs)."""
    if ticket.s3_upload_id is None:
        return
    if not parts:
        raise ApiProblem(422, "body.parts: a multipart upload needs every part's number and ETag")
    try:
        store.complete_multipart_upload(ticket.key, ticket.s3_upload_id, parts)
    except MultipartUploadError as exc:
        raise ApiProblem(
            422, f"body.parts: the blob store refused to complete the upload: {exc}"
        ) from None


def abort_presigned_upload(store: BlobStore, ticket: UploadTicket) -> None:
    """Drop the parts of an unfinished S3 multipart upload (best effort)."""
    abort_multipart_upload(store, ticket.key, ticket.s3_upload_id)
