"""The Celery layer on a real Redis broker: routing, time limits, retries, no retry on bad input.

A Celery worker runs in a thread of the test process (``celery.contrib.testing.worker``, solo
pool) consuming from Redis on loopback under a unique key prefix; the database is PostgreSQL and
the blob store a moto S3 server. The full pipeline through a worker process is in tests/e2e.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from services.platform.jobs import (
    JobServices,
    cancel_job,
    stage_time_limit_s,
    start_job,
    task_id_for,
)
from services.platform.jobs import records as job_records
from services.settings import Settings
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.models import OutboxMessage
from support.configs import micro_protocol_config
from support.s3 import moto_s3_client
from support.seeding import planned_builtin_job
from support.workers import celery_app_on, worker_thread
from workers import runtime
from workers.errors import transient_errors

pytestmark = pytest.mark.integration

REDIS_URL = "redis://127.0.0.1:6379/13"
CONFIG: dict[str, Any] = micro_protocol_config()


@pytest.fixture()
def broker(
    pg_database: Database, moto_endpoint: str, tmp_path: Path
) -> Iterator[tuple[Settings, str]]:
    """The Celery app pointed at Redis (unique key prefix), its outbox senders and the worker
    services installed."""
    prefix = f"unmask-test-{uuid.uuid4().hex[:8]}:"
    settings = Settings(
        data_dir=tmp_path / "data",
        broker_url=REDIS_URL,
        heartbeat_interval_s=0.5,
        task_retry_backoff_s=0.2,
        task_max_retries=2,
    )
    store = S3BlobStore(
        f"unmask-celery-{uuid.uuid4().hex[:8]}", client=moto_s3_client(moto_endpoint)
    )
    services = JobServices(
        pg_database, store, settings, worker_host="celery-t", transient_errors=transient_errors()
    )
    with celery_app_on(settings, services, key_prefix=prefix):
        yield settings, prefix


def _job(database: Database, builtin: str = "pitch") -> int:
    return planned_builtin_job(
        database,
        CONFIG,
        team_slug=f"t-{uuid.uuid4().hex[:8]}",
        submission_name="sub",
        builtin=builtin,
    )


def _start(database: Database, job_id: int) -> None:
    """Queue the job's first phase; its task is published when the transaction commits."""
    with database.session_scope() as session:
        start_job(session, job_id=job_id)


def _unsent(database: Database) -> list[str]:
    with database.session_scope() as session:
        return [
            m.topic for m in session.query(OutboxMessage).filter(OutboxMessage.sent_at.is_(None))
        ]


def _wait_for(
    database: Database, job_id: int, done: Callable[[Any], bool], timeout_s: float
) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with database.session_scope() as session:
            job = job_records.get_job(session, job_id)
            if done(job):
                return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not reach the expected state in {timeout_s} s")


def test_phase_task_goes_to_its_queue_with_its_time_limits(
    broker: tuple[Settings, str], pg_database: Database
) -> None:
    settings, prefix = broker
    job_id = _job(pg_database)
    _start(pg_database, job_id)  # no worker runs: the message stays in Redis
    client = redis.Redis.from_url(REDIS_URL)
    messages = [json.loads(m) for m in client.lrange(f"{prefix}gpu", 0, -1)]
    assert client.llen(f"{prefix}cpu") == 0
    assert len(messages) == 1
    headers = messages[0]["headers"]
    assert headers["task"] == "unmask.run_phase"
    assert headers["id"] == task_id_for(job_id, "corpus")
    soft = stage_time_limit_s(settings, "corpus")
    assert headers["timelimit"] == [soft + settings.stage_hard_limit_margin_s, soft]
    with pg_database.session_scope() as session:
        assert (
            job_records.get_stage(session, job_id, "corpus").heartbeat_at is not None
        )  # "sent at"
    # Cancelling cancels the stages and, after the commit, revokes the job's tasks.
    with pg_database.session_scope() as session:
        cancel_job(session, job=job_records.get_job(session, job_id))
    with pg_database.session_scope() as session:
        assert {s.state for s in job_records.get_job(session, job_id).stages} == {"cancelled"}
    assert _unsent(pg_database) == []  # the phase task and the revocation both went out


def test_bad_input_fails_the_job_once_without_retry(
    broker: tuple[Settings, str], pg_database: Database
) -> None:
    job_id = _job(pg_database, builtin="no-such-anonymizer")
    with worker_thread("gpu", "cpu"):
        _start(pg_database, job_id)
        job = _wait_for(pg_database, job_id, lambda j: j.state == "failed", 120)
    assert "no-such-anonymizer" in (job.error_message or "")
    with pg_database.session_scope() as session:
        stages = {s.name: s for s in job_records.get_job(session, job_id).stages}
    assert stages["corpus"].state == "succeeded" and stages["corpus"].worker_host == "celery-t"
    assert stages["anonymize"].state == "failed" and stages["anonymize"].attempts == 1
    assert stages["train"].state == "cancelled"


def test_transient_errors_are_retried_with_backoff_then_fail_the_job(
    broker: tuple[Settings, str], pg_database: Database
) -> None:
    settings, _ = broker
    services = runtime.get_services()
    dead = moto_s3_client("http://127.0.0.1:9", retries={"max_attempts": 1}, connect_timeout=1)
    services.store = S3BlobStore("dead", client=dead, create_bucket=False)
    job_id = _job(pg_database)
    started = time.monotonic()
    with worker_thread("gpu", "cpu"):
        _start(pg_database, job_id)
        job = _wait_for(pg_database, job_id, lambda j: j.state == "failed", 60)
    elapsed = time.monotonic() - started
    assert f"gave up after {settings.task_max_retries} retries" in (job.error_message or "")
    with pg_database.session_scope() as session:
        corpus = job_records.get_stage(session, job_id, "corpus")
    # First run + 2 retries (the task's retry counter; backoff 0.2 s then 0.4 s between them);
    # none of them is a lost worker, so the stage's attempt counter stays at zero.
    assert corpus.attempts == 0 and corpus.state == "failed"
    assert elapsed >= 0.6


def test_eager_mode_runs_the_phases_in_the_calling_process(
    sqlite_migrated_database: Database, tmp_path: Path
) -> None:
    """Embedded/test mode: UNMASK_CELERY_EAGER runs each task inline, SQLite + a local folder."""
    from services.storage.blob_local import LocalBlobStore

    settings = Settings(data_dir=tmp_path / "data", celery_eager=True)
    store = LocalBlobStore(tmp_path / "blobs", signing_key="k")
    with celery_app_on(settings, JobServices(sqlite_migrated_database, store, settings)):
        job_id = _job(sqlite_migrated_database, builtin="no-such-anonymizer")
        _start(sqlite_migrated_database, job_id)  # returns once the inline tasks are done
    with sqlite_migrated_database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        states = [s.state for s in job.stages]
    assert job.state == "failed" and "no-such-anonymizer" in (job.error_message or "")
    assert states[:2] == ["succeeded", "failed"]
    assert _unsent(sqlite_migrated_database) == []
    assert store.exists(
        next(iter(repo_stage_keys(sqlite_migrated_database, job_id, "corpus").values()))
    )


def repo_stage_keys(database: Database, job_id: int, name: str) -> dict[str, str]:
    with database.session_scope() as session:
        return dict(job_records.get_stage(session, job_id, name).artifact_keys)
