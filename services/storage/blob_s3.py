"""``S3BlobStore``: blobs in S3 or a clone, with presigned URLs (the interface:
``services.storage.blob_interface``)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import math
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, cast

from services.settings import Settings, get_settings
from services.storage.blob_interface import (
    DEFAULT_MEDIA_TYPE,
    S3_MAX_PARTS,
    S3_MIN_PART_BYTES,
    SHA256_METADATA_KEY,
    SPOOL_MEMORY_BYTES,
    BlobInfo,
    BlobStore,
    MultipartUpload,
    MultipartUploadError,
    PresignedRequest,
    _check_expected,
    _check_sha256,
    _copy_hashing,
    _HashingWriter,
    _s3_error_code,
    _s3_errors,
    sha256_file,
    validate_key,
)
from services.storage.errors import (
    BlobIntegrityError,
    BlobNotFoundError,
)

# --- S3 ------------------------------------------------------------------------------------------


class _GuardedBody(io.RawIOBase):
    """An S3 object's body whose reads raise :class:`BlobStoreUnavailableError` when the
    connection is cut or stalls mid-body (a transient error, not a 500)."""

    def __init__(self, body: Any, key: str) -> None:
        super().__init__()
        self._body = body
        self._what = f"read {key}"

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        with _s3_errors(self._what):
            data: bytes = self._body.read(None if size is None or size < 0 else size)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


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
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": "path"},
            # botocore's defaults (60 s each, legacy retries) let a stalled service hang a
            # request for minutes: a stall fails it in seconds (a transient error: 503 with
            # Retry-After, or a retried phase), and throttling and 5xx answers are retried with
            # back-off first.
            connect_timeout=settings.s3_connect_timeout_s,
            read_timeout=settings.s3_read_timeout_s,
            retries={"mode": "standard", "max_attempts": settings.s3_max_attempts},
            # SO_KEEPALIVE (on the system's timers): a pooled connection cut while idle is found
            # dead by TCP; a request in flight is bounded by the read timeout either way.
            tcp_keepalive=True,
        )

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
        body = _GuardedBody(response["Body"], key)
        try:
            yield cast(IO[bytes], body)
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
