"""The embedded demo's API server answers a request uvicorn cannot parse exactly as the image's
server (``python -m api.server``) does: a 400 ``application/problem+json`` document, not uvicorn's
plain-text "Invalid HTTP request received.". Raw bytes over sockets, both servers on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.demo_platform import ApiServer, embedded_environment, free_port

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MALFORMED = [
    b"NOT A REQUEST LINE\r\n\r\n",
    b"GET /v1/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n",
    b"POST /v1/submissions/archive HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: x\r\n\r\n",
]


def _answer(port: int, request: bytes) -> tuple[str, str, dict[str, object]]:
    """Status line, content type and JSON body of the server's answer to ``request``."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):  # the server closes the connection
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return status, headers.get("content-type", ""), json.loads(body)


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the image's server exited"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the image's server did not start")


@pytest.fixture()
def demo_and_image_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[int, int]]:
    """The demo's in-process server and the image's command, on one embedded state folder."""
    from services.settings import get_settings

    demo_port, image_port = free_port(), free_port()
    env = embedded_environment(tmp_path / "platform", api_port=demo_port)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    with open(tmp_path / "image-server.log", "wb") as log:  # the child keeps its own descriptor
        image = subprocess.Popen(
            [sys.executable, "-m", "api.server", "--host", "127.0.0.1", "--port", str(image_port)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},  # this checkout, whatever is installed
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    demo = None
    try:
        demo = ApiServer(demo_port).start()
        _wait_for_port(image_port, image)
        yield demo_port, image_port
    finally:
        if demo is not None:
            demo.stop()
        image.terminate()
        image.wait(timeout=30)
        get_settings.cache_clear()


def test_the_demo_answers_a_malformed_request_as_the_image_server_does(
    demo_and_image_servers: tuple[int, int],
) -> None:
    demo_port, image_port = demo_and_image_servers
    for request in MALFORMED:
        demo = _answer(demo_port, request)
        assert demo == _answer(image_port, request), request
        status, content_type, problem = demo
        assert status.startswith("HTTP/1.1 400"), request
        assert content_type == "application/problem+json"
        assert problem["status"] == 400 and problem["type"] == "urn:unmask:problem:bad-request"
        assert str(problem["detail"]).startswith("malformed HTTP request")
