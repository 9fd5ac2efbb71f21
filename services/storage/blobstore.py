"""Which blob store the settings name: :func:`blob_store_from_settings`.

The interface, its records and the key rule are ``blob_interface`` (which describes what every
store guarantees), the stores ``blob_local`` and ``blob_s3``: import each name from its module.
"""

from __future__ import annotations

from services.settings import Settings, get_settings
from services.storage.blob_interface import BlobStore
from services.storage.blob_local import LocalBlobStore
from services.storage.blob_s3 import S3BlobStore


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
