"""The S3 store under faults, through a fault-injecting proxy in front of the moto server: a
stalled service, slow answers, a body cut mid-read, an upload cut mid-request, 503 answers and a
stopped server. Every failure is a transient error (the API answers 503 with Retry-After, a job
phase is retried) within seconds, never a hang; nothing half-written is visible; slow answers
under the read timeout still succeed. The store is built as a deployment builds it
(``S3BlobStore.from_settings``)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from sqlalchemy import func, select

from services.platform.jobs.host import is_transient_error, storage_transient_errors
from services.settings import Settings
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.models import Submission
from support.fault_proxy import FaultProxy

pytestmark = pytest.mark.integration

BLOB_BYTES = 2 * 1024 * 1024
FAIL_WITHIN_S = 15.0
"""A stalled or broken service fails an operation within this many seconds (read timeout 1 s,
2 tries): botocore's defaults (60 s per read, 5 tries) would take minutes."""


@pytest.fixture()
def proxy(moto_endpoint: str) -> Iterator[FaultProxy]:
    parsed = urlparse(moto_endpoint)
    proxy = FaultProxy((parsed.hostname or "127.0.0.1", parsed.port or 80))
    yield proxy
    proxy.stop()


@pytest.fixture()
def store(proxy: FaultProxy) -> S3BlobStore:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        blob_backend="s3",
        s3_endpoint_url=proxy.url,
        s3_bucket=f"unmask-faults-{uuid.uuid4().hex[:10]}",
        s3_access_key_id="testing",
        s3_secret_access_key="testing",
        s3_connect_timeout_s=1.0,
        s3_read_timeout_s=1.0,
        s3_max_attempts=2,
    )
    return S3BlobStore.from_settings(settings)


def _failure(operation: Callable[[], Any], within_s: float = FAIL_WITHIN_S) -> BaseException:
    """The error ``operation`` raises, asserted to come within ``within_s`` seconds."""
    caught: list[BaseException] = []

    def run() -> None:
        try:
            operation()
        except BaseException as exc:
            caught.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within_s)
    assert not thread.is_alive(), f"still waiting after {within_s:.0f} s"
    assert caught, f"no error after {time.monotonic() - started:.1f} s"
    return caught[0]


def _assert_transient(exc: BaseException) -> None:
    assert is_transient_error(exc, storage_transient_errors()), f"{type(exc).__name__}: {exc!r}"


def test_a_stalled_service_fails_reads_and_writes_in_seconds(
    store: S3BlobStore, proxy: Any
) -> None:
    data = os.urandom(1000)
    store.put_bytes("stall/a", data)
    proxy.mode = "stall"
    _assert_transient(_failure(lambda: store.get_bytes("stall/a")))
    _assert_transient(_failure(lambda: store.put_bytes("stall/b", data)))
    proxy.mode = "pass"
    assert store.get_bytes("stall/a") == data
    assert not store.exists("stall/b")


def test_slow_answers_under_the_read_timeout_succeed(store: S3BlobStore, proxy: Any) -> None:
    data = os.urandom(100_000)
    store.put_bytes("slow/a", data)
    proxy.delay_s = 0.3
    proxy.mode = "slow"
    assert store.get_bytes("slow/a") == data


def test_a_body_cut_mid_read_is_transient_and_leaves_no_partial_file(
    store: S3BlobStore, proxy: Any, tmp_path: Path
) -> None:
    data = os.urandom(BLOB_BYTES)
    store.put_bytes("cut/read", data)
    proxy.limit_bytes = 256 * 1024
    proxy.mode = "cut_response"
    target = tmp_path / "downloads" / "blob.bin"
    target.parent.mkdir()
    _assert_transient(_failure(lambda: store.get_to_path("cut/read", target)))
    assert list(target.parent.iterdir()) == []  # neither the file nor a temporary one

    def read_stream() -> None:
        with store.open_read("cut/read") as stream:
            while stream.read(64 * 1024):
                pass

    _assert_transient(_failure(read_stream))
    proxy.mode = "pass"
    store.get_to_path("cut/read", target)
    assert hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(data).digest()


def test_an_upload_cut_mid_request_leaves_no_object(
    store: S3BlobStore, proxy: Any, tmp_path: Path
) -> None:
    source = tmp_path / "upload.bin"
    source.write_bytes(os.urandom(BLOB_BYTES))
    proxy.limit_bytes = 256 * 1024
    proxy.mode = "cut_request"
    _assert_transient(_failure(lambda: store.put_file("cut/upload", source)))
    proxy.mode = "pass"
    assert not store.exists("cut/upload")
    info = store.put_file("cut/upload", source)
    assert info.size_bytes == BLOB_BYTES and store.stat("cut/upload").sha256 == info.sha256


def test_503_answers_and_a_stopped_server_are_transient(store: S3BlobStore, proxy: Any) -> None:
    store.put_bytes("down/a", b"x")
    proxy.mode = "http_503"
    _assert_transient(_failure(lambda: store.put_bytes("down/b", b"y")))
    _assert_transient(_failure(lambda: store.stat("down/a")))
    proxy.stop()
    _assert_transient(_failure(lambda: store.get_bytes("down/a")))


def _submissions(database: Database) -> int:
    with database.session_scope() as session:
        return int(session.scalar(select(func.count()).select_from(Submission)) or 0)


def test_archive_uploads_while_s3_fails_are_503_with_retry_after_and_store_nothing(
    make_api_client: Any,
    api_world: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Database,
    store: S3BlobStore,
    proxy: Any,
) -> None:
    client = make_api_client(blob_store=store)
    admin, team = api_world.auth(api_world.admin), api_world.auth(api_world.a)
    created = client.post("/v1/admin/protocols", json=api_protocol_body, headers=admin)
    assert created.status_code == 201, created.text
    url = f"/v1/submissions/archive?name=anon&protocol_id={created.json()['id']}"
    data = os.urandom(300 * 1024)
    for mode in ("http_503", "stall", "cut_request"):
        proxy.limit_bytes = 64 * 1024
        proxy.mode = mode
        started = time.monotonic()
        answer = client.post(url, content=data, headers={**team, "Content-Type": "application/zip"})
        assert answer.status_code == 503, (mode, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert int(answer.headers["Retry-After"]) > 0
        assert time.monotonic() - started < FAIL_WITHIN_S, mode
        assert _submissions(pg_database) == 0
    proxy.mode = "pass"
    answer = client.post(url, content=data, headers={**team, "Content-Type": "application/zip"})
    assert answer.status_code == 201, answer.text
    assert answer.json()["archive_sha256"] == hashlib.sha256(data).hexdigest()
    assert _submissions(pg_database) == 1
