"""The blob store interface (``BlobStore``), its records (``BlobInfo``, ``PresignedRequest``,
``MultipartUpload``), the key rule (``validate_key``) and the hashing helpers both stores share.
The stores are ``blob_local.py`` and ``blob_s3.py``; ``blobstore.py`` picks one from the settings.

Blob storage sits behind one small interface: a local folder (embedded) or S3 (platform). Every
blob is written with its sha256 and size, and both are checked again on completion: a write that
does not match ``expected_sha256`` / ``expected_size`` leaves nothing behind, and a read whose
bytes differ from the recorded sha256 raises :class:`BlobIntegrityError`. Keys are relative
POSIX-style paths (``jobs/12/scores.npz``); see :func:`validate_key`.

Presigned URLs let clients move large files without passing through the API:

- ``S3BlobStore``: real S3 presigned GET/PUT URLs, valid ``Settings.s3_presign_expiry_s`` seconds.
  A PUT presigned with ``expected_sha256`` signs the ``x-amz-checksum-sha256`` header, so S3
  rejects other content; call :meth:`BlobStore.verify` after the upload anyway (it re-reads the
  object, checks, and records the sha256 as metadata) because not every S3 clone enforces it.
- ``LocalBlobStore``: with a ``base_url`` it signs URLs of the form
  ``{base_url}/{key}?method=GET&expires=UNIX&signature=HMAC`` that an HTTP front end checks with
  :meth:`LocalBlobStore.check_presigned` (``services.storage.local_http`` is such a front end);
  without a ``base_url`` a presigned URL is the blob's ``file://`` URI (same-machine use).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from services.storage.errors import (
    BlobIntegrityError,
    BlobStoreError,
)

CHUNK_BYTES = 1024 * 1024
MAX_KEY_LENGTH = 1024
DEFAULT_MEDIA_TYPE = "application/octet-stream"
SHA256_METADATA_KEY = "sha256"
# S3 multipart limits: parts of at least 5 MiB (but the last), at most 10,000 parts.
S3_MIN_PART_BYTES = 5 * 1024 * 1024
S3_MAX_PARTS = 10_000
# Streams up to this size are hashed in memory before an S3 upload; larger ones spill to disk.
SPOOL_MEMORY_BYTES = 8 * 1024 * 1024

_SEGMENT = r"[A-Za-z0-9_=+@-][A-Za-z0-9._=+@-]*"
_SEGMENT_RE = re.compile(_SEGMENT)
BLOB_KEY_PATTERN = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"
"""A safe blob key as a regular expression (:func:`validate_key`; length checked apart)."""
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def validate_key(key: str) -> str:
    """``key`` if it is a safe blob key, else :class:`BlobStoreError`.

    Safe: 1..1024 characters, '/'-separated segments of letters, digits and ``._=+@-``, no empty
    segment, no segment starting with '.' (so no ``..`` escape and no clash with the local store's
    hidden ``.meta``/``.tmp`` folders).
    """
    if not 0 < len(key) <= MAX_KEY_LENGTH:
        raise BlobStoreError(f"blob key must be 1..{MAX_KEY_LENGTH} characters, got {len(key)}")
    for segment in key.split("/"):
        if not _SEGMENT_RE.fullmatch(segment):  # not match(): "$" would let a final "\n" in
            raise BlobStoreError(
                f"blob key {key!r}: segment {segment!r} must be letters, digits or ._=+@- and"
                " must not be empty or start with '.'"
            )
    return key


def _check_sha256(value: str | None, what: str) -> None:
    if value is not None and not _SHA256_RE.match(value):
        raise BlobStoreError(f"{what} must be 64 lowercase hex digits, got {value!r}")


class BlobStoreUnavailableError(ConnectionError):
    """The blob store did not serve a request: a server error (5xx), throttling or a timeout.

    A ``ConnectionError``, not bad input: the job code retries it (``storage_transient_errors``).
    """


# S3 error codes that mean "try again later" (besides any HTTP status >= 500).
_TRANSIENT_S3_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "RequestTimeout",
        "InternalError",
        "ServiceUnavailable",
        "OperationAborted",
        # A concurrent conditional write to the same key (S3 answers 409): retry decides.
        "ConditionalRequestConflict",
    }
)


def _client_error_in(exc: BaseException) -> Any | None:
    """The botocore ``ClientError`` that ``exc`` is or wraps (S3UploadFailedError), or None."""
    from botocore.exceptions import ClientError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ClientError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _s3_error_code(error: Any) -> tuple[str, int]:
    """(error code, HTTP status) of a botocore ``ClientError``."""
    response = getattr(error, "response", {}) or {}
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
    return code, status


def s3_connection_errors() -> tuple[type[BaseException], ...]:
    """What reaching S3 or reading its answer to the end raises when the service is gone,
    stalled or cut the connection (after botocore's and s3transfer's own retries)."""
    from botocore.exceptions import ConnectionError as BotocoreConnectionError
    from botocore.exceptions import HTTPClientError, IncompleteReadError
    from s3transfer.exceptions import RetriesExceededError
    from urllib3.exceptions import ProtocolError

    # EndpointConnectionError and ConnectTimeoutError derive from BotocoreConnectionError;
    # ConnectionClosedError, ReadTimeoutError and ResponseStreamingError from HTTPClientError.
    return (
        BotocoreConnectionError,
        HTTPClientError,
        IncompleteReadError,
        RetriesExceededError,
        ProtocolError,
    )


@contextlib.contextmanager
def _s3_errors(what: str) -> Iterator[None]:
    """Turn S3 server errors, throttling and lost connections into
    :class:`BlobStoreUnavailableError` (the caller answers 503 or retries the phase)."""
    try:
        yield
    except Exception as exc:
        error = _client_error_in(exc)
        if error is None:
            if isinstance(exc, s3_connection_errors()):
                raise BlobStoreUnavailableError(
                    f"blob store unavailable ({what}): {type(exc).__name__}"
                ) from exc
            raise
        code, status = _s3_error_code(error)
        if status >= 500 or code in _TRANSIENT_S3_CODES or (code.isdigit() and int(code) >= 500):
            raise BlobStoreUnavailableError(f"blob store unavailable ({what}): {code}") from exc
        raise


@dataclass(frozen=True)
class BlobInfo:
    """A stored blob: size in bytes and hex sha256 (None: not recorded yet, see ``verify``)."""

    key: str
    size_bytes: int
    sha256: str | None
    media_type: str = DEFAULT_MEDIA_TYPE


@dataclass(frozen=True)
class PresignedRequest:
    """An HTTP request a client may make without credentials until ``expires_at`` (Unix s).

    The client must send ``headers`` unchanged with the request (they are part of the signature).
    """

    url: str
    method: str
    expires_at: float
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MultipartUpload:
    """A multipart upload the client performs with presigned part requests (S3).

    ``upload_id``: the store's id of the upload; ``part_bytes``: every part's size but the last;
    ``parts``: one presigned PUT per part, in order (``part_number`` from 1).
    """

    upload_id: str
    part_bytes: int
    parts: list[tuple[int, PresignedRequest, int]]
    """(part number, request, size in bytes) per part."""


class MultipartUploadError(BlobStoreError):
    """The store refused to complete a multipart upload (bad or missing parts)."""


class _HashingWriter(io.RawIOBase):
    """A non-seekable sink that hashes what it writes to ``target`` (forces in-order writes)."""

    def __init__(self, target: IO[bytes]) -> None:
        self._target = target
        self.hasher = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def write(self, data: Any) -> int:
        view = memoryview(data)
        self.hasher.update(view)
        self._target.write(view)
        self.size += len(view)
        return len(view)


def _copy_hashing(source: IO[bytes], target: IO[bytes] | io.RawIOBase) -> tuple[str, int]:
    hasher = hashlib.sha256()
    size = 0
    while chunk := source.read(CHUNK_BYTES):
        hasher.update(chunk)
        target.write(chunk)
        size += len(chunk)
    return hasher.hexdigest(), size


def sha256_file(path: str | Path) -> tuple[str, int]:
    """(hex sha256, size in bytes) of a file, read in 1 MiB chunks."""
    hasher = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            hasher.update(chunk)
            size += len(chunk)
    return hasher.hexdigest(), size


def _check_expected(
    key: str,
    sha256: str,
    size: int,
    expected_sha256: str | None,
    expected_size: int | None,
) -> None:
    if expected_size is not None and size != expected_size:
        raise BlobIntegrityError(f"blob {key!r}: size {size} bytes, expected {expected_size}")
    if expected_sha256 is not None and sha256 != expected_sha256:
        raise BlobIntegrityError(f"blob {key!r}: sha256 {sha256}, expected {expected_sha256}")


class BlobStore(ABC):
    """Put, get, check and presign blobs by key. All sizes in bytes, hashes hex sha256."""

    @abstractmethod
    def put_stream(
        self,
        key: str,
        stream: IO[bytes],
        *,
        media_type: str = DEFAULT_MEDIA_TYPE,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> BlobInfo:
        """Store the rest of ``stream`` under ``key`` (replacing any blob there).

        The sha256 is computed while streaming; on a mismatch with ``expected_sha256`` or
        ``expected_size`` nothing is stored and :class:`BlobIntegrityError` is raised.
        """

    def put_file(
        self,
        key: str,
        path: str | Path,
        *,
        media_type: str = DEFAULT_MEDIA_TYPE,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> BlobInfo:
        """Store the file at ``path`` under ``key`` (see :meth:`put_stream`)."""
        with open(path, "rb") as handle:
            return self.put_stream(
                key,
                handle,
                media_type=media_type,
                expected_sha256=expected_sha256,
                expected_size=expected_size,
            )

    def put_bytes(
        self,
        key: str,
        data: bytes,
        *,
        media_type: str = DEFAULT_MEDIA_TYPE,
        expected_sha256: str | None = None,
    ) -> BlobInfo:
        """Store ``data`` under ``key`` (see :meth:`put_stream`)."""
        return self.put_stream(
            key, io.BytesIO(data), media_type=media_type, expected_sha256=expected_sha256
        )

    @abstractmethod
    def put_bytes_if_absent(
        self, key: str, data: bytes, *, media_type: str = DEFAULT_MEDIA_TYPE
    ) -> bool:
        """Store ``data`` under ``key`` only if no blob is there; True if this call wrote it.

        Atomic against concurrent writers of the same key (S3: a conditional ``PUT`` with
        ``If-None-Match: *``; local: a hard link, which fails when the name exists): exactly
        one of them gets True. This is how a stage folder is published (``workspace``).
        """

    @abstractmethod
    def open_read(self, key: str) -> contextlib.AbstractContextManager[IO[bytes]]:
        """A context manager yielding a readable binary stream of the blob (not verified)."""

    @abstractmethod
    def stat(self, key: str) -> BlobInfo:
        """Size, recorded sha256 and media type, or :class:`BlobNotFoundError`."""

    @abstractmethod
    def exists(self, key: str) -> bool:
        """Whether a blob is stored under ``key``."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the blob under ``key``; no error if there is none."""

    @abstractmethod
    def _record_sha256(self, key: str, info: BlobInfo, sha256: str) -> None:
        """Store ``sha256`` as the blob's recorded hash (after a verified read)."""

    @abstractmethod
    def presigned_get(self, key: str, expires_s: int | None = None) -> PresignedRequest:
        """A GET request for the blob valid ``expires_s`` seconds (default from settings)."""

    @abstractmethod
    def presigned_put(
        self,
        key: str,
        expires_s: int | None = None,
        *,
        media_type: str | None = None,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> PresignedRequest:
        """A PUT request that uploads the blob, valid ``expires_s`` seconds; with
        ``expected_size`` (bytes) the signature covers the body's length, so a longer body is
        refused before it is stored.

        Follow the upload with :meth:`verify` before trusting the blob.
        """

    # -- client-side multipart uploads (S3); other stores take one presigned PUT --------------
    def start_multipart_upload(
        self,
        key: str,
        *,
        size_bytes: int,
        sha256: str,
        media_type: str,
        part_bytes: int,
        expires_s: int,
    ) -> MultipartUpload | None:
        """Start an upload of ``size_bytes`` the client sends in parts of about ``part_bytes``
        (each part's request valid ``expires_s`` seconds); None when this store takes a single
        :meth:`presigned_put` instead."""
        return None

    def complete_multipart_upload(
        self, key: str, upload_id: str, parts: list[tuple[int, str]]
    ) -> None:
        """Assemble the uploaded ``parts`` ((number, ETag) each) of ``upload_id`` into ``key``;
        :class:`MultipartUploadError` when the store refuses (missing or wrong parts)."""
        raise MultipartUploadError(f"{type(self).__name__} has no multipart uploads")

    def abort_multipart_upload(self, key: str, upload_id: str) -> bool:
        """Drop the parts of an unfinished upload; False when the store refused (e.g. gone
        already). A no-op True for stores without multipart uploads."""
        return True

    def get_to_path(self, key: str, path: str | Path, *, verify: bool = True) -> BlobInfo:
        """Download the blob to ``path`` atomically; checks the recorded sha256 and size."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        info = self.stat(key)
        fd, tmp_name = tempfile.mkstemp(prefix=".download-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                sha256, size = self._download(key, handle)
            if verify:
                _check_expected(key, sha256, size, info.sha256, info.size_bytes)
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
        return BlobInfo(key, size, sha256, info.media_type)

    def _download(self, key: str, handle: IO[bytes]) -> tuple[str, int]:
        with self.open_read(key) as source:
            return _copy_hashing(source, handle)

    def get_bytes(self, key: str, *, verify: bool = True) -> bytes:
        """The blob's content; checks the recorded sha256 and size when ``verify``."""
        info = self.stat(key)
        with self.open_read(key) as source:
            data = source.read()
        if verify:
            _check_expected(key, hashlib.sha256(data).hexdigest(), len(data), info.sha256, None)
        return data

    def verify(
        self,
        key: str,
        *,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
        delete_on_mismatch: bool = False,
    ) -> BlobInfo:
        """Re-read the blob, check it against the expectations and the recorded sha256.

        Records the sha256 when none was recorded (blobs uploaded through a presigned PUT).
        On a mismatch raises :class:`BlobIntegrityError`, deleting the blob first when
        ``delete_on_mismatch`` (reject a bad upload).
        """
        _check_sha256(expected_sha256, "expected_sha256")
        info = self.stat(key)
        with self.open_read(key) as source:
            sha256, size = _copy_hashing(source, _NullSink())
        try:
            _check_expected(key, sha256, size, expected_sha256, expected_size)
            _check_expected(key, sha256, size, info.sha256, info.size_bytes)
        except BlobIntegrityError:
            if delete_on_mismatch:
                self.delete(key)
            raise
        if info.sha256 is None:
            self._record_sha256(key, info, sha256)
        return BlobInfo(key, size, sha256, info.media_type)


class _NullSink(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        return len(data)


def new_upload_key(prefix: str) -> str:
    """A fresh key under ``prefix`` for a client upload (``prefix/<uuid4 hex>``)."""
    return f"{validate_key(prefix)}/{uuid.uuid4().hex}"
