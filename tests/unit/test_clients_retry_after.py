"""Every client of the API in this repository waits out a busy server (503 with Retry-After, as
the embedded SQLite server answers "database is locked" past its busy timeout) and tries again:
the demo's poller, ``unmask submit``'s client and the unmask-client wrapper. And `unmask
rerun-outdated` asks again when the answer to its (idempotent) request timed out, instead of
failing although the server queued the re-runs."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from support.fake_api import Handler, job_json


def _busy_once(answer: dict[str, Any], seen: list[str]) -> Handler:
    """A server that answers 503 + Retry-After to the first request, then ``answer``."""

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        if len(seen) == 1:
            return httpx.Response(
                503,
                json={"status": 503, "detail": "database is locked; retry in 0 s"},
                headers={"Retry-After": "0", "content-type": "application/problem+json"},
            )
        return httpx.Response(200, json=answer)

    return handler


def test_the_demo_poller_waits_out_503(monkeypatch: pytest.MonkeyPatch) -> None:
    from cli import demo_platform
    from unmask_client import retry

    seen: list[str] = []
    handler = _busy_once(job_json(5, "running"), seen)
    # The demo's client opens real connections; its inner transport is the mock here.
    monkeypatch.setattr(
        retry.httpx, "HTTPTransport", lambda *_a, **_k: httpx.MockTransport(handler)
    )
    client = demo_platform.api_client("http://127.0.0.1:1", "unm_x")
    job = demo_platform.JobWatch(client, 5, None).poll()
    assert job["state"] == "running"
    assert seen == ["GET /v1/jobs/5", "GET /v1/jobs/5"]


def test_the_submit_client_waits_out_503() -> None:
    from cli.client import UnmaskClient

    seen: list[str] = []
    handler = _busy_once(job_json(6, "queued"), seen)
    with UnmaskClient("http://api.test", "unm_x", transport=httpx.MockTransport(handler)) as c:
        assert c.job(6)["state"] == "queued"
    assert seen == ["GET /v1/jobs/6", "GET /v1/jobs/6"]


def test_the_client_wrapper_waits_out_503() -> None:
    from unmask_client import Client

    seen: list[str] = []
    handler = _busy_once(job_json(7, "queued"), seen)
    with Client("http://api.test", "unm_x", transport=httpx.MockTransport(handler)) as client:
        assert client.job(7).state == "queued"
    assert seen == ["GET /v1/jobs/7", "GET /v1/jobs/7"]


PROTOCOL = {
    "id": 3, "name": "vpc", "version": 1, "description": "", "config": {},
    "content_hash": "0" * 64, "leaderboard": {"metric": "eer_percent"},
    "created_at": "2026-01-01T00:00:00Z",
}  # fmt: skip


def test_rerun_outdated_asks_again_when_its_answer_timed_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cli import client as client_module
    from cli.main import app

    posts: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json=PROTOCOL)
        posts.append(dict(request.url.params))
        if len(posts) == 1:  # the server queued the re-runs, but its answer came too late
            raise httpx.ReadTimeout("timed out", request=request)
        plan = {"current_scorer": "abc", "current_evaluator": {}, "queued": {}}
        return httpx.Response(200, json={**plan, "already_running": [11, 12]})

    real = client_module.UnmaskClient.from_env.__func__  # type: ignore[attr-defined]

    def from_env(cls: Any, environ: Any = None, **kwargs: Any) -> Any:
        return real(cls, environ, transport=httpx.MockTransport(handler), **kwargs)

    monkeypatch.setattr(client_module.UnmaskClient, "from_env", classmethod(from_env))
    monkeypatch.setenv("UNMASK_URL", "http://api.test")
    monkeypatch.setenv("UNMASK_TOKEN", "unm_x")
    result = CliRunner().invoke(app, ["rerun-outdated", "--protocol", "3", "--all"])
    assert result.exit_code == 0, result.output
    assert len(posts) == 2
    assert "submission 11: a re-run is already queued" in result.output
    assert "submission 12: a re-run is already queued" in result.output
