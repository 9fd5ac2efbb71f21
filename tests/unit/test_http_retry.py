"""The client transport that waits out 429/503 as ``Retry-After`` asks."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from unmask_client.retry import RetryAfterTransport, retry_after_seconds


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    assert retry_after_seconds("7") == 7.0
    assert retry_after_seconds("Thu, 01 Jan 2026 12:00:30 GMT", now=now) == 30.0
    assert retry_after_seconds("Thu, 01 Jan 2026 11:00:00 GMT", now=now) == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None


def _client(answers: list[httpx.Response], waits: list[float], attempts: int = 5) -> httpx.Client:
    seen = iter(answers)
    inner = httpx.MockTransport(lambda request: next(seen))
    return httpx.Client(
        base_url="http://api.test",
        transport=RetryAfterTransport(inner, attempts=attempts, sleep=waits.append),
    )


def test_503_and_429_are_retried_after_the_wait_the_server_asks_for() -> None:
    waits: list[float] = []
    answers = [
        httpx.Response(503, headers={"Retry-After": "3"}, json={"detail": "database is locked"}),
        httpx.Response(429, headers={"Retry-After": "2"}),
        httpx.Response(200, json={"ok": True}),
    ]
    response = _client(answers, waits).post("/v1/jobs", json={"a": 1})
    assert response.status_code == 200 and response.json() == {"ok": True}
    assert waits == [3.0, 2.0]


def test_without_retry_after_the_wait_backs_off_and_the_last_answer_is_returned() -> None:
    waits: list[float] = []
    answers = [httpx.Response(503) for _ in range(3)]
    response = _client(answers, waits, attempts=3).get("/v1/jobs/1")
    assert response.status_code == 503
    assert waits == [1.0, 2.0]


def test_a_huge_retry_after_is_capped_and_other_errors_are_not_retried() -> None:
    waits: list[float] = []
    answers = [httpx.Response(503, headers={"Retry-After": "86400"}), httpx.Response(500)]
    assert _client(answers, waits).get("/x").status_code == 500
    assert waits == [60.0]


def test_connection_errors_are_retried_then_raised() -> None:
    waits: list[float] = []
    calls = 0

    def refuse(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.Client(
        base_url="http://api.test",
        transport=RetryAfterTransport(
            httpx.MockTransport(refuse), attempts=3, sleep=waits.append, retry_connect=True
        ),
    )
    with pytest.raises(httpx.ConnectError):
        client.get("/x")
    assert calls == 3 and waits == [1.0, 2.0]
    # By default an unreachable server is an error at once.
    client = httpx.Client(
        base_url="http://api.test",
        transport=RetryAfterTransport(httpx.MockTransport(refuse), sleep=waits.append),
    )
    with pytest.raises(httpx.ConnectError):
        client.get("/x")
    assert calls == 4 and waits == [1.0, 2.0]
