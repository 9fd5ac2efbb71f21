"""The one after-commit path: outbox rows written in a transaction, sent after it committed.

Work that must follow a committed change (send the next phase of a job, revoke a cancelled job's
tasks, validate an uploaded archive, deliver a webhook event) is written with :func:`add_message`
in the SAME transaction as the change, so the message exists exactly when the change committed.
Sending happens in two ways, both through :func:`send_messages`:

- right after the commit (a SQLAlchemy ``after_commit`` hook of the writing session sends the
  messages that session wrote), and
- by the relay (:func:`relay_pass`, run every few seconds by Celery beat, or in embedded mode by
  a thread of each worker), which sends whatever is still unsent: the broker was down, the
  process died between commit and send, or the writing process had no sender for the topic.

The after-commit send is tried again (:data:`AFTER_COMMIT_TRIES`, short back-off) when the
database failed it (a lock held elsewhere, a dropped connection): the relay is the safety net,
not the common path.

Sending one message: claim it with one conditional UPDATE (a lease, so two senders do not both
send it), call the sender installed for its topic (:func:`install_senders`; each process installs
its own at start-up), then mark it sent; ``sent_at`` is set only after the sender returned, i.e.
after the broker accepted the message. A failed send releases the claim and records the error;
the relay tries again ``outbox_resend_after_s`` seconds later. A sender that dies after the broker
accepted but before the mark leaves the message to be sent again when its lease runs out: delivery
is at least once, and every consumer is idempotent (phase claims, conditional webhook claims,
archive validation of pending submissions only, revoke), so a duplicate changes nothing.

No Celery here: a sender is any callable taking the message's JSON payload.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine, delete, event, or_, select, update
from sqlalchemy.orm import Session

from services.storage.models import OutboxMessage
from services.storage.types import utc_now

log = logging.getLogger(__name__)

# Topics: what a message asks for. Payloads: ``{"job_id": int, "phase": str}`` (RUN_PHASE),
# ``{"job_id": int}`` (REVOKE_JOB), ``{"submission_id": int}`` (VALIDATE_ARCHIVE),
# ``{"delivery_id": int}`` (DELIVER_WEBHOOK), ``{"protocol_id": int}`` (TRAIN_PROTOCOL_ASR).
RUN_PHASE = "run_phase"
REVOKE_JOB = "revoke_job"
VALIDATE_ARCHIVE = "validate_archive"
DELIVER_WEBHOOK = "deliver_webhook"
TRAIN_PROTOCOL_ASR = "train_protocol_asr"
TOPICS: tuple[str, ...] = (
    RUN_PHASE,
    REVOKE_JOB,
    VALIDATE_ARCHIVE,
    DELIVER_WEBHOOK,
    TRAIN_PROTOCOL_ASR,
)

# A claimed message not marked sent (or released) within this many seconds is claimable again:
# its sender died between claim and mark.
CLAIM_LEASE_S = 60.0
# Sent messages are kept this long (seconds) for inspection, then pruned (the reaper).
KEEP_SENT_S = 24 * 3600.0

MessageSender = Callable[[Mapping[str, Any]], None]
"""Hands one message's payload to the workers (a Celery publish); raises when not accepted."""

_SESSION_KEY = "unmask.outbox_message_ids"
DEFAULT_RETRY_AFTER_S = 5.0
_senders_lock = threading.Lock()
_senders: dict[str, MessageSender] = {}
_retry_after_s = DEFAULT_RETRY_AFTER_S


def install_senders(
    senders: Mapping[str, MessageSender] | None, *, retry_after_s: float = DEFAULT_RETRY_AFTER_S
) -> None:
    """Install this process's senders, one per topic (None or empty: none, the relay sends).

    Process-wide: every process that writes messages installs them at start-up (the workers, the
    API, the embedded demo); a topic without a sender is left to the relay of another process.
    ``retry_after_s`` (``Settings.outbox_resend_after_s``): how long a message whose after-commit
    send failed waits before the relay tries it again, seconds.
    """
    global _retry_after_s
    unknown = sorted(set(senders or {}) - set(TOPICS))
    if unknown:
        raise ValueError(f"unknown outbox topic(s) {unknown}; one of {', '.join(TOPICS)}")
    with _senders_lock:
        _senders.clear()
        _senders.update(senders or {})
        _retry_after_s = retry_after_s


def installed_senders() -> dict[str, MessageSender]:
    """A copy of the installed senders (topic -> sender)."""
    with _senders_lock:
        return dict(_senders)


def add_message(session: Session, *, topic: str, payload: Mapping[str, Any]) -> OutboxMessage:
    """Write a message in ``session``'s transaction; it is sent once that transaction commits."""
    if topic not in TOPICS:
        raise ValueError(f"unknown outbox topic {topic!r}; one of {', '.join(TOPICS)}")
    now = utc_now()
    message = OutboxMessage(
        topic=topic, payload=dict(payload), created_at=now, available_at=now, attempts=0
    )
    session.add(message)
    session.flush()
    pending: list[int] = session.info.setdefault(_SESSION_KEY, [])
    pending.append(message.id)
    if not event.contains(session, "after_commit", _after_commit):
        event.listen(session, "after_commit", _after_commit)
        event.listen(session, "after_rollback", _after_rollback)
    return message


AFTER_COMMIT_TRIES = 3
"""Tries of the after-commit send when the database itself failed it (claim or mark: a lock
held by another process, a dropped connection); a failed send to the broker is not retried here
(the relay sends it ``retry_after_s`` later)."""
AFTER_COMMIT_BACKOFF_S = 0.25
"""Wait before the after-commit send's second try, seconds; doubled before each further one."""


def _after_commit(session: Session) -> None:
    if session.in_nested_transaction():
        # A savepoint's commit (SQLAlchemy fires the hook for those too, e.g. inside a job's
        # creation): the transaction, and the write lock SQLite gives it, is still open, so
        # its rows are not visible to the sending connection yet. The transaction's commit sends.
        return
    ids = session.info.pop(_SESSION_KEY, [])
    if not ids:
        return
    bind = session.get_bind()
    engine = bind if isinstance(bind, Engine) else bind.engine
    for attempt in range(AFTER_COMMIT_TRIES):
        try:
            # Messages already sent (or claimed by the relay meanwhile) are skipped by the claim.
            send_messages(engine, ids=ids, retry_after_s=_retry_after_s)
            return
        except Exception as exc:  # never fail the committed caller; the relay sends them
            if attempt == AFTER_COMMIT_TRIES - 1:
                log.warning(
                    "could not send outbox messages %s after commit (%d tries; the relay will): %s",
                    ids,
                    AFTER_COMMIT_TRIES,
                    exc,
                )
                return
            time.sleep(AFTER_COMMIT_BACKOFF_S * 2**attempt)


def _after_rollback(session: Session) -> None:
    if session.in_nested_transaction():
        # A savepoint rolled back: the transaction's earlier messages stand (the claim skips
        # the ids the savepoint took back with it).
        return
    # The rolled-back messages were never stored (a later commit of this session finds none).
    session.info.pop(_SESSION_KEY, None)


@dataclass
class SendReport:
    """What one :func:`send_messages` call did (message ids)."""

    sent: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    no_sender: list[int] = field(default_factory=list)


def _claimable(now: dt.datetime) -> Any:
    stale = now - dt.timedelta(seconds=CLAIM_LEASE_S)
    return (
        OutboxMessage.sent_at.is_(None),
        OutboxMessage.available_at <= now,
        or_(OutboxMessage.claimed_at.is_(None), OutboxMessage.claimed_at < stale),
    )


def _claim(bind: Engine, message_id: int) -> tuple[str, dict[str, Any]] | None:
    """Take message ``message_id`` if unsent, due and unclaimed: (topic, payload), else None."""
    now = utc_now()
    with Session(bind) as session, session.begin():
        claimed = session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == message_id, *_claimable(now))
            .values(claimed_at=now)
            .execution_options(synchronize_session=False)
        )
        if getattr(claimed, "rowcount", 0) != 1:
            return None
        row = session.execute(
            select(OutboxMessage.topic, OutboxMessage.payload).where(OutboxMessage.id == message_id)
        ).one()
        return str(row.topic), dict(row.payload)


def _mark(bind: Engine, message_id: int, *, error: str | None, retry_after_s: float) -> None:
    now = utc_now()
    values: dict[str, Any] = {"claimed_at": None, "attempts": OutboxMessage.attempts + 1}
    if error is None:
        values["sent_at"] = now
        values["last_error"] = None
    else:
        values["last_error"] = error[:1000]
        values["available_at"] = now + dt.timedelta(seconds=retry_after_s)
    with Session(bind) as session, session.begin():
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == message_id)
            .values(**values)
            .execution_options(synchronize_session=False)
        )


def send_messages(
    bind: Engine,
    *,
    ids: Iterable[int],
    retry_after_s: float = 5.0,
    senders: Mapping[str, MessageSender] | None = None,
) -> SendReport:
    """Send the unsent messages among ``ids`` (claim, send, mark sent); see the module docstring.

    ``senders`` default to the installed ones. After the first failed send the remaining
    messages are left for the relay: the broker is most likely down for them too. A failed
    message becomes due again ``retry_after_s`` seconds later.
    """
    table = installed_senders() if senders is None else dict(senders)
    report = SendReport()
    for message_id in ids:
        claimed = _claim(bind, message_id)
        if claimed is None:
            continue
        topic, payload = claimed
        sender = table.get(topic)
        if sender is None:
            with Session(bind) as session, session.begin():
                session.execute(
                    update(OutboxMessage)
                    .where(OutboxMessage.id == message_id)
                    .values(claimed_at=None)
                    .execution_options(synchronize_session=False)
                )
            report.no_sender.append(message_id)
            continue
        try:
            sender(payload)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            log.warning(
                "outbox message %s (%s %s) not sent: %s", message_id, topic, payload, reason
            )
            _mark(bind, message_id, error=reason, retry_after_s=retry_after_s)
            report.failed[message_id] = reason
            break
        _mark(bind, message_id, error=None, retry_after_s=retry_after_s)
        report.sent.append(message_id)
    return report


def unsent_message_ids(
    session: Session, *, topics: Iterable[str] | None = None, limit: int = 500
) -> list[int]:
    """Ids of unsent messages that are due and unclaimed, oldest first."""
    query = select(OutboxMessage.id).where(*_claimable(utc_now()))
    if topics is not None:
        query = query.where(OutboxMessage.topic.in_(list(topics)))
    return list(session.scalars(query.order_by(OutboxMessage.id).limit(limit)))


def relay_pass(
    bind: Engine,
    *,
    retry_after_s: float,
    senders: Mapping[str, MessageSender] | None = None,
    limit: int = 500,
) -> SendReport:
    """Send every unsent due message this process has a sender for.

    Run periodically (Celery beat's relay thread, the reaper): what the after-commit send missed
    goes out within ``retry_after_s`` seconds plus one period.
    """
    table = installed_senders() if senders is None else dict(senders)
    with Session(bind) as session:
        ids = unsent_message_ids(session, topics=list(table), limit=limit)
    return send_messages(bind, ids=ids, retry_after_s=retry_after_s, senders=table)


def prune_sent(bind: Engine, *, older_than_s: float = KEEP_SENT_S) -> int:
    """Delete messages sent more than ``older_than_s`` seconds ago; returns how many."""
    cutoff = utc_now() - dt.timedelta(seconds=older_than_s)
    with Session(bind) as session, session.begin():
        result = session.execute(
            delete(OutboxMessage)
            .where(OutboxMessage.sent_at.is_not(None), OutboxMessage.sent_at < cutoff)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(result, "rowcount", 0) or 0)


def withdraw_unsent(session: Session, message_id: int) -> OutboxMessage | None:
    """Delete message ``message_id`` if it is unsent and nobody is sending it now.

    Returns the deleted message (its ``attempts`` and ``last_error`` say why it was not sent),
    or None when it was sent, is being sent, or does not exist.
    """
    now = utc_now()
    stale = now - dt.timedelta(seconds=CLAIM_LEASE_S)
    message = session.scalar(
        select(OutboxMessage)
        .where(
            OutboxMessage.id == message_id,
            OutboxMessage.sent_at.is_(None),
            or_(OutboxMessage.claimed_at.is_(None), OutboxMessage.claimed_at < stale),
        )
        .with_for_update()
    )
    if message is None:
        return None
    session.delete(message)
    session.flush()
    return message
