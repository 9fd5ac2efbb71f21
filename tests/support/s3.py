"""The boto3 client the tests use to reach a moto S3 server over HTTP."""

from __future__ import annotations

from typing import Any


def moto_s3_client(endpoint: str, **config: Any) -> Any:
    """A boto3 S3 client for ``endpoint`` (path-style, SigV4, moto's dummy credentials);
    ``config``: further ``botocore.config.Config`` fields (retries, timeouts)."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, **config),
    )
