"""The outbox (services/platform/outbox/) on migrated SQLite and PostgreSQL: sent after commit,
never for a rolled-back transaction, marked sent only after the sender returned, a failed send
retried by the relay after ``retry_after_s``, one claim per message."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from services.platform.outbox import (
    DELIVER_WEBHOOK,
    RUN_PHASE,
    add_message,
    install_senders,
    prune_sent,
    relay_pass,
    send_messages,
    withdraw_unsent,
)
from services.platform.outbox.service import _claim
from services.storage.db import Database
from services.storage.models import OutboxMessage
from services.storage.types import utc_now

pytestmark = pytest.mark.integration


class Broker:
    """A sender that records payloads, can be down, and looks at the row while sending."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.received: list[dict[str, Any]] = []
        self.down = False
        self.sent_at_during_send: list[dt.datetime | None] = []

    def __call__(self, payload: Mapping[str, Any]) -> None:
        with self.database.session_scope() as session:
            row = session.query(OutboxMessage).order_by(OutboxMessage.id.desc()).first()
            self.sent_at_during_send.append(row.sent_at if row is not None else None)
        if self.down:
            raise ConnectionError("broker down (test)")
        self.received.append(dict(payload))


@pytest.fixture()
def broker(any_database: Database) -> Iterator[Broker]:
    fake = Broker(any_database)
    install_senders({RUN_PHASE: fake}, retry_after_s=0.5)
    yield fake
    install_senders(None)


def _rows(database: Database) -> list[OutboxMessage]:
    with database.session_scope() as session:
        return list(session.query(OutboxMessage).order_by(OutboxMessage.id))


def test_a_message_is_sent_after_commit_and_marked_only_after_the_sender_returned(
    any_database: Database, broker: Broker
) -> None:
    with any_database.session_scope() as session:
        add_message(session, topic=RUN_PHASE, payload={"job_id": 1, "phase": "corpus"})
        assert broker.received == []  # not before the commit
    assert broker.received == [{"job_id": 1, "phase": "corpus"}]
    assert broker.sent_at_during_send == [None]  # the sender ran while the row was unsent
    (row,) = _rows(any_database)
    assert row.sent_at is not None and row.attempts == 1 and row.claimed_at is None
    # Sent messages are not sent again; they are pruned once old enough.
    assert relay_pass(any_database.engine, retry_after_s=0.5).sent == []
    assert len(broker.received) == 1
    assert prune_sent(any_database.engine) == 0
    assert prune_sent(any_database.engine, older_than_s=0.0) == 1 and _rows(any_database) == []


def test_a_rolled_back_message_is_never_sent(any_database: Database, broker: Broker) -> None:
    with pytest.raises(RuntimeError), any_database.session_scope() as session:
        add_message(session, topic=RUN_PHASE, payload={"job_id": 2, "phase": "corpus"})
        raise RuntimeError("the change fails")
    assert broker.received == [] and _rows(any_database) == []


def test_a_savepoint_inside_the_transaction_neither_sends_nor_forgets_its_messages(
    any_database: Database, broker: Broker
) -> None:
    """SQLAlchemy fires ``after_commit`` and ``after_rollback`` for savepoints too (a job's
    creation runs in one). Sending at a savepoint's commit would claim rows other connections
    cannot see yet (on SQLite: wait on the transaction's own write lock, three busy timeouts);
    forgetting them at a savepoint's rollback would leave them to the relay. Both wait for the
    transaction itself."""
    started = time.monotonic()
    with any_database.session_scope() as session:
        add_message(session, topic=RUN_PHASE, payload={"job_id": 5, "phase": "corpus"})
        with session.begin_nested():
            add_message(session, topic=RUN_PHASE, payload={"job_id": 6, "phase": "corpus"})
        assert broker.received == []  # not at the savepoint's commit
        with pytest.raises(RuntimeError), session.begin_nested():
            add_message(session, topic=RUN_PHASE, payload={"job_id": 7, "phase": "corpus"})
            raise RuntimeError("the savepoint fails")
    assert sorted(p["job_id"] for p in broker.received) == [5, 6]
    assert time.monotonic() - started < 10.0  # no busy timeout waited out
    assert all(row.sent_at is not None for row in _rows(any_database))


def test_a_refused_message_is_resent_by_the_relay_after_the_delay(
    any_database: Database, broker: Broker
) -> None:
    broker.down = True
    with any_database.session_scope() as session:
        add_message(session, topic=RUN_PHASE, payload={"job_id": 3, "phase": "train"})
        add_message(session, topic=RUN_PHASE, payload={"job_id": 4, "phase": "train"})
    first, second = _rows(any_database)
    assert first.sent_at is None and first.attempts == 1
    assert "ConnectionError: broker down" in (first.last_error or "")
    assert second.attempts == 0  # not tried after the first failure: the broker is down
    broker.down = False
    # Not due yet: the first waits retry_after_s; the untried second goes now.
    assert relay_pass(any_database.engine, retry_after_s=0.5).sent == [second.id]
    time.sleep(0.6)
    assert relay_pass(any_database.engine, retry_after_s=0.5).sent == [first.id]
    assert [p["job_id"] for p in broker.received] == [4, 3]
    assert all(r.sent_at is not None for r in _rows(any_database))


def test_a_message_is_claimed_by_one_sender_and_topics_without_sender_wait(
    any_database: Database, broker: Broker
) -> None:
    install_senders({}, retry_after_s=0.5)  # this process sends nothing
    with any_database.session_scope() as session:
        run = add_message(session, topic=RUN_PHASE, payload={"job_id": 5, "phase": "embed"})
        hook = add_message(session, topic=DELIVER_WEBHOOK, payload={"delivery_id": 9})
    assert all(r.attempts == 0 and r.sent_at is None for r in _rows(any_database))
    # Another process (the relay) sends what it has a sender for.
    report = relay_pass(any_database.engine, retry_after_s=0.5, senders={RUN_PHASE: broker})
    assert report.sent == [run.id] and broker.received == [{"job_id": 5, "phase": "embed"}]
    # A claim is exclusive until its lease runs out (a sender died between claim and mark).
    assert _claim(any_database.engine, hook.id) is not None
    assert _claim(any_database.engine, hook.id) is None
    assert send_messages(any_database.engine, ids=[hook.id], senders={}).sent == []
    with any_database.session_scope() as session:
        assert withdraw_unsent(session, hook.id) is None  # being sent: not withdrawn
        row = session.get(OutboxMessage, hook.id)
        assert row is not None
        row.claimed_at = utc_now() - dt.timedelta(seconds=120)  # the lease ran out
    with any_database.session_scope() as session:
        assert withdraw_unsent(session, hook.id) is not None
    assert [r.id for r in _rows(any_database)] == [run.id]
