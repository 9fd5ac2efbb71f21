"""Streamed uploads against a real uvicorn server on loopback, with raw sockets.

Slow clients must not hold a bounded shared resource: 200 uploads that sent their headers and
100 bytes of a 1 000 000-byte body stay open while the liveness probe and a job poll answer in
under 100 ms; a silent client gets 408 after ``upload_read_timeout_s``; a team has at most
``max_concurrent_uploads_per_team`` uploads in progress (429 beyond). Real PostgreSQL.
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.storage.db import Database

pytestmark = pytest.mark.integration

STALLED_UPLOADS = 200


class LiveServer:
    """A uvicorn server of ``app`` in a thread, on a free loopback port."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        from api.server import server_options

        self.app = app
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        # The deployment's server options: uploads meet the protocol production runs.
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", backlog=1024, **server_options()
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([self.sock],), daemon=True)

    def start(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def raw_upload(self, path: str, token: str, *, length: int, sent: bytes) -> socket.socket:
        """A socket that sent an upload's headers (``Content-Length: length``) and ``sent``."""
        conn = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/octet-stream\r\nContent-Length: {length}\r\n\r\n"
        )
        conn.sendall(head.encode() + sent)
        return conn


def _status_of(conn: socket.socket, timeout_s: float) -> int:
    """The status code of the response on ``conn`` (waits up to ``timeout_s``)."""
    conn.settimeout(timeout_s)
    data = b""
    while b"\r\n" not in data:
        block = conn.recv(4096)
        if not block:
            break
        data += block
    return int(data.split(b" ", 2)[1])


@pytest.fixture()
def serve(
    pg_database: Database, tmp_path: Path, api_dispatcher: Any
) -> Iterator[Callable[..., LiveServer]]:
    """Starts live servers of ``create_app`` (keyword arguments override Settings fields)."""
    from api.app import create_app
    from services.settings import Settings
    from tests.integration.conftest import API_TEST_HMAC_KEY

    servers: list[LiveServer] = []

    def start(**overrides: Any) -> LiveServer:
        fields: dict[str, Any] = {
            "database_url": pg_database.url,
            "blob_backend": "local",
            "blob_dir": tmp_path / "blobs",
            "token_hmac_key": API_TEST_HMAC_KEY,
            "broker_url": "",
            "celery_eager": False,
            "trusted_hosts": ["127.0.0.1", "localhost"],
            **overrides,
        }
        settings = Settings(_env_file=None, **fields)  # type: ignore[call-arg]
        app = create_app(settings, database=pg_database, senders=api_dispatcher.senders())
        server = LiveServer(app).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
    from services.platform.outbox import install_senders

    install_senders(None)


def _protocol_and_job(server: LiveServer, world: Any, body: dict[str, Any]) -> tuple[int, int]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        response = client.post("/v1/admin/protocols", json=body, headers=world.auth(world.admin))
        assert response.status_code == 201, response.text
        protocol_id: int = response.json()["id"]
        a = world.auth(world.a)
        sub = client.post(
            "/v1/submissions",
            json={"kind": "builtin", "name": "p", "builtin": {"name": "pitch"}},
            headers=a,
        )
        assert sub.status_code == 201, sub.text
        job = client.post(
            "/v1/jobs",
            json={"submission_id": sub.json()["id"], "protocol_id": protocol_id},
            headers=a,
        )
        assert job.status_code == 201, job.text
        return protocol_id, int(job.json()["id"])


def _wait_for_uploads(server: LiveServer, key: str, count: int, timeout_s: float = 60) -> None:
    from api.routes.archive_transfer import upload_slots

    slots = upload_slots(server.app)
    deadline = time.monotonic() + timeout_s
    while slots.active(key) < count:
        assert time.monotonic() < deadline, f"only {slots.active(key)} of {count} uploads started"
        time.sleep(0.05)


def _team_id(database: Database, slug: str) -> int:
    from services.platform import identity

    with database.session_scope() as session:
        return identity.get_team_by_slug(session, slug).id


def test_stalled_uploads_do_not_slow_liveness_or_job_polls(
    serve: Callable[..., LiveServer],
    api_world: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Database,
) -> None:
    server = serve(max_concurrent_uploads_per_team=1000, upload_read_timeout_s=120)
    protocol_id, job_id = _protocol_and_job(server, api_world, api_protocol_body)
    path = f"/v1/submissions/archive?name=slow&protocol_id={protocol_id}"
    stalled = [
        server.raw_upload(path, api_world.a, length=1_000_000, sent=b"x" * 100)
        for _ in range(STALLED_UPLOADS)
    ]
    try:
        team = _team_id(pg_database, "team-a")
        _wait_for_uploads(server, f"team:{team}", STALLED_UPLOADS)
        timings: dict[str, list[float]] = {"live": [], "job": []}
        with httpx.Client(base_url=server.url, timeout=10) as client:
            for _ in range(5):
                for name, url in (("live", "/v1/health/live"), ("job", f"/v1/jobs/{job_id}")):
                    started = time.perf_counter()
                    response = client.get(url, headers=api_world.auth(api_world.a))
                    timings[name].append(time.perf_counter() - started)
                    assert response.status_code == 200, response.text
        for name, seconds in timings.items():
            assert statistics.median(seconds) < 0.1, (name, seconds)
            # A poll held up by the stalled uploads would wait for their 120 s read timeout;
            # a first poll's cold path took 1.07 s beside another test process.
            assert max(seconds) < 5.0, (name, seconds)
        # Still open: none of them was answered or dropped.
        for conn in stalled[:5]:
            conn.setblocking(False)
            with pytest.raises(BlockingIOError):
                conn.recv(1)
    finally:
        for conn in stalled:
            conn.close()


def test_silent_upload_times_out_and_stores_nothing(
    serve: Callable[..., LiveServer],
    api_world: Any,
    api_protocol_body: dict[str, Any],
    tmp_path: Path,
) -> None:
    server = serve(upload_read_timeout_s=0.5)
    protocol_id, _ = _protocol_and_job(server, api_world, api_protocol_body)
    path = f"/v1/submissions/archive?name=slow&protocol_id={protocol_id}"
    conn = server.raw_upload(path, api_world.a, length=1_000_000, sent=b"x" * 100)
    started = time.monotonic()
    try:
        assert _status_of(conn, timeout_s=10) == 408
    finally:
        conn.close()
    assert time.monotonic() - started < 5
    blobs = tmp_path / "blobs"
    assert not blobs.exists() or not [p for p in blobs.rglob("*") if p.is_file()]


def test_concurrent_uploads_per_team_are_capped(
    serve: Callable[..., LiveServer],
    api_world: Any,
    api_protocol_body: dict[str, Any],
    pg_database: Database,
) -> None:
    server = serve(max_concurrent_uploads_per_team=2, upload_read_timeout_s=60)
    protocol_id, _ = _protocol_and_job(server, api_world, api_protocol_body)
    path = f"/v1/submissions/archive?name=slow&protocol_id={protocol_id}"
    team = _team_id(pg_database, "team-a")
    stalled = [
        server.raw_upload(path, api_world.a, length=1_000_000, sent=b"x" * 100) for _ in range(2)
    ]
    try:
        _wait_for_uploads(server, f"team:{team}", 2)
        third = server.raw_upload(path, api_world.a, length=1_000_000, sent=b"x" * 100)
        try:
            assert _status_of(third, timeout_s=10) == 429
        finally:
            third.close()
        # Another team is not affected.
        with httpx.Client(base_url=server.url, timeout=30) as client:
            other = client.post(path, content=b"y" * 1000, headers=api_world.auth(api_world.b))
            assert other.status_code == 201, other.text
    finally:
        for conn in stalled:
            conn.close()
    # Disconnected uploads give their slots back.
    from api.routes.archive_transfer import upload_slots

    deadline = time.monotonic() + 10
    while upload_slots(server.app).active(f"team:{team}"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    with httpx.Client(base_url=server.url, timeout=30) as client:
        done = client.post(path, content=b"z" * 1000, headers=api_world.auth(api_world.a))
        assert done.status_code == 201, done.text
