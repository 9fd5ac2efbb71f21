"""HEAD and OPTIONS on every route, complete Allow headers, and no echo of the request's Host
(api/middleware/http_semantics.py). Real PostgreSQL."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

pytestmark = pytest.mark.integration


def _allow(response: Any) -> set[str]:
    return {m.strip() for m in response.headers["allow"].split(",")}


def test_head_answers_every_get_route_without_a_body(make_api_client: Any, api_world: Any) -> None:
    client = make_api_client()
    for path in ("/v1/health/live", "/v1/openapi.json", "/"):
        get, head = client.get(path), client.head(path)
        assert head.status_code == get.status_code == 200, (path, head.status_code)
        assert head.content == b"" and head.headers["content-type"] == get.headers["content-type"]
    auth = api_world.auth(api_world.a)
    assert client.head("/v1/jobs", headers=auth).status_code == 200
    assert client.head("/v1/jobs").status_code == 401  # the same checks as GET


def test_options_and_405_list_every_method_of_the_path(make_api_client: Any) -> None:
    client = make_api_client()
    live = client.options("/v1/health/live")
    assert live.status_code == 204 and _allow(live) == {"GET", "HEAD", "OPTIONS"}
    jobs = client.options("/v1/jobs")
    assert _allow(jobs) == {"GET", "HEAD", "POST", "OPTIONS"}
    refused = client.delete("/v1/jobs")
    assert refused.status_code == 405 and _allow(refused) == {"GET", "HEAD", "POST", "OPTIONS"}
    blob = client.patch("/v1/blobs/a/b")
    assert blob.status_code == 405 and _allow(blob) == {"GET", "HEAD", "PUT", "OPTIONS"}


def test_the_request_host_is_never_echoed(
    make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]
) -> None:
    evil = {"Host": "evil.example"}
    # Without a public URL (hosts checked instead): a redirect is a path alone.
    client = make_api_client(public_url="", trusted_hosts=["testserver", "evil.example"])
    redirect = client.get("/v1/jobs/", headers=evil, follow_redirects=False)
    assert redirect.status_code in (307, 308)
    assert "evil.example" not in redirect.headers["location"]
    assert redirect.headers["location"].startswith("/v1/jobs")
    public = make_api_client(public_url="https://unmask.example.org")
    admin = api_world.auth(api_world.admin)
    created = public.post("/v1/admin/protocols", json=api_protocol_body, headers=admin)
    data = b"x" * 100
    start = public.post(
        "/v1/submissions/uploads",
        json={
            "name": "u",
            "protocol_id": created.json()["id"],
            "size_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        },
        headers={**api_world.auth(api_world.a), **evil},
    )
    assert start.status_code == 201, start.text
    assert start.json()["complete_url"].startswith(
        "https://unmask.example.org/v1/submissions/uploads/"
    )
    moved = public.get("/v1/jobs/", headers=evil, follow_redirects=False)
    assert moved.headers["location"].startswith("https://unmask.example.org/v1/jobs")
    strict = make_api_client(trusted_hosts=["testserver"])
    assert strict.get("/v1/health/live", headers=evil).status_code == 400
    assert strict.get("/v1/health/live").status_code == 200
