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
