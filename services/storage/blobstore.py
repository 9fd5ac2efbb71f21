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

Callers import from here. The interface, its records and the key rule are ``blob_interface.py``,
the stores ``blob_local.py`` and ``blob_s3.py`` (re-exported here, with the factory
:func:`blob_store_from_settings`).
"""

from __future__ import annotations

from services.settings import Settings, get_settings
from services.storage.blob_interface import BLOB_KEY_PATTERN as BLOB_KEY_PATTERN
from services.storage.blob_interface import MAX_KEY_LENGTH as MAX_KEY_LENGTH
from services.storage.blob_interface import BlobStore as BlobStore
from services.storage.blob_interface import BlobStoreUnavailableError as BlobStoreUnavailableError
from services.storage.blob_interface import MultipartUploadError as MultipartUploadError
from services.storage.blob_interface import PresignedRequest as PresignedRequest
from services.storage.blob_interface import new_upload_key as new_upload_key
from services.storage.blob_interface import s3_connection_errors as s3_connection_errors
from services.storage.blob_interface import sha256_file as sha256_file
from services.storage.blob_interface import validate_key as validate_key
from services.storage.blob_local import LocalBlobStore as LocalBlobStore
from services.storage.blob_s3 import S3BlobStore as S3BlobStore


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
