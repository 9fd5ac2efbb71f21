"""Half-sent request headers are timed out (api/middleware/header_timeout.py under uvicorn); a
complete request on the same protocol is served as usual."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from api.middleware.header_timeout import HeaderTimeoutH11Protocol

pytestmark = pytest.mark.integration


class _QuickTimeout(HeaderTimeoutH11Protocol):
    header_timeout_s = 1.0


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture()
def server() -> Any:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(_app, http=_QuickTimeout, log_level="warning", lifespan="off")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, args=([sock],), daemon=True)
    thread.start()
    while not instance.started:
        time.sleep(0.05)
    yield sock.getsockname()[1]
    instance.should_exit = True
    thread.join(timeout=10)


def test_stalled_headers_are_closed_and_whole_requests_served(server: int) -> None:
    stalled = socket.create_connection(("127.0.0.1", server), timeout=10)
    stalled.sendall(b"GET /v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    started = time.monotonic()
    assert stalled.recv(4096) == b""  # closed by the server
    assert 0.8 < time.monotonic() - started < 5
    whole = socket.create_connection(("127.0.0.1", server), timeout=10)
    whole.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert whole.recv(4096).startswith(b"HTTP/1.1 200")
    time.sleep(1.5)  # idle past the header timeout on a kept-alive connection: closed
    try:
        whole.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert whole.recv(4096) == b""
    except ConnectionError:
        pass  # reset: closed all the same


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"POST /v1/submissions/archive HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: null\r\n\r\n",
        b"GET /v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
        b"NOT A REQUEST LINE\r\n\r\n",
    ],
)
def test_a_request_the_server_cannot_parse_gets_a_problem_document(
    server: int, request_bytes: bytes
) -> None:
    """Refused by the HTTP parser before the app (here an invalid Content-Length, a header
    without a colon, no request line): a 400 problem document like every other error, the
    connection closed."""
    import json

    with socket.create_connection(("127.0.0.1", server), timeout=10) as conn:
        conn.sendall(request_bytes)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith("HTTP/1.1 400")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert headers["content-type"] == "application/problem+json"
    problem = json.loads(body)
    assert problem["status"] == 400 and problem["type"] == "urn:unmask:problem:bad-request"
    assert problem["detail"].startswith("malformed HTTP request")
