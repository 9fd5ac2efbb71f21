"""Outgoing webhooks in the database: endpoints, the delivery outbox, the attempt log.

When a job reaches a terminal state, :func:`record_job_event` (called by
``repository.transition_job``) adds one ``webhook_deliveries`` row per subscribed endpoint of the
job's team *in the same transaction*: an event exists exactly when the state change committed
(a transactional outbox). After the commit the new delivery ids are handed to the process's
delivery sender (:func:`set_delivery_sender`; the workers install one that queues a Celery task);
a periodic sweep sends whatever is still pending, so a lost message only delays an event.

Claiming an attempt is one conditional UPDATE (:func:`claim_delivery`), so two tasks for the same
delivery never both send it. Signing and HTTP live in ``services/webhooks.py``.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import event, select, update
from sqlalchemy.orm import Session, selectinload

from services.storage.errors import ConflictError, NotFoundError
from services.storage.models import (
    AGGREGATE_SEED,
    TERMINAL_STATES,
    Job,
    Result,
    RunState,
    Submission,
    Team,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryState,
    WebhookEndpoint,
)
from services.storage.types import utc_now

log = logging.getLogger(__name__)

# Event types: one per terminal job state.
JOB_EVENT_TYPES: tuple[str, ...] = tuple(f"job.{state.value}" for state in TERMINAL_STATES)
EVENT_TYPE_ORDER: tuple[str, ...] = ("job.succeeded", "job.failed", "job.cancelled")
SECRET_PREFIX = "whsec_"
MAX_ENDPOINTS_PER_TEAM = 20
# Metrics copied into a job.succeeded event (seed-aggregated), so a receiver can act on the verdict
# without a second request.
EVENT_SUMMARY_METRICS: tuple[str, ...] = (
    "eer_percent",
    "min_cllr_bits",
    "linkability",
    "srd_mean_disclosure_bits",
    "srd_identification_rate_percent",
)
_SESSION_KEY = "unmask.webhook_delivery_ids"
DeliverySender = Callable[[Sequence[int]], None]
_sender: DeliverySender | None = None


def set_delivery_sender(sender: DeliverySender | None) -> None:
    """Install the callable that is handed new delivery ids after their transaction commits.

    Process-wide. The workers install one that queues Celery tasks; with none installed the
    periodic sweep sends the deliveries.
    """
    global _sender
    _sender = sender


def get_delivery_sender() -> DeliverySender | None:
    """The installed delivery sender, if any."""
    return _sender


def generate_secret() -> str:
    """A new signing secret: ``whsec_`` + base64 of 32 random bytes (Standard Webhooks)."""
    import base64

    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


# --- endpoints ----------------------------------------------------------------------------------


def validate_webhook_url(url: str) -> str:
    """``url`` if it is an absolute http(s) URL without credentials, else :class:`ConflictError`.

    (Whether its host is a public address is checked at delivery time, see services/webhooks.py.)
    """
    if len(url) > 2048:
        raise ConflictError("webhook url is longer than 2048 characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConflictError(f"webhook url {url!r} must be an absolute http:// or https:// URL")
    if parts.username or parts.password:
        raise ConflictError("webhook url must not contain credentials (use the signature)")
    return url


def _normalize_event_types(event_types: Sequence[str] | None) -> list[str]:
    if not event_types:
        return list(EVENT_TYPE_ORDER)
    unknown = [e for e in event_types if e not in JOB_EVENT_TYPES]
    if unknown:
        raise ConflictError(
            f"webhook event type {unknown[0]!r} is not one of {', '.join(EVENT_TYPE_ORDER)}"
        )
    return [e for e in EVENT_TYPE_ORDER if e in set(event_types)]


@dataclass(frozen=True)
class CreatedEndpoint:
    """A new endpoint and its secret (returned once by the API)."""

    endpoint: WebhookEndpoint
    secret: str


def create_webhook_endpoint(
    session: Session,
    team_id: int,
    url: str,
    *,
    event_types: Sequence[str] | None = None,
    description: str = "",
) -> CreatedEndpoint:
    """Register ``url`` for the team's job events (default: every event type)."""
    validate_webhook_url(url)
    if session.get(Team, team_id) is None:
        raise NotFoundError(f"teams: no row with id {team_id}")
    count = len(
        session.scalars(select(WebhookEndpoint.id).where(WebhookEndpoint.team_id == team_id)).all()
    )
    if count >= MAX_ENDPOINTS_PER_TEAM:
        raise ConflictError(
            f"team already has {count} webhook endpoints (limit {MAX_ENDPOINTS_PER_TEAM}); "
            "delete one first"
        )
    secret = generate_secret()
    endpoint = WebhookEndpoint(
        team_id=team_id,
        url=url,
        description=description,
        secret=secret,
        event_types=_normalize_event_types(event_types),
        is_active=True,
    )
    session.add(endpoint)
    session.flush()
    return CreatedEndpoint(endpoint, secret)


def list_webhook_endpoints(session: Session, team_id: int) -> list[WebhookEndpoint]:
    """The team's endpoints, oldest first."""
    return list(
        session.scalars(
            select(WebhookEndpoint)
            .where(WebhookEndpoint.team_id == team_id)
            .order_by(WebhookEndpoint.id)
        )
    )


def get_webhook_endpoint(session: Session, team_id: int, endpoint_id: int) -> WebhookEndpoint:
    """The team's endpoint ``endpoint_id``; another team's or a missing one: NotFoundError."""
    endpoint = session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or endpoint.team_id != team_id:
        raise NotFoundError(f"webhook endpoint {endpoint_id} not found")
    return endpoint


def delete_webhook_endpoint(session: Session, team_id: int, endpoint_id: int) -> None:
    """Delete an endpoint with its deliveries and their log (pending ones are not sent)."""
    endpoint = get_webhook_endpoint(session, team_id, endpoint_id)
    session.delete(endpoint)
    session.flush()


# --- events -------------------------------------------------------------------------------------


def _summary_of(session: Session, job_id: int) -> list[dict[str, Any]]:
    rows = session.execute(
        select(Result.scenario, Result.backend, Result.metric, Result.value).where(
            Result.job_id == job_id,
            Result.seed == AGGREGATE_SEED,
            Result.metric.in_(EVENT_SUMMARY_METRICS),
        )
    ).all()
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for scenario, backend, metric, value in rows:
        entry = grouped.setdefault((scenario, backend), {"scenario": scenario, "backend": backend})
        entry[metric] = value
    return [grouped[key] for key in sorted(grouped)]


def job_event_payload(session: Session, job: Job, event_type: str) -> dict[str, Any]:
    """The JSON body of a job event (``type``, ``timestamp``, ``data``)."""
    submission = session.get(Submission, job.submission_id)
    team = session.get(Team, job.team_id)
    data: dict[str, Any] = {
        "job_id": job.id,
        "state": job.state,
        "team": team.slug if team is not None else None,
        "submission_id": job.submission_id,
        "submission_name": submission.name if submission is not None else None,
        "protocol_id": job.protocol_id,
        "error_message": job.error_message,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "links": {
            "job": f"/v1/jobs/{job.id}",
            "results": f"/v1/jobs/{job.id}/results",
            "page": f"/jobs/{job.id}",
        },
    }
    if job.state == RunState.SUCCEEDED.value:
        data["summary"] = _summary_of(session, job.id)
    return {"type": event_type, "timestamp": utc_now().isoformat(), "data": data}


def record_job_event(session: Session, job: Job, *, now: dt.datetime | None = None) -> list[int]:
    """Queue the event of a job that just reached a terminal state (same transaction).

    One delivery per active endpoint of the job's team subscribed to ``job.<state>``; their ids
    go to the delivery sender after the transaction commits. Returns the new delivery ids.
    """
    if RunState(job.state) not in TERMINAL_STATES:
        return []
    event_type = f"job.{job.state}"
    endpoints = [
        e
        for e in session.scalars(
            select(WebhookEndpoint).where(
                WebhookEndpoint.team_id == job.team_id, WebhookEndpoint.is_active.is_(True)
            )
        )
        if event_type in (e.event_types or [])
    ]
    if not endpoints:
        return []
    now = now or utc_now()
    payload = job_event_payload(session, job, event_type)
    deliveries = [
        WebhookDelivery(
            endpoint_id=endpoint.id,
            job_id=job.id,
            event_id=f"msg_{secrets.token_hex(16)}",
            event_type=event_type,
            payload=payload,
            state=WebhookDeliveryState.PENDING.value,
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
        for endpoint in endpoints
    ]
    session.add_all(deliveries)
    session.flush()
    ids = [d.id for d in deliveries]
    _send_after_commit(session, ids)
    return ids


def _send_after_commit(session: Session, ids: list[int]) -> None:
    pending: list[int] = session.info.setdefault(_SESSION_KEY, [])
    pending.extend(ids)
    if not event.contains(session, "after_commit", _after_commit):
        event.listen(session, "after_commit", _after_commit)
        event.listen(session, "after_rollback", _after_rollback)


def _after_commit(session: Session) -> None:
    ids = session.info.pop(_SESSION_KEY, [])
    sender = _sender
    if not ids or sender is None:
        return
    try:
        sender(list(ids))
    except Exception as exc:  # the sweep sends them later
        log.warning("could not queue webhook deliveries %s: %s", ids, exc)


def _after_rollback(session: Session) -> None:
    # Rolled back deliveries were never stored; their ids must not be sent.
    session.info.pop(_SESSION_KEY, None)


# --- delivery -----------------------------------------------------------------------------------


def claim_delivery(
    session: Session, delivery_id: int, *, lease_s: float, now: dt.datetime | None = None
) -> WebhookDelivery | None:
    """Take the next attempt of a due pending delivery, or None (not due, done, or taken).

    One conditional UPDATE moves ``next_attempt_at`` ``lease_s`` seconds ahead: a concurrent
    claim of the same delivery matches no row. If the claimer dies, the attempt is retried when
    the lease runs out.
    """
    now = now or utc_now()
    claimed = session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id == delivery_id,
            WebhookDelivery.state == WebhookDeliveryState.PENDING.value,
            WebhookDelivery.next_attempt_at <= now,
        )
        .values(next_attempt_at=now + dt.timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    if getattr(claimed, "rowcount", 0) != 1:
        return None
    delivery = session.scalar(
        select(WebhookDelivery)
        .options(selectinload(WebhookDelivery.endpoint))
        .where(WebhookDelivery.id == delivery_id)
        .execution_options(populate_existing=True)
    )
    return delivery


@dataclass(frozen=True)
class AttemptRecord:
    """What one HTTP try returned. ``status_code`` None = no answer (``error`` says why)."""

    status_code: int | None
    error: str | None
    duration_ms: float
    response_excerpt: str = ""

    @property
    def succeeded(self) -> bool:
        """A 2xx answer."""
        return self.status_code is not None and 200 <= self.status_code < 300


def record_attempt(
    session: Session,
    delivery_id: int,
    attempt: AttemptRecord,
    *,
    max_attempts: int,
    retry_delay_s: Callable[[int], float],
    permanent: bool = False,
    now: dt.datetime | None = None,
) -> WebhookDelivery:
    """Log an attempt and move the delivery on: succeeded, failed, or pending with a next time.

    ``retry_delay_s(attempts_so_far)`` is the delay before the next try (seconds); ``permanent``
    fails the delivery at once (e.g. a URL that is not allowed).
    """
    now = now or utc_now()
    delivery = session.get(WebhookDelivery, delivery_id, with_for_update=True)
    if delivery is None:
        raise NotFoundError(f"webhook delivery {delivery_id} not found")
    delivery.attempts += 1
    session.add(
        WebhookAttempt(
            delivery_id=delivery.id,
            number=delivery.attempts,
            status_code=attempt.status_code,
            error=attempt.error,
            duration_ms=attempt.duration_ms,
            response_excerpt=attempt.response_excerpt[:500],
            created_at=now,
        )
    )
    delivery.last_status_code = attempt.status_code
    delivery.last_error = attempt.error
    if attempt.succeeded:
        delivery.state = WebhookDeliveryState.SUCCEEDED.value
        delivery.delivered_at = now
        delivery.next_attempt_at = None
    elif permanent or delivery.attempts >= max_attempts:
        delivery.state = WebhookDeliveryState.FAILED.value
        delivery.next_attempt_at = None
    else:
        delivery.next_attempt_at = now + dt.timedelta(seconds=retry_delay_s(delivery.attempts))
    session.flush()
    return delivery


def due_delivery_ids(
    session: Session, *, overdue_s: float = 0.0, limit: int = 500, now: dt.datetime | None = None
) -> list[int]:
    """Pending deliveries due at least ``overdue_s`` seconds ago (the sweep), oldest first."""
    now = now or utc_now()
    cutoff = now - dt.timedelta(seconds=overdue_s)
    return list(
        session.scalars(
            select(WebhookDelivery.id)
            .where(
                WebhookDelivery.state == WebhookDeliveryState.PENDING.value,
                WebhookDelivery.next_attempt_at <= cutoff,
            )
            .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
            .limit(limit)
        )
    )


@dataclass(frozen=True)
class DeliveryPage:
    """Deliveries newest first; ``next_cursor`` None = last page."""

    items: list[WebhookDelivery]
    next_cursor: str | None


def list_deliveries(
    session: Session,
    team_id: int,
    endpoint_id: int,
    *,
    limit: int = 50,
    cursor: str | None = None,
) -> DeliveryPage:
    """An endpoint's deliveries with their attempts, newest first (keyset on the id)."""
    get_webhook_endpoint(session, team_id, endpoint_id)
    query = (
        select(WebhookDelivery)
        .options(selectinload(WebhookDelivery.attempt_log))
        .where(WebhookDelivery.endpoint_id == endpoint_id)
    )
    if cursor is not None:
        try:
            query = query.where(WebhookDelivery.id < int(cursor))
        except ValueError:
            raise ConflictError(f"invalid page cursor {cursor!r}") from None
    rows = list(session.scalars(query.order_by(WebhookDelivery.id.desc()).limit(limit + 1)))
    items = rows[:limit]
    return DeliveryPage(items, str(items[-1].id) if len(rows) > limit else None)
