"""``LocalBlobStore``: blobs as files under a folder, with signed URLs (the interface:
``services.storage.blob_interface``)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlencode

from services.storage.blob_interface import (
    DEFAULT_MEDIA_TYPE,
    BlobInfo,
    BlobStore,
    PresignedRequest,
    _check_expected,
    _check_sha256,
    _copy_hashing,
    validate_key,
)
from services.storage.errors import (
    BlobNotFoundError,
    PermissionDeniedError,
)

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
