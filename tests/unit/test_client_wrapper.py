"""The unmask-client wrapper: typed answers or UnmaskError, pages followed, stalled jobs (not
slow ones) given up. Against an httpx mock of the API (the live API: tests/integration/
test_client_submit.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from support.fake_api import job_json
from unmask_client import Client, UnmaskError


def _client(handler: Any) -> Client:
    return Client("http://api.test", "unm_x", transport=httpx.MockTransport(handler))


def test_a_problem_is_raised_with_its_status_and_detail() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            404,
            json={
                "type": "about:blank",
                "title": "Not Found",
                "status": 404,
                "detail": "no job 9",
                "instance": "/v1/jobs/9",
            },
            headers={"content-type": "application/problem+json"},
        )

    with pytest.raises(UnmaskError, match="no job 9") as caught:
        _client(handler).job(9)
    assert caught.value.status == 404 and caught.value.detail == "no job 9"


def test_jobs_are_paged_until_the_last_cursor() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        if cursor is None:
            return httpx.Response(
                200, json={"items": [job_json(3, "succeeded")], "next_cursor": "3"}
            )
        return httpx.Response(200, json={"items": [job_json(2, "failed")], "next_cursor": None})

    assert [j.id for j in _client(handler).iter_jobs(page_size=1)] == [3, 2]


def test_wait_for_job_follows_a_slow_job_and_gives_up_on_a_stalled_one() -> None:
    beats = iter([job_json(1, "running", heartbeat=f"2026-01-01T00:0{i}:00Z") for i in range(5)])
    done = job_json(1, "succeeded")
    now = [0.0]

    def slow(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=next(beats, done))

    def tick(seconds: float) -> None:
        now[0] += 600.0  # 10 minutes between polls, each with a new heartbeat

    job = _client(slow).wait_for_job(1, stall_timeout_s=900, clock=lambda: now[0], sleep=tick)
    assert str(job.state) == "succeeded"

    def stalled(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=job_json(1, "running", heartbeat="2026-01-01T00:00:00Z"))

    now[0] = 0.0
    with pytest.raises(UnmaskError, match="job 1 stalled"):
        _client(stalled).wait_for_job(1, stall_timeout_s=900, clock=lambda: now[0], sleep=tick)


def test_the_client_package_imports_only_its_own_dependencies() -> None:
    """unmask_client (wrapper and generated code) imports the standard library, httpx, attrs,
    python-dateutil and itself: what the unmask-client distribution declares."""
    import ast
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "unmask_client"
    allowed = {"unmask_client", "httpx", "attr", "attrs", "dateutil", *sys.stdlib_module_names}
    found: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    assert found and found <= allowed, found - allowed
