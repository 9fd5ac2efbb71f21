"""Platform faults answered as what they are: a full disk (507, nothing half-written, readiness
"not ready: disk"), a lost database connection (503 + Retry-After), and signed PUTs bound to the
size their upload declared. Real PostgreSQL; a local blob folder served by the API."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
from collections import namedtuple
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from services.storage.models import ArchiveUpload, Submission

pytestmark = pytest.mark.integration


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture()
def env(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Any:
    client = make_api_client()
    admin = api_world.auth(api_world.admin)
    response = client.post("/v1/admin/protocols", json=api_protocol_body, headers=admin)
    assert response.status_code == 201, response.text
    client.protocol_id = response.json()["id"]
    client.a = api_world.auth(api_world.a)
    return client


def _files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


class _DiskFull:
    """``os.fsync`` that fails with ENOSPC from its ``after``-th call on (0 = the first)."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.calls = 0
        self.real = os.fsync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.calls > self.after:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.real(fd)


@pytest.mark.parametrize("fail_after", [0, 1], ids=["blob", "metadata"])
def test_a_full_disk_is_507_and_leaves_nothing_behind(
    env: Any, tmp_path: Path, pg_database: Any, monkeypatch: pytest.MonkeyPatch, fail_after: int
) -> None:
    blobs = tmp_path / "blobs"
    before = _files_under(blobs)
    monkeypatch.setattr(os, "fsync", _DiskFull(fail_after))
    response = env.post(
        f"/v1/submissions/archive?name=full&protocol_id={env.protocol_id}",
        content=b"x" * 4096,
        headers={**env.a, "Content-Type": "application/octet-stream"},
    )
    problem = _problem(response, 507)
    assert problem["type"].endswith("insufficient-storage")
    assert "storage is full" in problem["detail"] and "nothing" in problem["detail"]
    assert _files_under(blobs) == before  # no blob, no metadata, no temporary file
    with pg_database.session_scope() as session:
        assert session.scalars(select(Submission).where(Submission.name == "full")).all() == []


def test_readiness_is_not_ready_below_the_free_space_threshold(
    make_api_client: Any, api_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_api_client(min_free_disk_bytes=10**9)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**10, 10**10, 0))
    # Anonymous callers learn which check failed, not where the disk is (internals: admins).
    anonymous = _problem(client.get("/v1/health/ready"), 503)
    assert anonymous["detail"].startswith("not ready: disk: failed")
    assert "UNMASK_MIN_FREE_DISK_BYTES" not in anonymous["detail"]
    assert anonymous["checks"]["disk"]["status"] == "failed"
    admin = api_world.auth(api_world.admin)
    problem = _problem(client.get("/v1/health/ready", headers=admin), 503)
    assert problem["detail"].startswith("not ready: disk: 0 bytes free under ")
    assert "UNMASK_MIN_FREE_DISK_BYTES" in problem["detail"]
    assert problem["checks"]["disk"]["status"] == "failed"
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**10, 0, 10**10))
    ready = client.get("/v1/health/ready")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["disk"]["status"] == "ok"


def test_a_lost_database_connection_is_503_with_retry_after(
    env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg
    from sqlalchemy.exc import OperationalError

    import api.routes.jobs as job_routes

    def terminated(*_args: Any, **_kwargs: Any) -> Any:
        cause = psycopg.OperationalError("terminating connection due to administrator command")
        raise OperationalError("SELECT ...", {}, cause)

    monkeypatch.setattr(job_routes.job_records, "list_jobs", terminated)
    problem = _problem(env.get("/v1/jobs", headers=env.a), 503)
    assert "lost the connection" in problem["detail"]
    assert env.get("/v1/jobs", headers=env.a).headers["retry-after"] == "5"


def test_a_signed_put_takes_only_the_size_its_upload_declared(
    env: Any, tmp_path: Path, pg_database: Any
) -> None:
    data = os.urandom(100)
    start = env.post(
        "/v1/submissions/uploads",
        json={
            "name": "small",
            "protocol_id": env.protocol_id,
            "size_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        },
        headers=env.a,
    )
    assert start.status_code == 201, start.text
    part = start.json()["parts"][0]
    assert "size=100" in part["url"]
    before = _files_under(tmp_path / "blobs")
    # Declared up front: refused before a byte is read.
    big = env.put(part["url"], content=b"y" * (3 * 1024 * 1024), headers=part["headers"])
    problem = _problem(big, 413)
    assert problem["limit_bytes"] == 100 and "declared" in problem["detail"]

    # Sent without a Content-Length (chunked): refused once byte 101 arrives.
    def chunks() -> Any:
        for _ in range(48):
            yield b"z" * 65536

    streamed = env.put(part["url"], content=chunks(), headers=part["headers"])
    assert _problem(streamed, 413)["limit_bytes"] == 100
    assert _files_under(tmp_path / "blobs") == before
    # A URL whose size was changed no longer matches its signature.
    forged = part["url"].replace("size=100", "size=4000000")
    _problem(env.put(forged, content=data, headers=part["headers"]), 403)
    assert env.put(part["url"], content=data, headers=part["headers"]).status_code == 200
    with pg_database.session_scope() as session:
        assert session.scalars(select(ArchiveUpload)).first() is not None
