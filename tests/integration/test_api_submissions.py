"""HTTP gateway: submissions (built-in, container, streamed and presigned archives).

Real PostgreSQL; local blob folder served by the API's signed-URL routes, and S3 (moto) for the
multipart path.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.integration

MIB = 1024 * 1024


def _protocol(client: Any, world: Any, body: dict[str, Any]) -> int:
    response = client.post("/v1/admin/protocols", json=body, headers=world.auth(world.admin))
    assert response.status_code == 201, response.text
    protocol_id: int = response.json()["id"]
    return protocol_id


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    return body


def _blob_files(root: Path) -> list[Path]:
    """Stored blobs and leftovers in the store's temporary folder."""
    if not root.exists():
        return []
    return [p for p in root.rglob("*") if p.is_file() and ".meta" not in p.parts]


@pytest.mark.parametrize(
    ("builtin", "field", "fragment"),
    [
        ({"name": "pitchy"}, "body.builtin.name", "'pitch', 'vtln' or 'mcadams'"),
        ({"name": "pitch", "params": {"semitone": 2}}, "body.builtin.params", "semitone"),
        ({"name": "pitch", "params": {"semitones": "high"}}, "body.builtin.params", "semitones"),
        ({"name": "vtln", "params": {"warp": "spiral"}}, "body.builtin.params", "spiral"),
    ],
)
def test_builtin_submission_errors_name_the_parameter(
    make_api_client: Any, api_world: Any, builtin: dict[str, Any], field: str, fragment: str
) -> None:
    client = make_api_client()
    response = client.post(
        "/v1/submissions",
        json={"kind": "builtin", "name": "bad", "builtin": builtin},
        headers=api_world.auth(api_world.a),
    )
    body = _problem(response, 422)
    assert body["detail"].startswith(field) and fragment in body["detail"], body["detail"]
    assert body["errors"][0]["field"] == field


def test_builtin_and_container_submissions(make_api_client: Any, api_world: Any) -> None:
    client = make_api_client()
    a = api_world.auth(api_world.a)
    response = client.post(
        "/v1/submissions",
        json={
            "kind": "builtin",
            "name": "vtln power",
            "visibility": "public",
            "builtin": {"name": "vtln", "params": {"warp": "power", "alpha": 0.1}},
        },
        headers=a,
    )
    assert response.status_code == 201, response.text
    sub = response.json()
    assert sub["status"] == "accepted" and sub["visibility"] == "public"
    assert sub["builtin"] == {"name": "vtln", "params": {"warp": "power", "alpha": 0.1}}

    digest = "sha256:" + "ab" * 32
    response = client.post(
        "/v1/submissions",
        json={
            "kind": "container",
            "name": "my image",
            "container": {"image": f"ghcr.io/lab/anon:v1@{digest}"},
        },
        headers=a,
    )
    assert response.status_code == 201, response.text
    assert response.json()["container_image"] == f"ghcr.io/lab/anon:v1@{digest}"
    body = _problem(
        client.post(
            "/v1/submissions",
            json={"kind": "container", "name": "tag", "container": {"image": "lab/anon:latest"}},
            headers=a,
        ),
        422,
    )
    assert "body.container.image" in body["detail"] and "pinned by digest" in body["detail"]
    # Only the operator's registries (UNMASK_CONTAINER_REGISTRIES): the worker would pull from
    # an internal host otherwise.
    for internal in (f"10.0.0.5:5000/x@{digest}", f"localhost/x@{digest}", f"a.b/x:1@{digest}"):
        body = _problem(
            client.post(
                "/v1/submissions",
                json={"kind": "container", "name": "internal", "container": {"image": internal}},
                headers=a,
            ),
            422,
        )
        assert "registry" in body["detail"] and "not allowed" in body["detail"], internal
    body = _problem(
        client.post("/v1/submissions", json={"kind": "archive", "name": "x"}, headers=a), 422
    )
    assert "body" in body["detail"]
    listed = client.get("/v1/submissions?kind=container", headers=a).json()["items"]
    assert [s["name"] for s in listed] == ["my image"]


def _stored_protocol_id(database: Any, submission_id: int) -> int | None:
    """``submissions.protocol_id`` as stored (the source of truth, not the blob key)."""
    from sqlalchemy import text

    with database.session_scope() as session:
        value = session.execute(
            text("SELECT protocol_id FROM submissions WHERE id = :id"), {"id": submission_id}
        ).scalar_one()
        return None if value is None else int(value)


def test_streamed_archive_upload_and_size_limit(
    make_api_client: Any,
    api_world: Any,
    api_dispatcher: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Any,
    tmp_path: Path,
) -> None:
    client = make_api_client(max_archive_bytes=256 * 1024)
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    data = os.urandom(200 * 1024)
    url = f"/v1/submissions/archive?name=anon-audio&protocol_id={protocol_id}"

    def chunks(payload: bytes, size: int = 16 * 1024) -> Any:
        for start in range(0, len(payload), size):
            yield payload[start : start + size]

    response = client.post(
        url,
        content=chunks(data),  # chunked transfer: no Content-Length, the limit is enforced live
        headers={**a, "Content-Type": "application/gzip"},
    )
    assert response.status_code == 201, response.text
    sub = response.json()
    assert sub["kind"] == "archive" and sub["status"] == "validating"
    assert sub["archive_sha256"] == hashlib.sha256(data).hexdigest()
    assert sub["archive_protocol_id"] == protocol_id
    assert _stored_protocol_id(pg_database, sub["id"]) == protocol_id
    assert api_dispatcher.validations == [sub["id"]]
    before = sorted(_blob_files(tmp_path / "blobs"))
    assert len(before) == 1 and before[0].read_bytes() == data

    too_big = os.urandom(300 * 1024)
    body = _problem(client.post(url, content=chunks(too_big), headers=a), 413)
    assert "262144 bytes" in body["detail"]
    body = _problem(client.post(url, content=too_big, headers=a), 413)  # Content-Length known
    assert body["limit_bytes"] == 256 * 1024
    # Nothing half-written: no new blob, no leftover temporary file.
    assert sorted(_blob_files(tmp_path / "blobs")) == before
    assert api_dispatcher.validations == [sub["id"]]

    wrong_hash = "0" * 64
    body = _problem(client.post(f"{url}&sha256={wrong_hash}", content=data, headers=a), 422)
    assert "sha256" in body["detail"]
    assert sorted(_blob_files(tmp_path / "blobs")) == before
    _problem(client.post(url, content=b"", headers=a), 422)
    _problem(
        client.post("/v1/submissions/archive?name=x&protocol_id=999", content=data, headers=a), 404
    )

    # A job cannot run on an archive that is still being validated.
    response = client.post(
        "/v1/jobs", json={"submission_id": sub["id"], "protocol_id": protocol_id}, headers=a
    )
    assert "validating" in _problem(response, 409)["detail"]


def test_presigned_upload_on_the_local_store(
    make_api_client: Any,
    api_world: Any,
    api_dispatcher: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Any,
) -> None:
    client = make_api_client()
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    data = os.urandom(64 * 1024)
    sha = hashlib.sha256(data).hexdigest()
    start = client.post(
        "/v1/submissions/uploads",
        json={"name": "big", "protocol_id": protocol_id, "size_bytes": len(data), "sha256": sha},
        headers=a,
    )
    assert start.status_code == 201, start.text
    upload = start.json()
    assert upload["multipart"] is False and len(upload["parts"]) == 1
    part = upload["parts"][0]
    complete = f"/v1/submissions/uploads/{upload['upload_id']}/complete"
    # Completing before the upload: 409, nothing created.
    assert _problem(client.post(complete, headers=a), 409)["detail"].startswith("the archive")
    # Another team cannot complete it; a forged ticket is unknown.
    _problem(client.post(complete, headers=api_world.auth(api_world.b)), 404)
    _problem(client.post(complete.replace(upload["upload_id"], "abc.def"), headers=a), 404)
    # Tampered content is refused by the signed URL's sha256.
    bad = client.put(part["url"], content=b"x" + data[1:], headers=part["headers"])
    assert bad.status_code == 422, bad.text
    put = client.put(part["url"], content=data, headers=part["headers"])
    assert put.status_code == 200, put.text
    done = client.post(complete, headers=a)
    assert done.status_code == 201, done.text
    assert done.json()["status"] == "validating" and done.json()["archive_sha256"] == sha
    assert done.json()["archive_protocol_id"] == protocol_id
    assert _stored_protocol_id(pg_database, done.json()["id"]) == protocol_id
    assert api_dispatcher.validations == [done.json()["id"]]
    again = client.post(complete, headers=a)
    assert again.status_code == 200 and again.json()["id"] == done.json()["id"]
    assert api_dispatcher.validations == [done.json()["id"]]
    # Declared size over the presigned limit: 422 before any URL is handed out; the server's
    # document states its limit as the field's maximum.
    small = make_api_client(max_presigned_archive_bytes=1000)
    response = small.post(
        "/v1/submissions/uploads",
        json={"name": "x", "protocol_id": protocol_id, "size_bytes": 1001, "sha256": sha},
        headers=a,
    )
    assert "body.size_bytes" in _problem(response, 422)["detail"]
    document = small.get("/v1/openapi.json").json()
    field = document["components"]["schemas"]["ArchiveUploadCreate"]["properties"]["size_bytes"]
    assert field["maximum"] == 1000 and "x-deployment-rule" not in field


def test_presigned_multipart_upload_on_s3(
    make_api_client: Any,
    api_world: Any,
    api_dispatcher: Any,
    api_protocol_body: dict[str, Any],
    s3_store: Any,
) -> None:
    client = make_api_client(blob_store=s3_store, upload_part_bytes=5 * MIB)
    a = api_world.auth(api_world.a)
    protocol_id = _protocol(client, api_world, api_protocol_body)
    data = os.urandom(5 * MIB + 123_456)
    sha = hashlib.sha256(data).hexdigest()
    start = client.post(
        "/v1/submissions/uploads",
        json={"name": "s3", "protocol_id": protocol_id, "size_bytes": len(data), "sha256": sha},
        headers=a,
    )
    assert start.status_code == 201, start.text
    upload = start.json()
    assert upload["multipart"] is True and [p["size_bytes"] for p in upload["parts"]] == [
        5 * MIB,
        123_456,
    ]
    etags = []
    offset = 0
    for part in upload["parts"]:
        chunk = data[offset : offset + part["size_bytes"]]
        offset += part["size_bytes"]
        response = httpx.put(part["url"], content=chunk, headers=part["headers"], timeout=30)
        assert response.status_code == 200, response.text
        etags.append({"part_number": part["part_number"], "etag": response.headers["ETag"]})
    complete = f"/v1/submissions/uploads/{upload['upload_id']}/complete"
    _problem(client.post(complete, json={"parts": []}, headers=a), 422)
    done = client.post(complete, json={"parts": etags}, headers=a)
    assert done.status_code == 201, done.text
    assert done.json()["archive_sha256"] == sha
    assert s3_store.get_bytes(upload["key"]) == data
    assert api_dispatcher.validations == [done.json()["id"]]


def test_submission_quota_per_day(make_api_client: Any, api_world: Any, pg_database: Any) -> None:
    from sqlalchemy import update

    from services.storage.models import Submission

    client = make_api_client(quota_submissions_per_day=2)
    a = api_world.auth(api_world.a)
    body = {"kind": "builtin", "name": "p", "builtin": {"name": "pitch"}}
    for _ in range(2):
        assert client.post("/v1/submissions", json=body, headers=a).status_code == 201
    response = client.post("/v1/submissions", json=body, headers=a)
    problem = _problem(response, 429)
    assert "submissions per day" in problem["detail"] and problem["limit"] == 2
    assert int(response.headers["Retry-After"]) > 0
    # Another team has its own quota.
    assert (
        client.post("/v1/submissions", json=body, headers=api_world.auth(api_world.b)).status_code
        == 201
    )
    # Rejected submissions are not charged.
    with pg_database.session_scope() as session:
        first = (
            session.query(Submission)
            .filter(Submission.team_id == 2)
            .order_by(Submission.id)
            .first()
        )
        assert first is not None
        session.execute(
            update(Submission).where(Submission.id == first.id).values(status="pending")
        )
        session.execute(
            update(Submission).where(Submission.id == first.id).values(status="rejected")
        )
    assert client.post("/v1/submissions", json=body, headers=a).status_code == 201
