"""The reaper on its own queue: while every phase worker is busy with a long task, Celery beat's
sweep still runs within its interval on the reaper's worker and rescues a lost stage.

Real Redis (unique key prefix) and PostgreSQL; beat and the reaper's worker are subprocesses
(``celery -A workers.app beat`` / ``worker -Q reaper``) with the platform's environment; the
phase worker is a worker thread of this test consuming both phase queues, held by a task that
blocks until the test releases it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from services.platform.jobs import JobServices, PhaseClaim, claim_phase
from services.platform.jobs import records as job_records
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from support.configs import micro_protocol_config
from support.seeding import planned_builtin_job
from support.workers import (
    celery_app_on,
    spawn_celery,
    stop_process,
    wait_until_ready,
    worker_thread,
)
from workers.app import app
from workers.names import QUEUE_REAPER

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_URL = "redis://127.0.0.1:6379/13"
REAPER_INTERVAL_S = 1.0
STALE_AFTER_S = 2.0

_started = threading.Event()
_release = threading.Event()


@app.task(name="tests.block_phase_worker")
def _block_phase_worker() -> None:
    """A long phase: holds its worker until the test releases it (at most 120 s)."""
    _started.set()
    _release.wait(timeout=120)


@pytest.fixture()
def reaper_processes(
    migrated_postgres_url: str, pg_database: Database, tmp_path: Path
) -> Iterator[tuple[Settings, str, Path]]:
    prefix = f"unmask-reaper-{uuid.uuid4().hex[:8]}:"
    env = {
        "UNMASK_DATABASE_URL": migrated_postgres_url,
        "UNMASK_BROKER_URL": REDIS_URL,
        "UNMASK_BROKER_KEY_PREFIX": prefix,
        "UNMASK_RESULT_BACKEND": "",
        "UNMASK_CELERY_EAGER": "0",
        "UNMASK_DATA_DIR": str(tmp_path / "reaper-host"),
        "UNMASK_REAPER_INTERVAL_S": str(REAPER_INTERVAL_S),
        "UNMASK_STAGE_STALE_AFTER_S": str(STALE_AFTER_S),
        "UNMASK_NUM_THREADS": "1",
    }
    reaper_log = tmp_path / "reaper.log"
    reaper = spawn_celery(
        ["worker", "-Q", QUEUE_REAPER, "--pool", "solo", "-n", "reaper@%h", "-l", "INFO"],
        env,
        reaper_log,
    )
    beat = spawn_celery(
        ["beat", "-s", str(tmp_path / "beat-schedule"), "-l", "INFO"], env, tmp_path / "beat.log"
    )
    settings = Settings(data_dir=tmp_path / "phase-host", broker_url=REDIS_URL)
    try:
        wait_until_ready(reaper, reaper_log)
        with celery_app_on(settings, key_prefix=prefix):
            yield settings, prefix, reaper_log
    finally:
        _release.set()
        stop_process(beat)
        stop_process(reaper)


def _stage_state(database: Database, job_id: int, name: str) -> tuple[str, int]:
    with database.session_scope() as session:
        stage = next(s for s in job_records.get_job(session, job_id).stages if s.name == name)
        return stage.state, stage.attempts


def test_a_sweep_runs_within_its_interval_while_every_phase_worker_is_busy(
    reaper_processes: tuple[Settings, str, Path], pg_database: Database
) -> None:
    settings, prefix, reaper_log = reaper_processes
    _started.clear()
    _release.clear()
    with worker_thread("gpu", "cpu"):
        # Both phase queues get a long task; the one phase worker is held by the first.
        for queue in ("gpu", "cpu"):
            app.send_task("tests.block_phase_worker", queue=queue)
        assert _started.wait(timeout=60), "the phase worker did not start the long task"
        # A worker claims the job's first stage and dies (no heartbeat from then on).
        job_id = planned_builtin_job(
            pg_database, micro_protocol_config(), team_slug=f"t-{uuid.uuid4().hex[:6]}"
        )
        store = LocalBlobStore(settings.data_dir / "blobs", signing_key="test")
        lost = JobServices(pg_database, store, settings, worker_host="lost-host")
        claim = claim_phase(lost, job_id, "corpus")
        assert isinstance(claim, PhaseClaim)
        claimed_at = time.monotonic()
        while _stage_state(pg_database, job_id, "corpus")[0] == "running":
            assert time.monotonic() - claimed_at < 30, reaper_log.read_text()[-3000:]
            time.sleep(0.1)
        rescued_after_s = time.monotonic() - claimed_at
        assert _stage_state(pg_database, job_id, "corpus") == ("queued", 1)
        # The phase worker is still on its long task: the sweep did not wait for it.
        assert not _release.is_set()
        # Stale after 2 s, swept every 1 s: rescued within one interval of going stale (plus
        # the subprocesses' scheduling slack on a loaded machine).
        assert rescued_after_s < STALE_AFTER_S + REAPER_INTERVAL_S + 5.0, rescued_after_s
        assert "unmask.reap_stale_stages" in reaper_log.read_text(errors="replace")
        # Drop the re-sent phase and the second long task before the phase worker frees up.
        client = redis.Redis.from_url(REDIS_URL)
        for queue in ("gpu", "cpu"):
            client.delete(f"{prefix}{queue}")
        _release.set()
