"""Archive storage per team and abandoned presigned uploads.

Real PostgreSQL; the local blob folder for streamed uploads, moto's S3 server for multipart ones.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from services.storage.models import ArchiveUpload, Submission

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


def _protocol(client: Any, world: Any, body: dict[str, Any]) -> int:
    response = client.post("/v1/admin/protocols", json=body, headers=world.auth(world.admin))
    assert response.status_code == 201, response.text
    protocol_id: int = response.json()["id"]
    return protocol_id


def _blob_files(root: Path) -> list[Path]:
    if not root.exists():
        return []
    return [p for p in root.rglob("*") if p.is_file() and ".meta" not in p.parts]


def test_storage_quota_counts_rejected_archives_for_a_day(
    make_api_client: Any,
    api_world: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Any,
    tmp_path: Path,
) -> None:
    from services.platform import submissions

    client = make_api_client(quota_archive_storage_bytes=300_000)
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    url = f"/v1/submissions/archive?name=anon&protocol_id={protocol_id}"
    first = client.post(url, content=os.urandom(200_000), headers=a)
    assert first.status_code == 201, first.text
    stored = _blob_files(tmp_path / "blobs")

    def over_quota(response: Any) -> None:
        assert response.status_code == 429, response.text
        assert "archive storage bytes" in response.json()["detail"]
        assert _blob_files(tmp_path / "blobs") == stored  # nothing kept

    over_quota(client.post(url, content=os.urandom(200_000), headers=a))  # Content-Length known
    usage = client.get("/v1/me", headers=a).json()["quotas"]["archive_storage_bytes"]
    assert usage == {"limit": 300_000, "used": 200_000, "window": "now (rejected: rolling 24 h)"}

    def chunks() -> Any:  # no Content-Length: the size is known only after the upload
        for _ in range(10):
            yield os.urandom(20_000)

    over_quota(client.post(url, content=chunks(), headers=a))
    # A rejected archive still counts (its blob is gone, but rejection is no free re-upload) ...
    with pg_database.session_scope() as session:
        submissions.reject_submission(session, first.json()["id"], reason="missing utterances")
    shown = client.get(f"/v1/submissions/{first.json()['id']}", headers=a).json()
    assert shown["status"] == "rejected" and shown["rejection_reason"] == "missing utterances"
    over_quota(client.post(url, content=os.urandom(200_000), headers=a))
    # ... for 24 h after its upload.
    with pg_database.session_scope() as session:
        row = session.get(Submission, first.json()["id"])
        row.created_at -= dt.timedelta(hours=25)
    again = client.post(url, content=os.urandom(200_000), headers=a)
    assert again.status_code == 201, again.text
    # Another team has its own quota.
    other = client.post(url, content=os.urandom(200_000), headers=api_world.auth(api_world.b))
    assert other.status_code == 201, other.text


def test_abandoned_multipart_uploads_are_charged_and_aborted(
    make_api_client: Any,
    api_world: Any,
    api_protocol_body: dict[str, Any],
    s3_store: Any,
    pg_database: Any,
) -> None:
    from services.platform.archives import abort_stale_uploads
    from services.settings import Settings

    client = make_api_client(
        blob_store=s3_store, upload_part_bytes=5 * MIB, quota_archive_storage_bytes=20 * MIB
    )
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    data = os.urandom(5 * MIB + 1000)
    body = {
        "name": "big",
        "protocol_id": protocol_id,
        "size_bytes": 12 * MIB,
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    start = client.post("/v1/submissions/uploads", json=body, headers=a)
    assert start.status_code == 201, start.text
    upload = start.json()
    assert len(upload["parts"]) == 3
    # One part uploaded, then an empty-parts complete (refused), then the client goes away.
    part = upload["parts"][0]
    put = httpx.put(part["url"], content=data[: part["size_bytes"]], timeout=30)
    assert put.status_code == 200, put.text
    complete = f"/v1/submissions/uploads/{upload['upload_id']}/complete"
    assert client.post(complete, json={"parts": []}, headers=a).status_code == 422
    # The open upload is recorded and charged (no submission row exists for it).
    with pg_database.session_scope() as session:
        row = session.scalar(select(ArchiveUpload).where(ArchiveUpload.blob_key == upload["key"]))
        assert row is not None and row.state == "open" and row.size_bytes == 12 * MIB
        expires_at = row.expires_at
        assert session.scalar(select(Submission.id)) is None
    refused = client.post("/v1/submissions/uploads", json=body, headers=a)
    assert refused.status_code == 429, refused.text
    assert "archive storage bytes" in refused.json()["detail"]

    def open_uploads() -> list[str]:
        listed = s3_store.client.list_multipart_uploads(Bucket=s3_store.bucket)
        return [u["UploadId"] for u in listed.get("Uploads", [])]

    assert len(open_uploads()) == 1
    settings = Settings(_env_file=None, upload_abort_grace_s=300)  # type: ignore[call-arg]
    # Not yet: the ticket is still valid.
    early = abort_stale_uploads(pg_database, s3_store, settings, now=expires_at)
    assert early.aborted == [] and len(open_uploads()) == 1
    late = abort_stale_uploads(
        pg_database, s3_store, settings, now=expires_at + dt.timedelta(seconds=301)
    )
    assert late.aborted == [upload["key"]]
    assert open_uploads() == []
    with pg_database.session_scope() as session:
        row = session.scalar(select(ArchiveUpload).where(ArchiveUpload.blob_key == upload["key"]))
        assert row is not None and row.state == "aborted" and row.finished_at is not None
    # The quota is released.
    assert client.post("/v1/submissions/uploads", json=body, headers=a).status_code == 201


def test_completed_presigned_upload_is_not_aborted(
    make_api_client: Any,
    api_world: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Any,
) -> None:
    from services.platform.archives import abort_stale_uploads
    from services.settings import Settings

    client = make_api_client()
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    data = os.urandom(64 * 1024)
    sha = hashlib.sha256(data).hexdigest()
    body = {"name": "ok", "protocol_id": protocol_id, "size_bytes": len(data), "sha256": sha}
    upload = client.post("/v1/submissions/uploads", json=body, headers=a).json()
    part = upload["parts"][0]
    assert client.put(part["url"], content=data, headers=part["headers"]).status_code == 200
    done = client.post(f"/v1/submissions/uploads/{upload['upload_id']}/complete", headers=a)
    assert done.status_code == 201, done.text
    with pg_database.session_scope() as session:
        row = session.scalar(select(ArchiveUpload).where(ArchiveUpload.blob_key == upload["key"]))
        assert row is not None and row.state == "completed"
        submission = session.get(Submission, done.json()["id"])
        assert submission is not None and submission.archive_size_bytes == len(data)
    far = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    store = client.app.state.context.blob_store
    assert abort_stale_uploads(pg_database, store, settings, now=far).aborted == []
    assert store.exists(upload["key"])


def test_abandoned_single_put_upload_loses_its_blob(
    make_api_client: Any,
    api_world: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Any,
) -> None:
    from services.platform.archives import abort_stale_uploads
    from services.settings import Settings

    client = make_api_client()
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    data = os.urandom(32 * 1024)
    sha = hashlib.sha256(data).hexdigest()
    body = {"name": "gone", "protocol_id": protocol_id, "size_bytes": len(data), "sha256": sha}
    upload = client.post("/v1/submissions/uploads", json=body, headers=a).json()
    part = upload["parts"][0]
    assert client.put(part["url"], content=data, headers=part["headers"]).status_code == 200
    store = client.app.state.context.blob_store
    assert store.exists(upload["key"])  # uploaded, never completed
    far = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert abort_stale_uploads(pg_database, store, settings, now=far).aborted == [upload["key"]]
    assert not store.exists(upload["key"])
    with pg_database.session_scope() as session:
        row = session.scalar(select(ArchiveUpload).where(ArchiveUpload.blob_key == upload["key"]))
        assert row is not None and row.state == "aborted"
