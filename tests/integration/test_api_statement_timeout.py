"""A database that accepts a request's statements but does not answer them (a lock held by another
connection, a stuck server) costs the API seconds, not minutes: the API's connections carry a
statement timeout (``UNMASK_DATABASE_STATEMENT_TIMEOUT_S``) and the request is answered 503 with
Retry-After. Workers, the CLI and migrations have no such limit. Real PostgreSQL."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from services.settings import Settings
from services.storage.db import Database

pytestmark = pytest.mark.integration


def _settings(database_url: str, tmp_path: Path, **overrides: Any) -> Settings:
    from tests.integration.conftest import API_TEST_HMAC_KEY

    fields: dict[str, Any] = {
        "database_url": database_url,
        "blob_backend": "local",
        "blob_dir": tmp_path / "blobs",
        "public_url": "http://testserver",
        "token_hmac_key": API_TEST_HMAC_KEY,
        "broker_url": "",
        "celery_eager": False,
        **overrides,
    }
    return Settings(_env_file=None, **fields)  # type: ignore[call-arg]


def _libpq_url(database: Database) -> str:
    return make_url(database.url).set(drivername="postgresql").render_as_string(False)


def test_a_statement_waiting_on_a_lock_is_503_within_the_statement_timeout(
    pg_database: Database, api_world: Any, api_dispatcher: Any, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app

    settings = _settings(pg_database.url, tmp_path, database_statement_timeout_s=1.0)
    # No database passed in: the app builds its own from the settings, as a deployment does.
    app = create_app(settings, senders=api_dispatcher.senders())
    headers = api_world.auth(api_world.a)
    holder = psycopg.connect(_libpq_url(pg_database), connect_timeout=5)
    # Without a statement timeout the request waits for the lock: release it after 20 s so
    # that such a run fails on the assertions below instead of hanging.
    release = threading.Timer(20.0, holder.rollback)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            assert client.get("/v1/jobs", headers=headers).status_code == 200
            holder.execute("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")  # held: no commit
            release.start()
            started = time.monotonic()
            response = client.get("/v1/jobs", headers=headers)
            elapsed = time.monotonic() - started
            assert response.status_code == 503, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.headers["retry-after"] == "5"
            assert "did not answer in time" in response.json()["detail"]
            assert elapsed < 8, f"503 after {elapsed:.1f} s"
            holder.rollback()  # the lock is gone: the same request is served again
            assert client.get("/v1/jobs", headers=headers).status_code == 200
    finally:
        release.cancel()
        holder.rollback()
        holder.close()


def test_only_the_api_gets_the_statement_timeout(
    pg_database: Database, api_dispatcher: Any, tmp_path: Path
) -> None:
    from api.app import create_app

    settings = _settings(pg_database.url, tmp_path, database_statement_timeout_s=2.5)
    app = create_app(settings, senders=api_dispatcher.senders())
    api_database = app.state.context.database
    workers_database = Database.from_settings(settings)  # workers, beat, the CLI
    try:
        with api_database.session_scope() as session:
            assert session.scalar(text("SHOW statement_timeout")) == "2500ms"
        with workers_database.session_scope() as session:
            assert session.scalar(text("SHOW statement_timeout")) == "0"
    finally:
        api_database.dispose()
        workers_database.dispose()


def test_the_statement_timeout_keeps_options_of_the_url(pg_database: Database) -> None:
    url = f"{pg_database.url}?options=-c%20application_name%3Dunmask-test"
    database = Database(url, statement_timeout_s=0.5)
    try:
        with database.session_scope() as session:
            assert session.scalar(text("SHOW statement_timeout")) == "500ms"
            assert session.scalar(text("SHOW application_name")) == "unmask-test"
    finally:
        database.dispose()


def test_a_statement_timeout_under_a_millisecond_is_still_a_limit(pg_database: Database) -> None:
    """0 means no limit to PostgreSQL: a positive limit never rounds down to it. (Checked on
    the connection options: a session at 1 ms cannot even finish its own setup queries.)"""
    from services.storage.db import _postgres_options

    assert _postgres_options(pg_database.url, 0.0004).endswith("-c statement_timeout=1")
    assert _postgres_options(pg_database.url, 0.0016).endswith("-c statement_timeout=2")
