"""Blob storage behind one small interface: a local folder (embedded) or S3 (platform).

Every blob is written with its sha256 and size, and both are checked again on completion: a write
that does not match ``expected_sha256`` / ``expected_size`` leaves nothing behind, and a read whose
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

import base64
import contextlib
import hashlib
import hmac
import io
import json
import math
import os
import re
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlencode

from services.settings import Settings, get_settings
from services.storage.errors import (
    BlobIntegrityError,
    BlobNotFoundError,
    BlobStoreError,
    PermissionDeniedError,
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


@contextlib.contextmanager
def _s3_errors(what: str) -> Iterator[None]:
    """Turn S3 server errors and throttling into :class:`BlobStoreUnavailableError`."""
    try:
        yield
    except Exception as exc:
        error = _client_error_in(exc)
        if error is None:
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


# --- local folder ------------------------------------------------------------------------------


class LocalBlobStore(BlobStore):
    """Blobs as files under ``root``; metadata (size, sha256, media type) in ``root/.meta``.

    Writes go to ``root/.tmp`` first, are fsynced and then renamed into place, so a reader never
    sees a partial blob. A key cannot be both a blob and a prefix of other keys (``a`` and
    ``a/b``) here, unlike S3.
    """

    def __init__(
        self,
        root: str | Path,
        *,
        signing_key: str,
        base_url: str | None = None,
        presign_expiry_s: int = 900,
    ) -> None:
        self.root = Path(root)
        self.base_url = base_url.rstrip("/") if base_url else None
        self.presign_expiry_s = presign_expiry_s
        self._signing_key = signing_key.encode()
        self._tmp = self.root / ".tmp"
        self._meta = self.root / ".meta"
        self._tmp.mkdir(parents=True, exist_ok=True)
        self._meta.mkdir(parents=True, exist_ok=True)

    def path_of(self, key: str) -> Path:
        """The file that holds blob ``key``."""
        return self.root / validate_key(key)

    def _meta_path(self, key: str) -> Path:
        return self._meta / f"{validate_key(key)}.json"

    def _write_atomic(self, target: Path, write: Any) -> None:
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as handle:
                result = write(handle)
                handle.flush()
                os.fsync(handle.fileno())
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
        return result

    def _write_meta(self, key: str, size: int, sha256: str, media_type: str) -> None:
        record = {"size_bytes": size, "sha256": sha256, "media_type": media_type}
        self._write_atomic(self._meta_path(key), lambda h: h.write(json.dumps(record).encode()))

    def put_stream(
        self,
        key: str,
        stream: IO[bytes],
        *,
        media_type: str = DEFAULT_MEDIA_TYPE,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> BlobInfo:
        """Blob and metadata are both written to temporary files first and renamed into place
        only when both are on disk: a full disk (or any failure) leaves neither behind."""
        target = self.path_of(key)
        meta_target = self._meta_path(key)
        _check_sha256(expected_sha256, "expected_sha256")
        temps: list[str] = []
        placed = False
        try:
            fd, tmp_name = tempfile.mkstemp(dir=self._tmp)
            temps.append(tmp_name)
            with os.fdopen(fd, "wb") as handle:
                sha256, size = _copy_hashing(stream, handle)
                handle.flush()
                os.fsync(handle.fileno())
            _check_expected(key, sha256, size, expected_sha256, expected_size)
            record = {"size_bytes": size, "sha256": sha256, "media_type": media_type}
            fd, meta_tmp = tempfile.mkstemp(dir=self._tmp)
            temps.append(meta_tmp)
            with os.fdopen(fd, "wb") as handle:
                handle.write(json.dumps(record).encode())
                handle.flush()
                os.fsync(handle.fileno())
            target.parent.mkdir(parents=True, exist_ok=True)
            meta_target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_name, target)
            placed = True
            os.replace(meta_tmp, meta_target)
        except BaseException:
            for name in temps:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name)
            if placed:  # the blob is in place but its metadata is not: take the blob back
                with contextlib.suppress(FileNotFoundError):
                    target.unlink()
            raise
        return BlobInfo(key, size, sha256, media_type)

    def put_bytes_if_absent(
        self, key: str, data: bytes, *, media_type: str = DEFAULT_MEDIA_TYPE
    ) -> bool:
        target = self.path_of(key)
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(tmp_name, target)  # atomic; fails if the name exists (unlike rename)
            except FileExistsError:
                return False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
        # Metadata after the blob: a reader in between sees no recorded sha256 (not a wrong one),
        # and a loser never touches the winner's metadata. No metadata (a full disk): no blob.
        try:
            self._write_meta(key, len(data), hashlib.sha256(data).hexdigest(), media_type)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                target.unlink()
            raise
        return True

    @contextlib.contextmanager
    def _open(self, key: str) -> Iterator[IO[bytes]]:
        try:
            handle = open(self.path_of(key), "rb")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise BlobNotFoundError(f"no blob {key!r} in {self.root}") from None
        with handle:
            yield handle

    def open_read(self, key: str) -> contextlib.AbstractContextManager[IO[bytes]]:
        return self._open(key)

    def stat(self, key: str) -> BlobInfo:
        path = self.path_of(key)
        if not path.is_file():
            raise BlobNotFoundError(f"no blob {key!r} in {self.root}")
        size = path.stat().st_size
        try:
            record = json.loads(self._meta_path(key).read_text())
        except (FileNotFoundError, ValueError):
            return BlobInfo(key, size, None)
        # The size comes from the file, the sha256 from the metadata: if a crash left them out of
        # step, the next verified read fails loudly instead of trusting either side.
        media_type = record.get("media_type", DEFAULT_MEDIA_TYPE)
        return BlobInfo(key, size, record.get("sha256"), media_type)

    def exists(self, key: str) -> bool:
        return self.path_of(key).is_file()

    def delete(self, key: str) -> None:
        for path in (self.path_of(key), self._meta_path(key)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _record_sha256(self, key: str, info: BlobInfo, sha256: str) -> None:
        self._write_meta(key, info.size_bytes, sha256, info.media_type)

    # Presigned URLs: HMAC over method, key, expiry and the optional expected sha256.

    def _signature(self, method: str, key: str, expires: int, sha256: str, size: str = "") -> str:
        message = f"{method}\n{key}\n{expires}\n{sha256}".encode()
        if size:  # the declared body length of a PUT (URLs without one keep their signature)
            message += f"\n{size}".encode()
        return hmac.new(
            self._signing_key, b"local-blob-url\n" + message, hashlib.sha256
        ).hexdigest()

    def _presign(
        self,
        method: str,
        key: str,
        expires_s: int | None,
        sha256: str | None,
        size: int | None = None,
    ) -> PresignedRequest:
        validate_key(key)
        lifetime = self.presign_expiry_s if expires_s is None else expires_s
        expires = int(time.time()) + lifetime
        if self.base_url is None:
            # Same-machine use (embedded mode): the "URL" is the file itself.
            return PresignedRequest(self.path_of(key).resolve().as_uri(), method, float(expires))
        query = {"method": method, "expires": str(expires)}
        if sha256:
            query["sha256"] = sha256
        if size is not None:
            query["size"] = str(size)
        query["signature"] = self._signature(
            method, key, expires, sha256 or "", "" if size is None else str(size)
        )
        url = f"{self.base_url}/{quote(key)}?{urlencode(query)}"
        return PresignedRequest(url, method, float(expires))

    def presigned_get(self, key: str, expires_s: int | None = None) -> PresignedRequest:
        return self._presign("GET", key, expires_s, None)

    def presigned_put(
        self,
        key: str,
        expires_s: int | None = None,
        *,
        media_type: str | None = None,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> PresignedRequest:
        _check_sha256(expected_sha256, "expected_sha256")
        request = self._presign("PUT", key, expires_s, expected_sha256, expected_size)
        if media_type:
            request.headers["Content-Type"] = media_type
        return request

    def check_presigned(
        self, method: str, key: str, query: Mapping[str, str], *, now: float | None = None
    ) -> str | None:
        """Check a presigned request's query; returns the sha256 the content must have, if any.

        Raises :class:`PermissionDeniedError` for a wrong method, bad signature or expired URL.
        """
        validate_key(key)
        try:
            expires = int(query["expires"])
            signature = query["signature"]
        except (KeyError, ValueError):
            raise PermissionDeniedError("presigned URL lacks expires/signature") from None
        if query.get("method") != method:
            raise PermissionDeniedError(f"presigned URL is for {query.get('method')}, not {method}")
        sha256 = query.get("sha256", "")
        expected = self._signature(method, key, expires, sha256, query.get("size", ""))
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise PermissionDeniedError("presigned URL signature does not match")
        if (time.time() if now is None else now) > expires:
            raise PermissionDeniedError("presigned URL expired")
        return sha256 or None

    @staticmethod
    def signed_size(query: Mapping[str, str]) -> int | None:
        """The body length (bytes) a checked presigned PUT declared, if it declared one."""
        size = query.get("size")
        return int(size) if size is not None and size.isdigit() else None


# --- S3 ------------------------------------------------------------------------------------------


class S3BlobStore(BlobStore):
    """Blobs as objects in one S3 bucket; sha256 stored as object metadata ``x-amz-meta-sha256``.

    Uploads go through boto3's managed transfer (multipart above ``multipart_threshold`` bytes,
    parts of ``multipart_chunksize``) with S3's own per-part SHA-256 checksums; on completion the
    object's size and recorded sha256 are read back (HEAD) and compared, and a mismatching object
    is deleted.
    """

    def __init__(
        self,
        bucket: str,
        *,
        client: Any,
        presign_client: Any | None = None,
        multipart_threshold: int = 64 * 1024 * 1024,
        multipart_chunksize: int = 16 * 1024 * 1024,
        max_concurrency: int = 4,
        presign_expiry_s: int = 900,
        create_bucket: bool = True,
    ) -> None:
        from boto3.s3.transfer import TransferConfig

        self.bucket = bucket
        self.client = client
        # Presigned URLs must name an endpoint the client can reach, which may differ from the
        # one this process uses (e.g. "minio:9000" inside compose vs. localhost outside).
        self.presign_client = presign_client or client
        self.presign_expiry_s = presign_expiry_s
        self.multipart_threshold = multipart_threshold
        self.transfer_config = TransferConfig(
            multipart_threshold=multipart_threshold,
            multipart_chunksize=multipart_chunksize,
            max_concurrency=max_concurrency,
        )
        if create_bucket:
            self.ensure_bucket()

    @classmethod
    def from_settings(cls, settings: Settings | None = None) -> S3BlobStore:
        """A store configured by the ``UNMASK_S3_*`` settings."""
        import boto3
        from botocore.config import Config

        settings = settings or get_settings()
        config = Config(signature_version="s3v4", s3={"addressing_style": "path"})

        def make_client(endpoint: str | None) -> Any:
            return boto3.client(
                "s3",
                endpoint_url=endpoint,
                region_name=settings.s3_region,
                aws_access_key_id=settings.s3_access_key_id,
                aws_secret_access_key=settings.s3_secret_access_key,
                config=config,
            )

        client = make_client(settings.s3_endpoint_url)
        public = settings.s3_public_endpoint_url
        return cls(
            settings.s3_bucket,
            client=client,
            presign_client=make_client(public) if public else None,
            multipart_threshold=settings.s3_multipart_threshold_bytes,
            multipart_chunksize=settings.s3_multipart_chunksize_bytes,
            presign_expiry_s=settings.s3_presign_expiry_s,
        )

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
        validate_key(key)
        part_size = max(part_bytes, S3_MIN_PART_BYTES, math.ceil(size_bytes / S3_MAX_PARTS))
        with _s3_errors("start multipart upload"):
            created = self.client.create_multipart_upload(
                Bucket=self.bucket,
                Key=key,
                ContentType=media_type,
                Metadata={SHA256_METADATA_KEY: sha256},
            )
        upload_id: str = created["UploadId"]
        expires_at = time.time() + expires_s
        parts = []
        for number in range(1, max(1, math.ceil(size_bytes / part_size)) + 1):
            size = min(part_size, size_bytes - (number - 1) * part_size)
            params = {"Bucket": self.bucket, "Key": key, "UploadId": upload_id}
            url = self.presign_client.generate_presigned_url(
                "upload_part",
                # ContentLength is signed: a part is the size its upload declared.
                Params={**params, "PartNumber": number, "ContentLength": size},
                ExpiresIn=expires_s,
            )
            request = PresignedRequest(url, "PUT", expires_at, {"Content-Length": str(size)})
            parts.append((number, request, size))
        return MultipartUpload(upload_id, part_size, parts)

    def complete_multipart_upload(
        self, key: str, upload_id: str, parts: list[tuple[int, str]]
    ) -> None:
        from botocore.exceptions import ClientError

        try:
            with _s3_errors("complete multipart upload"):
                self.client.complete_multipart_upload(
                    Bucket=self.bucket,
                    Key=key,
                    UploadId=upload_id,
                    MultipartUpload={
                        "Parts": [{"PartNumber": n, "ETag": etag} for n, etag in sorted(parts)]
                    },
                )
        except ClientError as exc:
            error: Any = exc.response.get("Error", {})
            raise MultipartUploadError(
                f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": ")
            ) from None

    def abort_multipart_upload(self, key: str, upload_id: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except ClientError:
            return False
        return True

    def ensure_bucket(self) -> None:
        """Create the bucket when it does not exist."""
        from botocore.exceptions import ClientError

        try:
            self.client.head_bucket(Bucket=self.bucket)
            return
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in {"404", "NoSuchBucket"}:
                raise
        region = self.client.meta.region_name
        kwargs: dict[str, Any] = {"Bucket": self.bucket}
        if region and region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
        try:
            self.client.create_bucket(**kwargs)
        except self.client.exceptions.BucketAlreadyOwnedByYou:
            pass

    def _head(self, key: str) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        try:
            with _s3_errors("head"):
                head: dict[str, Any] = self.client.head_object(
                    Bucket=self.bucket, Key=validate_key(key), ChecksumMode="ENABLED"
                )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
                raise BlobNotFoundError(f"no blob {key!r} in bucket {self.bucket}") from None
            raise
        return head

    def _upload(
        self, key: str, fileobj: IO[bytes], size: int, sha256: str, media_type: str
    ) -> BlobInfo:
        extra = {
            "Metadata": {SHA256_METADATA_KEY: sha256},
            "ContentType": media_type,
            "ChecksumAlgorithm": "SHA256",
        }
        with _s3_errors("upload"):
            self.client.upload_fileobj(
                fileobj, self.bucket, key, ExtraArgs=extra, Config=self.transfer_config
            )
        head = self._head(key)
        stored_sha = head.get("Metadata", {}).get(SHA256_METADATA_KEY)
        problems = []
        if head["ContentLength"] != size:
            problems.append(f"stored size {head['ContentLength']} bytes, sent {size}")
        if stored_sha != sha256:
            problems.append(f"stored sha256 metadata {stored_sha}, sent {sha256}")
        checksum = head.get("ChecksumSHA256")
        # Only a single-part upload has a whole-object SHA-256 checksum ("...-N" is per part).
        if size < self.multipart_threshold and checksum and "-" not in checksum:
            server_sha = base64.b64decode(checksum).hex()
            if server_sha != sha256:
                problems.append(f"server computed sha256 {server_sha}, sent {sha256}")
        if problems:
            self.delete(key)
            raise BlobIntegrityError(f"blob {key!r} failed verification: {'; '.join(problems)}")
        return BlobInfo(key, size, sha256, media_type)

    def put_file(
        self,
        key: str,
        path: str | Path,
        *,
        media_type: str = DEFAULT_MEDIA_TYPE,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> BlobInfo:
        validate_key(key)
        _check_sha256(expected_sha256, "expected_sha256")
        # Hashing first (local disk, ~1 GB/s) lets the sha256 travel as metadata of the upload.
        sha256, size = sha256_file(path)
        _check_expected(key, sha256, size, expected_sha256, expected_size)
        with open(path, "rb") as handle:
            return self._upload(key, handle, size, sha256, media_type)

    def put_stream(
        self,
        key: str,
        stream: IO[bytes],
        *,
        media_type: str = DEFAULT_MEDIA_TYPE,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> BlobInfo:
        validate_key(key)
        _check_sha256(expected_sha256, "expected_sha256")
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES) as spool:
            sha256, size = _copy_hashing(stream, spool)
            _check_expected(key, sha256, size, expected_sha256, expected_size)
            spool.seek(0)
            return self._upload(key, spool, size, sha256, media_type)

    @contextlib.contextmanager
    def _open(self, key: str) -> Iterator[IO[bytes]]:
        from botocore.exceptions import ClientError

        try:
            with _s3_errors("get"):
                response = self.client.get_object(Bucket=self.bucket, Key=validate_key(key))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in {"404", "NoSuchKey"}:
                raise BlobNotFoundError(f"no blob {key!r} in bucket {self.bucket}") from None
            raise
        body = response["Body"]
        try:
            yield body
        finally:
            body.close()

    def open_read(self, key: str) -> contextlib.AbstractContextManager[IO[bytes]]:
        return self._open(key)

    def _download(self, key: str, handle: IO[bytes]) -> tuple[str, int]:
        # A non-seekable sink makes the managed (ranged, parallel) download write in order, so
        # the sha256 is computed on the fly without reading the file again.
        sink = _HashingWriter(handle)
        with _s3_errors("download"):
            self.client.download_fileobj(self.bucket, key, sink, Config=self.transfer_config)
        return sink.hasher.hexdigest(), sink.size

    def stat(self, key: str) -> BlobInfo:
        head = self._head(key)
        return BlobInfo(
            key,
            int(head["ContentLength"]),
            head.get("Metadata", {}).get(SHA256_METADATA_KEY),
            head.get("ContentType", DEFAULT_MEDIA_TYPE),
        )

    def exists(self, key: str) -> bool:
        try:
            self._head(key)
        except BlobNotFoundError:
            return False
        return True

    def delete(self, key: str) -> None:
        with _s3_errors("delete"):
            self.client.delete_object(Bucket=self.bucket, Key=validate_key(key))

    def put_bytes_if_absent(
        self, key: str, data: bytes, *, media_type: str = DEFAULT_MEDIA_TYPE
    ) -> bool:
        from botocore.exceptions import ClientError

        sha256 = hashlib.sha256(data).hexdigest()
        try:
            with _s3_errors("conditional put"):
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=validate_key(key),
                    Body=data,
                    ContentType=media_type,
                    Metadata={SHA256_METADATA_KEY: sha256},
                    ChecksumSHA256=base64.b64encode(bytes.fromhex(sha256)).decode(),
                    IfNoneMatch="*",
                )
        except ClientError as exc:
            code, status = _s3_error_code(exc)
            if status == 412 or code == "PreconditionFailed":
                return False
            raise
        return True

    def _record_sha256(self, key: str, info: BlobInfo, sha256: str) -> None:
        # A managed copy onto itself replaces the metadata (multipart copy above 5 GB).
        with _s3_errors("copy"):
            self._copy_onto_itself(key, info, sha256)

    def _copy_onto_itself(self, key: str, info: BlobInfo, sha256: str) -> None:
        self.client.copy(
            {"Bucket": self.bucket, "Key": key},
            self.bucket,
            key,
            ExtraArgs={
                "Metadata": {SHA256_METADATA_KEY: sha256},
                "MetadataDirective": "REPLACE",
                "ContentType": info.media_type,
            },
            Config=self.transfer_config,
        )

    def presigned_get(self, key: str, expires_s: int | None = None) -> PresignedRequest:
        lifetime = self.presign_expiry_s if expires_s is None else expires_s
        url = self.presign_client.generate_presigned_url(
            "get_object",
            Params={"Bucket": self.bucket, "Key": validate_key(key)},
            ExpiresIn=lifetime,
        )
        return PresignedRequest(url, "GET", time.time() + lifetime)

    def presigned_put(
        self,
        key: str,
        expires_s: int | None = None,
        *,
        media_type: str | None = None,
        expected_sha256: str | None = None,
        expected_size: int | None = None,
    ) -> PresignedRequest:
        _check_sha256(expected_sha256, "expected_sha256")
        lifetime = self.presign_expiry_s if expires_s is None else expires_s
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": validate_key(key)}
        headers: dict[str, str] = {}
        if expected_size is not None:
            params["ContentLength"] = expected_size  # signed: S3 refuses another length
            headers["Content-Length"] = str(expected_size)
        if media_type:
            params["ContentType"] = media_type
            headers["Content-Type"] = media_type
        if expected_sha256:
            checksum = base64.b64encode(bytes.fromhex(expected_sha256)).decode()
            params["Metadata"] = {SHA256_METADATA_KEY: expected_sha256}
            params["ChecksumSHA256"] = checksum
            headers[f"x-amz-meta-{SHA256_METADATA_KEY}"] = expected_sha256
            headers["x-amz-checksum-sha256"] = checksum
        url = self.presign_client.generate_presigned_url(
            "put_object", Params=params, ExpiresIn=lifetime
        )
        return PresignedRequest(url, "PUT", time.time() + lifetime, headers)


def blob_store_from_settings(settings: Settings | None = None) -> BlobStore:
    """The blob store named by ``Settings.blob_backend`` (``local`` or ``s3``)."""
    settings = settings or get_settings()
    if settings.blob_backend == "s3":
        return S3BlobStore.from_settings(settings)
    return LocalBlobStore(
        settings.resolved_blob_dir(),
        signing_key=settings.token_hmac_key,
        base_url=settings.blob_public_url or None,
        presign_expiry_s=settings.s3_presign_expiry_s,
    )


def new_upload_key(prefix: str) -> str:
    """A fresh key under ``prefix`` for a client upload (``prefix/<uuid4 hex>``)."""
    return f"{validate_key(prefix)}/{uuid.uuid4().hex}"
