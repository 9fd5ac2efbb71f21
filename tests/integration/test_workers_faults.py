"""PostgreSQL connections cut on the worker's side mid-phase: the job still ends in its true
terminal state (succeeded), every phase once, one result set.

A Celery worker runs in a thread of the test process (solo pool) on the real broker and
PostgreSQL; while ``train`` runs and again while ``score`` runs, every other backend of the
test database is terminated (``pg_terminate_backend``), as a database restart or a network cut
would: the worker's pooled connections, its heartbeat's and the monitor's die under them.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from services.platform import results as result_records
from services.platform.jobs import JobServices, job_stage_names, start_job
from services.platform.jobs import records as job_records
from services.platform.results.document import result_rows_from_document
from services.settings import Settings
from services.storage.blobstore import S3BlobStore
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

    def stage_state(name: str) -> str:
        with pg_database.session_scope() as session:
            return str(job_records.get_stage(session, job_id, name).state)

    def finished() -> Any:
        with pg_database.session_scope() as session:
            job = job_records.get_job(session, job_id)
            return job if job.state in ("succeeded", "failed", "cancelled") else None

    cuts = []
    try:
        with celery_app_on(settings, services), worker_thread("gpu", "cpu"):
            with pg_database.session_scope() as session:
                start_job(session, job_id=job_id)
            _wait("train to run", lambda: stage_state("train") == "running", 600)
            cuts.append(cut())
            time.sleep(1.0)  # a few heartbeats on dead connections
            cuts.append(cut())
            _wait("score to run", lambda: stage_state("score") == "running", 600)
            cuts.append(cut())
            cut_at = time.monotonic()
            job = _wait("the job to finish", finished, 600)
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
