"""The one place where Unmask reads its configuration.

Every deployment knob is an environment variable with the ``UNMASK_`` prefix (12-factor);
``Settings()`` reads them, and ``get_settings()`` caches one instance per process. Scientific
defaults (durations, split sizes, model sizes) are not here: they belong to the evaluation config
(`services.pipeline.config`), because they are part of what a result was computed under.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Deployment settings, read from ``UNMASK_*`` environment variables (and a ``.env`` file)."""

    model_config = SettingsConfigDict(env_prefix="UNMASK_", env_file=".env", extra="ignore")

    # Local state of the embedded deployment: SQLite file, blob folder, caches.
    data_dir: Path = Field(Path(".unmask"), description="Folder for embedded-mode state.")

    # Database (SQLAlchemy URL). Embedded default: SQLite under data_dir.
    database_url: str = Field("", description="SQLAlchemy URL; empty = SQLite under data_dir.")

    # Blob store: a local folder (embedded) or an S3-compatible service.
    blob_backend: Literal["local", "s3"] = "local"
    blob_dir: Path | None = Field(None, description="Local blob folder; default data_dir/blobs.")
    s3_endpoint_url: str | None = None
    s3_bucket: str = "unmask"
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_presign_expiry_s: int = Field(900, description="Presigned URL lifetime, seconds.")
    s3_public_endpoint_url: str | None = Field(
        None, description="S3 endpoint clients reach for presigned URLs; default s3_endpoint_url."
    )
    s3_multipart_threshold_bytes: int = Field(
        64 * 1024 * 1024, description="Uploads at least this large use S3 multipart, bytes."
    )
    s3_multipart_chunksize_bytes: int = Field(
        16 * 1024 * 1024, description="S3 multipart part size, bytes (S3 minimum 5 MiB)."
    )
    blob_public_url: str = Field(
        "", description="Base URL of signed local-blob URLs; empty = file:// URIs."
    )

    # Celery broker. Empty = a filesystem broker under data_dir (embedded mode).
    broker_url: str = ""
    result_backend: str = ""
    celery_eager: bool = Field(False, description="Run tasks in-process (embedded/tests).")

    # Compute.
    device: Literal["auto", "cpu", "cuda"] = "auto"
    num_threads: int = Field(0, description="torch intra-op threads; 0 = torch's default.")
    dataloader_workers: int = Field(0, description="DataLoader worker processes for training.")
    cache_dir: Path | None = Field(
        None, description="Feature/embedding cache; default data_dir/cache."
    )

    # Security.
    token_hmac_key: str = Field(
        "dev-only-change-me", description="Key for HMAC-SHA256 hashing of API tokens."
    )

    # HTTP gateway.
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    public_url: str = ""

    def resolved_database_url(self) -> str:
        """The database URL, defaulting to an SQLite file inside ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'unmask.db').resolve()}"

    def resolved_blob_dir(self) -> Path:
        """The local blob folder (embedded mode)."""
        return self.blob_dir if self.blob_dir is not None else self.data_dir / "blobs"

    def resolved_cache_dir(self) -> Path:
        """The folder for cached features and embeddings."""
        return self.cache_dir if self.cache_dir is not None else self.data_dir / "cache"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (read once from the environment)."""
    return Settings()
