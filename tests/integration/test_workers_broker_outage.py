"""A broker outage at a phase boundary: the job finishes within seconds once the broker is back,
every phase run once, one result set.

A private ``redis-server`` (free loopback port, no persistence) is the broker; a Celery worker
runs in a thread of the test process (solo pool) and the outbox relay in another (what Celery
beat runs). The broker is killed while the ``train`` phase runs, so that the end of ``train``
cannot send the ``embed`` task; it is started again a few seconds later. Before the outbox, the
``embed`` task was re-sent only by the reaper after ``stage_requeue_after_s`` (1 h).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from services.platform import results as result_records
from services.platform.jobs import JobServices, job_stage_names, start_job
from services.platform.jobs import records as job_records
from services.platform.outbox import RUN_PHASE
from services.platform.results.document import result_rows_from_document
from services.settings import Settings
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.models import OutboxMessage
from services.storage.types import utc_now
from support.configs import micro_protocol_config
from support.s3 import moto_s3_client
from support.seeding import planned_builtin_job
from support.workers import celery_app_on, worker_thread
from workers.errors import transient_errors
from workers.relay import OutboxRelay

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RESEND_AFTER_S = 1.0
CONFIG: dict[str, Any] = micro_protocol_config(
    synthetic={"seed": 31},
    scenarios=["original", "semi-informed"],
    backends=["cosine"],
    metrics={"bootstrap_resamples": 0},
)


class RedisServer:
    """A private redis-server on a loopback port, without persistence, that we stop and start."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port: int = sock.getsockname()[1]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture()
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()


def _wait(what: str, condition: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def test_broker_outage_at_a_phase_boundary_delays_the_job_by_seconds_exactly_once(
    pg_database: Database, moto_endpoint: str, tmp_path: Path, private_redis: RedisServer
) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "host",
        broker_url=private_redis.url,
        heartbeat_interval_s=0.5,
        outbox_resend_after_s=RESEND_AFTER_S,
        device="cpu",
    )
    store = S3BlobStore(
        f"unmask-outage-{uuid.uuid4().hex[:8]}", client=moto_s3_client(moto_endpoint)
    )
    services = JobServices(
        pg_database, store, settings, worker_host="w1", transient_errors=transient_errors()
    )
    relay = OutboxRelay(
        pg_database.engine, interval_s=RESEND_AFTER_S / 2, retry_after_s=RESEND_AFTER_S
    )
    job_id = planned_builtin_job(pg_database, CONFIG, team_slug="outage")

    def stage(name: str) -> Any:
        with pg_database.session_scope() as session:
            return job_records.get_stage(session, job_id, name)

    def embed_messages() -> list[OutboxMessage]:
        with pg_database.session_scope() as session:
            return [
                m
                for m in session.query(OutboxMessage).filter(OutboxMessage.topic == RUN_PHASE)
                if m.payload == {"job_id": job_id, "phase": "embed"}
            ]

    with celery_app_on(settings, services):
        try:
            relay.start()
            with worker_thread("gpu", "cpu"):
                with pg_database.session_scope() as session:
                    start_job(session, job_id=job_id)
                _wait("train to run", lambda: stage("train").state == "running", 600)
                private_redis.kill()  # the broker goes down while train runs
                _wait("train to finish", lambda: stage("train").state == "succeeded", 600)
                # The boundary passed with the broker down: embed is queued, its message unsent.
                (message,) = _wait("the failed send", lambda: embed_messages(), 30)
                _wait("a send attempt", lambda: embed_messages()[0].attempts >= 1, 30)
                time.sleep(3.0)  # the relay keeps trying; nothing moves while the broker is down
                (message,) = embed_messages()
                assert message.sent_at is None and message.last_error
                assert stage("embed").state == "queued"
                private_redis.start()  # same port, empty: the message was never accepted
                back_at = utc_now()
                back = time.monotonic()
                _wait("embed's message sent", lambda: embed_messages()[0].sent_at is not None, 60)
                sent_after_s = time.monotonic() - back
                _wait("embed to start", lambda: stage("embed").started_at is not None, 120)
                embed_started_after_s = (stage("embed").started_at - back_at).total_seconds()
                job = _wait(
                    "the job to finish",
                    lambda: (j := _job(pg_database, job_id)).state in ("succeeded", "failed") and j,
                    900,
                )
                finished_after_s = time.monotonic() - back
        finally:
            relay.stop()
    print(
        f"\nbroker back -> embed message sent {sent_after_s:.1f} s, embed started "
        f"{embed_started_after_s:.1f} s, job finished {finished_after_s:.1f} s "
        f"(resend after {RESEND_AFTER_S} s; relay every {RESEND_AFTER_S / 2} s)"
    )
    assert job.state == "succeeded", job.error_message
    assert sent_after_s <= 2 * RESEND_AFTER_S + 2.0  # the relay's delay, not the reaper's hour
    assert embed_started_after_s <= 60.0  # plus the worker's own reconnect backoff
    # Exactly once: every phase ran once, one set of results, every message sent once.
    with pg_database.session_scope() as session:
        stages = job_records.get_job(session, job_id).stages
        assert [(s.name, s.state, s.attempts) for s in stages] == [
            (name, "succeeded", 1) for name in job_stage_names()
        ]
        rows = result_records.list_results(session, job_id)
        messages = session.query(OutboxMessage).filter(OutboxMessage.topic == RUN_PHASE).all()
    identities = [(r.scenario, r.backend, r.seed, r.metric) for r in rows]
    document = json.loads(store.get_bytes(f"jobs/{job_id}/results.json"))
    assert len(identities) == len(set(identities)) == len(result_rows_from_document(document))
    phases = sorted(m.payload["phase"] for m in messages)
    assert phases == sorted(job_stage_names())  # one message per phase, none re-queued
    assert all(m.sent_at is not None for m in messages)


def _job(database: Database, job_id: int) -> Any:
    with database.session_scope() as session:
        return job_records.get_job(session, job_id)
