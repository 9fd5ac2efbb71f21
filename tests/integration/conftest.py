"""Fixtures for tests against real services on loopback: PostgreSQL, an S3 server (moto), blob
stores.

PostgreSQL: one uniquely named database per test session (created through psycopg as user
``postgres`` on 127.0.0.1, migrated to head, dropped at the end); each test gets it emptied.
Migration tests create their own databases with ``postgres_database_factory``.
S3: moto's threaded server on a free loopback port, talked to over HTTP with boto3; each test gets
its own bucket.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from services.storage.blob_interface import BlobStore
from services.storage.blob_local import LocalBlobStore
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.local_http import LocalBlobServer
from services.storage.migrate import upgrade_database
from services.storage.models import Base
from support.s3 import moto_s3_client

POSTGRES_HOST = os.environ.get("UNMASK_TEST_PG_HOST", "127.0.0.1")
POSTGRES_PORT = int(os.environ.get("UNMASK_TEST_PG_PORT", "5432"))
POSTGRES_USER = os.environ.get("UNMASK_TEST_PG_USER", "postgres")
# Small multipart settings so a ~11 MiB file takes the multipart path (S3's minimum part: 5 MiB).
TEST_MULTIPART_THRESHOLD = 5 * 1024 * 1024
TEST_MULTIPART_CHUNKSIZE = 5 * 1024 * 1024


def _admin_connection() -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(
            host=POSTGRES_HOST,
            port=POSTGRES_PORT,
            user=POSTGRES_USER,
            dbname="postgres",
            autocommit=True,
            connect_timeout=5,
        )
    except psycopg.OperationalError as exc:
        raise RuntimeError(
            f"PostgreSQL does not answer on {POSTGRES_HOST}:{POSTGRES_PORT} as {POSTGRES_USER}"
            f" (run `make services`): {exc}"
        ) from exc


def postgres_url(dbname: str) -> str:
    """SQLAlchemy URL (psycopg 3) of database ``dbname`` on the test server."""
    return f"postgresql+psycopg://{POSTGRES_USER}@{POSTGRES_HOST}:{POSTGRES_PORT}/{dbname}"


@pytest.fixture(scope="session")
def postgres_database_factory() -> Iterator[Callable[[], str]]:
    """Creates uniquely named empty databases (returns their URLs); drops them all at the end."""
    created: list[str] = []

    def create() -> str:
        name = f"unmask_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
        with _admin_connection() as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return postgres_url(name)

    yield create
    with _admin_connection() as conn:
        for name in created:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(scope="session")
def migrated_postgres_url(postgres_database_factory: Callable[[], str]) -> str:
    """The session's PostgreSQL database, migrated to head."""
    url = postgres_database_factory()
    upgrade_database(url)
    return url


@pytest.fixture()
def pg_database(migrated_postgres_url: str) -> Iterator[Database]:
    """A :class:`Database` on the session's PostgreSQL database, emptied after the test."""
    database = Database(migrated_postgres_url)
    yield database
    tables = ", ".join(f'"{table.name}"' for table in Base.metadata.sorted_tables)
    with database.engine.begin() as conn:
        conn.exec_driver_sql(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    database.dispose()


@pytest.fixture()
def sqlite_migrated_database(tmp_path: Path) -> Iterator[Database]:
    """A :class:`Database` on a fresh SQLite file, built by the Alembic migrations."""
    url = f"sqlite:///{tmp_path / 'unmask.db'}"
    upgrade_database(url)
    database = Database(url)
    yield database
    database.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def any_database(request: pytest.FixtureRequest) -> Database:
    """The same test on a migrated SQLite file and on the session's PostgreSQL database."""
    name = "sqlite_migrated_database" if request.param == "sqlite" else "pg_database"
    database: Database = request.getfixturevalue(name)
    return database


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """HTTP endpoint of a moto S3 server on a free loopback port."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture()
def s3_store(moto_endpoint: str) -> S3BlobStore:
    """An :class:`S3BlobStore` on a fresh bucket (created by the store) with small multipart."""
    return S3BlobStore(
        f"unmask-test-{uuid.uuid4().hex[:12]}",
        client=moto_s3_client(moto_endpoint),
        multipart_threshold=TEST_MULTIPART_THRESHOLD,
        multipart_chunksize=TEST_MULTIPART_CHUNKSIZE,
        presign_expiry_s=60,
    )


@pytest.fixture()
def local_store(tmp_path: Path) -> Iterator[LocalBlobStore]:
    """A :class:`LocalBlobStore` whose signed URLs are served over HTTP on loopback."""
    store = LocalBlobStore(tmp_path / "blobs", signing_key="test-signing-key", presign_expiry_s=60)
    server = LocalBlobServer(store).start()
    yield store
    server.stop()


@pytest.fixture(params=["local", "s3"])
def blob_store(request: pytest.FixtureRequest) -> BlobStore:
    """Each blob-store test runs on both back-ends."""
    store: BlobStore = request.getfixturevalue(f"{request.param}_store")
    return store


# --- HTTP gateway (api/) fixtures ---------------------------------------------------------------


class RecordingDispatcher:
    """Stands in for the workers in API tests: its outbox senders record what would have been
    queued (``fail_enqueue``: the broker refuses phase tasks)."""

    def __init__(self) -> None:
        self.enqueued: list[int] = []
        self.cancelled: list[int] = []
        self.validations: list[int] = []
        self.deliveries: list[int] = []
        self.asr_trainings: list[int] = []
        self.fail_enqueue = False

    def senders(self) -> dict[str, Any]:
        """Topic -> sender, for ``create_app(senders=...)``."""
        from services.platform.outbox import (
            DELIVER_WEBHOOK,
            REVOKE_JOB,
            RUN_PHASE,
            TRAIN_PROTOCOL_ASR,
            VALIDATE_ARCHIVE,
        )

        return {
            RUN_PHASE: self._run_phase,
            REVOKE_JOB: lambda payload: self.cancelled.append(int(payload["job_id"])),
            VALIDATE_ARCHIVE: lambda p: self.validations.append(int(p["submission_id"])),
            DELIVER_WEBHOOK: lambda p: self.deliveries.append(int(p["delivery_id"])),
            TRAIN_PROTOCOL_ASR: lambda p: self.asr_trainings.append(int(p["protocol_id"])),
        }

    def _run_phase(self, payload: Any) -> None:
        if self.fail_enqueue:
            raise ConnectionError("broker unreachable (test)")
        self.enqueued.append(int(payload["job_id"]))


API_TEST_HMAC_KEY = "api-test-hmac-key"


@pytest.fixture()
def api_dispatcher() -> RecordingDispatcher:
    """A fresh recording dispatcher."""
    return RecordingDispatcher()


@pytest.fixture()
def make_api_client(
    pg_database: Database, tmp_path: Path, api_dispatcher: RecordingDispatcher
) -> Iterator[Callable[..., Any]]:
    """Builds TestClients of ``create_app`` on the session's PostgreSQL database and a local blob
    folder (signed URLs served by the API itself); keyword arguments override Settings fields,
    ``blob_store=`` replaces the store."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from services.settings import Settings

    clients: list[Any] = []

    def make(blob_store: BlobStore | None = None, **overrides: Any) -> Any:
        fields: dict[str, Any] = {
            "database_url": pg_database.url,
            "blob_backend": "local",
            "blob_dir": tmp_path / "blobs",
            "blob_public_url": "http://testserver/v1/blobs",
            # A server database: links start with the public URL (the API refuses to start
            # with neither a public URL nor a trusted-host list).
            "public_url": "http://testserver",
            "token_hmac_key": API_TEST_HMAC_KEY,
            "broker_url": "",
            "celery_eager": False,
        }
        fields.update(overrides)
        settings = Settings(_env_file=None, **fields)  # type: ignore[call-arg]
        app = create_app(
            settings,
            database=pg_database,
            blob_store=blob_store,
            senders=api_dispatcher.senders(),
        )
        client = TestClient(app, raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)
    from services.platform.outbox import install_senders

    install_senders(None)  # the recording senders end with the test


class ApiWorld:
    """Two teams (a, b) and an admin, with tokens, created straight in the database."""

    def __init__(self, database: Database) -> None:
        from services.platform import identity

        self.database = database
        with database.session_scope() as session:
            for slug in ("ops", "team-a", "team-b"):
                identity.create_team(session, slug)
        self.admin = self.token("ops", ["admin"])
        self.a = self.token("team-a", ["submit", "read"])
        self.a_read = self.token("team-a", ["read"])
        self.b = self.token("team-b", ["submit", "read"])

    def token(self, team: str, scopes: list[str], expires_in_s: float | None = None) -> str:
        """A new token's plaintext."""
        from services.platform import identity

        with self.database.session_scope() as session:
            issued = identity.issue_team_token(
                session,
                team,
                hmac_key=API_TEST_HMAC_KEY,
                scopes=scopes,
                expires_in_s=expires_in_s,
            )
            return issued.plaintext

    @staticmethod
    def auth(token: str) -> dict[str, str]:
        """The Authorization header for ``token``."""
        return {"Authorization": f"Bearer {token}"}


# A small protocol on the synthetic corpus (the API never runs it; workers are faked).
API_TEST_PROTOCOL: dict[str, Any] = {
    "name": "synthetic-small",
    "description": "API tests",
    "config": {
        # Role sizes that fit 12 speakers of 6 utterances (the defaults need 48 x 16).
        "synthetic": {
            "n_speakers": 12,
            "utts_per_speaker": 6,
            "n_attacker_train_speakers": 6,
            "n_eval_speakers": 4,
            "n_target_speakers": 2,
            "enrollments_per_speaker": 3,
            "trials_per_speaker": 3,
        },
        "scenarios": ["ignorant", "semi-informed"],
        "backends": ["cosine"],
    },
    "leaderboard": {"metric": "eer_percent"},
}


@pytest.fixture()
def api_world(pg_database: Database) -> ApiWorld:
    """Teams and tokens for API tests."""
    return ApiWorld(pg_database)


@pytest.fixture()
def api_protocol_body() -> dict[str, Any]:
    """Body of ``POST /v1/admin/protocols`` for a small synthetic protocol."""
    import copy

    return copy.deepcopy(API_TEST_PROTOCOL)
