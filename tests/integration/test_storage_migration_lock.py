"""Migration runs on one PostgreSQL database queue behind an advisory lock: started together (two
API replicas, two `migrate` jobs) they apply every revision exactly once and neither fails."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory

from services.storage.db import create_db_engine
from services.storage.migrate import MIGRATION_LOCK_KEY, alembic_config, upgrade_database

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _head() -> str:
    head = ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
    assert head is not None
    return head


def _revision_count() -> int:
    return len(list(ScriptDirectory.from_config(alembic_config("sqlite://")).walk_revisions()))


def _versions(url: str) -> list[str]:
    engine = create_db_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table("alembic_version"):
                return []
            rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version")
            return [row[0] for row in rows]
    finally:
        engine.dispose()


def test_an_upgrade_waits_while_another_run_holds_the_lock(
    postgres_database_factory: Callable[[], str],
) -> None:
    url = postgres_database_factory()
    engine = create_db_engine(url)
    errors: list[BaseException] = []

    def migrate() -> None:
        try:
            upgrade_database(url)
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    try:
        with engine.connect() as holder:
            holder.exec_driver_sql(f"SELECT pg_advisory_lock({MIGRATION_LOCK_KEY})")
            worker = threading.Thread(target=migrate)
            worker.start()
            worker.join(timeout=2.0)
            # Blocked on the lock: nothing applied yet.
            assert worker.is_alive()
            assert _versions(url) == []
            holder.exec_driver_sql(f"SELECT pg_advisory_unlock({MIGRATION_LOCK_KEY})")
            holder.commit()
        worker.join(timeout=120.0)
        assert not worker.is_alive() and not errors, errors
        assert _versions(url) == [_head()]
    finally:
        engine.dispose()


def test_two_processes_started_together_migrate_exactly_once(
    postgres_database_factory: Callable[[], str],
) -> None:
    """Two `alembic upgrade head` processes at once on a fresh database: both exit 0, and
    Alembic's log shows each revision applied once in total."""
    url = postgres_database_factory()
    env = {**os.environ, "UNMASK_DATABASE_URL": url, "PYTHONPATH": str(REPO)}
    alembic = [sys.executable, "-m", "alembic", "upgrade", "head"]
    out, err = subprocess.PIPE, subprocess.STDOUT
    runs = [subprocess.Popen(alembic, cwd=REPO, env=env, stdout=out, stderr=err) for _ in range(2)]
    outputs = [run.communicate(timeout=180)[0].decode() for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    applied = sum(out.count("Running upgrade") for out in outputs)
    assert applied == _revision_count(), outputs
    # One run did the work, the other found the database at head.
    assert sorted(out.count("Running upgrade") for out in outputs) == [0, _revision_count()]
    assert _versions(url) == [_head()]
