"""The embedded deployment's SQLite database under concurrent writers: WAL, a configurable busy
timeout, transactions that take the write lock when they begin (so a transaction that reads and
then writes waits its turn instead of failing with "database is locked"), and an after-commit
outbox send that tries again when the database was busy."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text

from services.platform import identity
from services.platform.outbox import DELIVER_WEBHOOK, add_message, install_senders
from services.settings import Settings
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from services.storage.models import Base, OutboxMessage

HMAC_KEY = "sqlite-embedded-test-key"


def _pragma(database: Database, name: str) -> Any:
    with database.engine.connect() as connection:
        return connection.exec_driver_sql(f"PRAGMA {name}").scalar()


@contextmanager
def held_write_lock(path: Path, hold_s: float) -> Iterator[threading.Event]:
    """Another connection (another process, as far as SQLite can tell) holds the database's write
    lock for ``hold_s`` seconds from the moment the yielded event is set."""
    taken = threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(path, isolation_level=None, timeout=30)
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("CREATE TABLE IF NOT EXISTS lock_holder (x INTEGER)")
            taken.set()
            time.sleep(hold_s)
            connection.execute("COMMIT")
        finally:
            connection.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(10), "could not take the write lock"
    try:
        yield taken
    finally:
        thread.join(30)


def test_pragmas_and_the_busy_timeout_come_from_the_settings(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'embedded.db'}"
    settings = Settings(_env_file=None, database_url=url, sqlite_busy_timeout_s=2.5)  # type: ignore[call-arg]
    database = Database.from_settings(settings)
    try:
        assert _pragma(database, "journal_mode") == "wal"
        assert _pragma(database, "busy_timeout") == 2500
        assert _pragma(database, "foreign_keys") == 1
    finally:
        database.dispose()
    default = Database(url)
    try:
        assert _pragma(default, "busy_timeout") == 30_000
    finally:
        default.dispose()


def test_transactions_that_read_then_write_wait_their_turn_and_lose_no_update(
    tmp_path: Path,
) -> None:
    database = Database(f"sqlite:///{tmp_path / 'counter.db'}")  # the default busy timeout
    with database.engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE counter (value INTEGER NOT NULL)")
        connection.exec_driver_sql("INSERT INTO counter VALUES (0)")
    errors: list[str] = []
    threads, rounds = 4, 15

    def work() -> None:
        for _ in range(rounds):
            try:
                with database.session_scope() as session:
                    value = session.execute(text("SELECT value FROM counter")).scalar_one()
                    time.sleep(0.002)  # another writer commits in between
                    session.execute(text("UPDATE counter SET value = :v"), {"v": value + 1})
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join(60)
    try:
        assert errors == []
        with database.session_scope() as session:
            assert session.execute(text("SELECT value FROM counter")).scalar_one() == (
                threads * rounds
            )
    finally:
        database.dispose()


def test_a_second_transaction_of_the_same_thread_reads_without_waiting(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'nested.db'}")
    Base.metadata.create_all(database.engine)
    try:
        with database.session_scope() as outer:
            identity.create_team(outer, "outer")  # this thread holds the write lock
            started = time.monotonic()
            with database.session_scope() as inner:
                assert inner.scalars(select(OutboxMessage.id)).all() == []
            assert time.monotonic() - started < 2.0
    finally:
        database.dispose()


def test_the_after_commit_send_tries_again_when_the_database_was_locked(tmp_path: Path) -> None:
    path = tmp_path / "outbox.db"
    database = Database(f"sqlite:///{path}", sqlite_busy_timeout_s=0.2)
    Base.metadata.create_all(database.engine)
    sent: list[int] = []
    install_senders({DELIVER_WEBHOOK: lambda payload: sent.append(int(payload["delivery_id"]))})
    holders: list[Any] = []

    def lock_after_commit(_session: Any) -> None:
        # Registered before the outbox's own hook: the lock is held when the send claims.
        holder = held_write_lock(path, hold_s=0.7)
        holder.__enter__()
        holders.append(holder)

    try:
        session = database.sessionmaker()
        event.listen(session, "after_commit", lock_after_commit)
        message_id = add_message(session, topic=DELIVER_WEBHOOK, payload={"delivery_id": 7}).id
        session.commit()
        session.close()
        for holder in holders:
            holder.__exit__(None, None, None)
        assert sent == [7]
        with database.session_scope() as check:
            message = check.get(OutboxMessage, message_id)
            assert message is not None and message.sent_at is not None
    finally:
        install_senders(None)
        database.dispose()


@pytest.fixture()
def sqlite_api(tmp_path: Path) -> Iterator[tuple[Any, Path, Database]]:
    """A TestClient of the API on a migrated SQLite file with a 2 s busy timeout."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    from services.storage.blob_local import LocalBlobStore

    path = tmp_path / "api.db"
    url = f"sqlite:///{path}"
    upgrade_database(url)
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=url,
        blob_dir=tmp_path / "blobs",
        token_hmac_key=HMAC_KEY,
        sqlite_busy_timeout_s=2.0,
    )
    database = Database.from_settings(settings)
    with database.session_scope() as session:
        identity.create_team(session, "lab")
    store = LocalBlobStore(tmp_path / "blobs", signing_key=HMAC_KEY)
    app = create_app(settings, database=database, blob_store=store, senders={})
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, path, database
    install_senders(None)
    database.dispose()


def _fresh_tokens(database: Database, count: int) -> list[str]:
    # A token never used records its first use: every request below writes after reading.
    with database.session_scope() as session:
        return [
            identity.issue_team_token(session, "lab", hmac_key=HMAC_KEY, scopes=["read"]).plaintext
            for _ in range(count)
        ]


def test_requests_under_a_held_write_lock_get_through_and_past_the_timeout_get_503(
    sqlite_api: tuple[Any, Path, Database],
) -> None:
    client, path, database = sqlite_api
    tokens = _fresh_tokens(database, 6)
    answers: list[Any] = [None] * len(tokens)

    def me(index: int) -> None:
        answers[index] = client.get("/v1/me", headers={"Authorization": f"Bearer {tokens[index]}"})

    # Held for less than the busy timeout (2 s): every request waits for it, none fails.
    with held_write_lock(path, hold_s=0.5):
        requests = [threading.Thread(target=me, args=(i,)) for i in range(len(tokens))]
        for thread in requests:
            thread.start()
    for thread in requests:
        thread.join(30)
    assert [a.status_code for a in answers] == [200] * len(tokens), [a.text for a in answers]
    # Held past the busy timeout: a 503 problem with Retry-After, which clients wait out.
    [late] = _fresh_tokens(database, 1)
    with held_write_lock(path, hold_s=3.5):
        answer = client.get("/v1/me", headers={"Authorization": f"Bearer {late}"})
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert int(answer.headers["Retry-After"]) > 0
    assert client.get("/v1/me", headers={"Authorization": f"Bearer {late}"}).status_code == 200
