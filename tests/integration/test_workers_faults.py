"""Faults on the worker's side mid-phase: PostgreSQL connections cut, S3 gone for seconds. The
job still ends in its true terminal state (succeeded), every phase once, one result set.

A Celery worker runs in a thread of the test process (solo pool) on the real broker and
PostgreSQL; while ``train`` runs and again while ``score`` runs, every other backend of the
test database is terminated (``pg_terminate_backend``), as a database restart or a network cut
would: the worker's pooled connections, its heartbeat's and the monitor's die under them.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from sqlalchemy import create_engine, text

from services.platform import results as result_records
from services.platform.jobs import JobServices, job_stage_names, start_job
from services.platform.jobs import records as job_records
from services.platform.results.document import result_rows_from_document
from services.settings import Settings
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from support.configs import micro_protocol_config
from support.s3 import moto_s3_client
from support.seeding import planned_builtin_job
from support.workers import celery_app_on, worker_thread
from workers.errors import transient_errors

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONFIG: dict[str, Any] = micro_protocol_config(
    synthetic={"seed": 37},
    scenarios=["original", "semi-informed"],
    backends=["cosine"],
    metrics={"bootstrap_resamples": 0},
)


def _wait(what: str, condition: Callable[[], Any], timeout_s: float) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except Exception:  # the probe's own connection may be cut too: look again
            value = None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _stage_state(database: Database, job_id: int, name: str) -> str:
    with database.session_scope() as session:
        return str(job_records.get_stage(session, job_id, name).state)


def _finished(database: Database, job_id: int) -> Any:
    """The job once it is in a terminal state, else None."""
    with database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        return job if job.state in ("succeeded", "failed", "cancelled") else None


def test_postgres_connections_cut_mid_phase_the_job_still_succeeds_once(
    pg_database: Database, moto_endpoint: str, tmp_path: Path
) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "host",
        heartbeat_interval_s=0.3,
        device="cpu",
    )
    store = S3BlobStore(
        f"unmask-pgcut-{uuid.uuid4().hex[:8]}", client=moto_s3_client(moto_endpoint)
    )
    services = JobServices(
        pg_database, store, settings, worker_host="w1", transient_errors=transient_errors()
    )
    job_id = planned_builtin_job(pg_database, CONFIG, team_slug="pgcut")
    killer = create_engine(pg_database.url, poolclass=None)

    def cut() -> int:
        with killer.connect() as connection:
            killed = connection.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            ).scalar_one()
        return int(killed)

    cuts = []
    try:
        with celery_app_on(settings, services), worker_thread("gpu", "cpu"):
            with pg_database.session_scope() as session:
                start_job(session, job_id=job_id)
            _wait(
                "train to run", lambda: _stage_state(pg_database, job_id, "train") == "running", 600
            )
            cuts.append(cut())
            time.sleep(1.0)  # a few heartbeats on dead connections
            cuts.append(cut())
            _wait(
                "score to run", lambda: _stage_state(pg_database, job_id, "score") == "running", 600
            )
            cuts.append(cut())
            cut_at = time.monotonic()
            job = _wait("the job to finish", lambda: _finished(pg_database, job_id), 600)
            finished_after_s = time.monotonic() - cut_at
    finally:
        killer.dispose()
    print(f"\nbackends terminated {cuts}; job finished {finished_after_s:.1f} s after the last cut")
    assert sum(cuts) >= 1  # the cuts hit live connections
    assert job.state == "succeeded", job.error_message
    with pg_database.session_scope() as session:
        stages = job_records.get_job(session, job_id).stages
        assert [(s.name, s.state) for s in stages] == [
            (name, "succeeded") for name in job_stage_names()
        ]
        rows = result_records.list_results(session, job_id)
    identities = [(r.scenario, r.backend, r.seed, r.metric) for r in rows]
    document = json.loads(store.get_bytes(f"jobs/{job_id}/results.json"))
    assert len(identities) == len(set(identities)) == len(result_rows_from_document(document))


class CuttableProxy:
    """A loopback TCP proxy to ``target`` that the test can cut (every connection closed, new
    ones refused) and restore on the same port: an S3 outage, as the worker sees it."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        with self._lock:
            for s in self._open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._open.clear()


def test_s3_cut_mid_phase_the_job_succeeds_once_s3_is_back(
    pg_database: Database, moto_endpoint: str, tmp_path: Path
) -> None:
    """S3 goes away while ``train`` uploads its checkpoints and publishes, and comes back a few
    seconds later: the phase's transient failures are retried without using up the attempts
    that are kept for lost workers, and the job succeeds with one result set."""
    parsed = urlparse(moto_endpoint)
    proxy = CuttableProxy((parsed.hostname or "127.0.0.1", parsed.port or 80))
    proxy.start()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "host",
        heartbeat_interval_s=0.3,
        device="cpu",
    )
    store = S3BlobStore(f"unmask-s3cut-{uuid.uuid4().hex[:8]}", client=moto_s3_client(proxy.url))
    services = JobServices(
        pg_database, store, settings, worker_host="w1", transient_errors=transient_errors()
    )
    job_id = planned_builtin_job(pg_database, CONFIG, team_slug="s3cut")

    try:
        with celery_app_on(settings, services), worker_thread("gpu", "cpu"):
            with pg_database.session_scope() as session:
                start_job(session, job_id=job_id)
            _wait(
                "train to run", lambda: _stage_state(pg_database, job_id, "train") == "running", 600
            )
            time.sleep(0.5)
            proxy.cut()
            time.sleep(4.0)  # uploads and publishing fail meanwhile
            proxy.start()
            back = time.monotonic()
            job = _wait("the job to finish", lambda: _finished(pg_database, job_id), 600)
            finished_after_s = time.monotonic() - back
    finally:
        proxy.cut()
    print(f"\nS3 back -> job finished {finished_after_s:.1f} s")
    assert job.state == "succeeded", job.error_message
    with pg_database.session_scope() as session:
        stages = job_records.get_job(session, job_id).stages
        assert [(s.name, s.state) for s in stages] == [
            (name, "succeeded") for name in job_stage_names()
        ]
        # Transient retries are counted apart from the lost-worker attempt budget.
        assert all(s.attempts <= 1 for s in stages), [(s.name, s.attempts) for s in stages]
        rows = result_records.list_results(session, job_id)
    identities = [(r.scenario, r.backend, r.seed, r.metric) for r in rows]
    direct = S3BlobStore(store.bucket, client=moto_s3_client(moto_endpoint))  # the proxy is cut
    document = json.loads(direct.get_bytes(f"jobs/{job_id}/results.json"))
    assert len(identities) == len(set(identities)) == len(result_rows_from_document(document))
