"""Liveness and readiness probes (no token needed)."""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

from api.context import ApiContext
from api.deps import ContextDep
from api.problems import PROBLEM_MEDIA_TYPE, PROBLEM_TYPE_PREFIX, problem_responses
from api.schemas import CheckOut, Liveness, Readiness
from services.platform import identity
from services.storage.blob_local import LocalBlobStore
from services.storage.blob_s3 import S3BlobStore

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/v1/health", tags=["health"])

CHECK_TIMEOUT_S = 2.0


def _timed(check: Callable[[], str]) -> CheckOut:
    start = time.perf_counter()
    try:
        detail = check()
    except Exception as exc:  # a probe reports every failure, whatever its type
        return CheckOut(
            status="failed",
            latency_ms=(time.perf_counter() - start) * 1000,
            detail=f"{type(exc).__name__}: {exc}"[:500],
        )
    return CheckOut(status="ok", latency_ms=(time.perf_counter() - start) * 1000, detail=detail)


def check_database(context: ApiContext) -> CheckOut:
    """``SELECT 1`` on the database."""

    def run() -> str:
        with context.database.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return context.database.engine.dialect.name

    return _timed(run)


def check_broker(context: ApiContext) -> CheckOut:
    """Redis ``PING`` when the broker is Redis; skipped for the filesystem/eager brokers."""
    url = context.settings.broker_url
    if context.settings.celery_eager or not url.startswith(("redis://", "rediss://")):
        kind = "eager" if context.settings.celery_eager else (url.split(":", 1)[0] or "filesystem")
        return CheckOut(status="skipped", detail=f"broker {kind!r} has no server to ping")

    def run() -> str:
        import redis

        client = redis.Redis.from_url(
            url, socket_timeout=CHECK_TIMEOUT_S, socket_connect_timeout=CHECK_TIMEOUT_S
        )
        try:
            client.ping()
        finally:
            client.close()
        return "redis"

    return _timed(run)


def check_blob_store(context: ApiContext) -> CheckOut:
    """The bucket answers (S3 ``HEAD``) or the local folder is writable."""

    def run() -> str:
        store = context.blob_store
        if isinstance(store, S3BlobStore):
            store.client.head_bucket(Bucket=store.bucket)
            return f"s3 bucket {store.bucket}"
        if isinstance(store, LocalBlobStore):
            probe = store.root / ".tmp" / f"ready-{uuid.uuid4().hex}"
            probe.write_bytes(b"")
            probe.unlink()
            return "local folder"
        return type(store).__name__

    return _timed(run)


def check_disk(context: ApiContext) -> CheckOut:
    """Free space of every folder this process writes to, against ``min_free_disk_bytes``."""
    threshold = context.settings.min_free_disk_bytes
    if threshold <= 0:
        return CheckOut(status="skipped", detail="UNMASK_MIN_FREE_DISK_BYTES is 0")
    start = time.perf_counter()
    low = []
    for folder in disk_folders(context):
        free = shutil.disk_usage(folder).free
        if free < threshold:
            low.append(f"{free} bytes free under {folder}")
    latency_ms = (time.perf_counter() - start) * 1000
    if low:
        detail = (
            "; ".join(low) + f", below the threshold of {threshold} bytes "
            "(UNMASK_MIN_FREE_DISK_BYTES)"
        )
        return CheckOut(status="failed", latency_ms=latency_ms, detail=detail)
    return CheckOut(status="ok", latency_ms=latency_ms, detail=f"at least {threshold} bytes free")


def disk_folders(context: ApiContext) -> list[Path]:
    """The existing folders this process writes to: data dir, local blob folder, temp folder."""
    settings = context.settings
    candidates = [settings.data_dir, Path(tempfile.gettempdir())]
    store = context.blob_store
    if isinstance(store, LocalBlobStore):
        candidates.append(store.root)
    return [folder for folder in dict.fromkeys(candidates) if folder.is_dir()]


@router.get(
    "/live",
    response_model=Liveness,
    summary="Liveness: the process answers",
    responses=problem_responses(500),
)
async def live() -> Liveness:
    """Always `ok` while the process serves requests (no dependency is checked). Runs on the
    event loop itself, so no busy thread pool can delay it."""
    return Liveness(status="ok")


def _is_admin(context: ApiContext, request: Request) -> bool:
    """Whether the request carries a valid admin token (False when the database is down)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    try:
        with context.database.session_scope() as session:
            principal = identity.authenticate(
                session, token.strip(), hmac_key=context.settings.token_hmac_key
            )
            return principal.is_admin
    except Exception:
        return False


@router.get(
    "/ready",
    response_model=Readiness,
    summary="Readiness: database, broker and blob store answer; the disk has free space",
    responses=problem_responses(500, 503),
)
def ready(
    context: ContextDep,
    request: Request,
) -> Readiness | JSONResponse:
    """Checks each dependency; 200 when all are `ok` or `skipped`, else 503 with the report.
    Each check's `detail` (host names, buckets, errors) goes to an admin token only; other
    callers get the statuses, and a failure's detail is logged."""
    checks = {
        "database": check_database(context),
        "broker": check_broker(context),
        "blob_store": check_blob_store(context),
        "disk": check_disk(context),
    }
    failed = [name for name, check in checks.items() if check.status == "failed"]
    for name in failed:
        logger.warning("not ready: %s: %s", name, checks[name].detail)
    if not _is_admin(context, request):
        checks = {name: check.model_copy(update={"detail": ""}) for name, check in checks.items()}
        for name in failed:
            checks[name].detail = "failed (the server log and an admin token say why)"
    if not failed:
        return Readiness(status="ready", checks=checks)
    body = {
        "type": PROBLEM_TYPE_PREFIX + "not-ready",
        "title": "Service unavailable",
        "status": 503,
        "detail": "not ready: " + "; ".join(f"{n}: {checks[n].detail}" for n in failed),
        "instance": "/v1/health/ready",
        "checks": {name: check.model_dump() for name, check in checks.items()},
    }
    return JSONResponse(body, status_code=503, media_type=PROBLEM_MEDIA_TYPE)
