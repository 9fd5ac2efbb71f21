"""Delivering webhook events: Standard Webhooks signatures, one HTTP attempt, retries, the log.

A delivery is a ``POST`` of the event's JSON with three headers (https://www.standardwebhooks.com):

- ``webhook-id``: the event id (``msg_...``), the same on every retry: receivers deduplicate on it;
- ``webhook-timestamp``: Unix seconds of this attempt; receivers reject old ones (replays);
- ``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`` keyed with the
  base64-decoded part of the endpoint's ``whsec_...`` secret.

:func:`attempt_delivery` claims a due delivery (one conditional UPDATE, so two tasks for the same
delivery never both send it), sends it once and records the attempt; the caller (a Celery task,
``workers/webhooks.py``) retries after the delay it returns. :func:`queue_overdue_deliveries`
(the periodic sweep) queues again, through the outbox, what a lost retry left pending.
No Celery here.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session, selectinload

from services.net.policy import pinned_request
from services.platform.outbox import DELIVER_WEBHOOK, add_message
from services.platform.webhooks.endpoints import SECRET_PREFIX, get_webhook_endpoint
from services.platform.webhooks.targets import WebhookTarget, resolve_target
from services.settings import Settings
from services.storage.db import Database
from services.storage.errors import ConflictError, NotFoundError
from services.storage.models import WebhookAttempt, WebhookDelivery, WebhookDeliveryState
from services.storage.types import utc_now

SIGNATURE_VERSION = "v1"
USER_AGENT = "Unmask-Webhooks/1"
MAX_RETRY_DELAY_S = 3600.0
# Receivers should refuse timestamps further than this from their clock (seconds).
DEFAULT_TOLERANCE_S = 300


class WebhookVerificationError(ValueError):
    """A webhook's signature or timestamp does not check out."""


def _secret_bytes(secret: str) -> bytes:
    raw = secret.removeprefix(SECRET_PREFIX)
    return base64.b64decode(raw)


def canonical_body(payload: Mapping[str, Any]) -> bytes:
    """The exact bytes sent (and signed): compact JSON with sorted keys, UTF-8."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value: ``v1,<base64 HMAC-SHA256("{id}.{timestamp}.{body}")>``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(_secret_bytes(secret), signed, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


def signed_headers(secret: str, message_id: str, body: bytes, *, timestamp: int) -> dict[str, str]:
    """Every header of one delivery attempt."""
    return {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> dict[str, Any]:
    """Check a received webhook (what a receiver does); returns the parsed event.

    ``headers`` keys are matched case-insensitively. Raises :class:`WebhookVerificationError` when
    a header is missing, the timestamp is more than ``tolerance_s`` seconds off, or no ``v1``
    signature in the (space-separated) signature header matches.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    try:
        message_id = lower["webhook-id"]
        timestamp = int(lower["webhook-timestamp"])
        signatures = lower["webhook-signature"].split()
    except (KeyError, ValueError) as exc:
        raise WebhookVerificationError(f"missing or malformed webhook header: {exc}") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        raise WebhookVerificationError(
            f"webhook-timestamp {timestamp} is more than {tolerance_s} s from now"
        )
    expected = sign(secret, message_id, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures):
        raise WebhookVerificationError("no webhook-signature matches")
    event: dict[str, Any] = json.loads(body)
    return event


def retry_delay_s(settings: Settings, attempts: int) -> float:
    """Seconds before try ``attempts + 1``: ``webhook_retry_backoff_s`` doubling, max 1 h."""
    return float(min(settings.webhook_retry_backoff_s * 2.0 ** (attempts - 1), MAX_RETRY_DELAY_S))


def disallowed_host_reason(url: str, *, allow_private: bool) -> str | None:
    """Why ``url`` may not be called, or None (:func:`targets.resolve_target`)."""
    target = resolve_target(url, allow_private=allow_private)
    return target if isinstance(target, str) else None


@dataclass(frozen=True)
class DeliveryOutcome:
    """Result of :func:`attempt_delivery`. ``retry_in_s`` set = try again after that many s."""

    delivery_id: int
    status: str  # "succeeded", "retry", "failed", "skipped"
    status_code: int | None = None
    retry_in_s: float | None = None
    detail: str = ""


def attempt_delivery(
    database: Database,
    settings: Settings,
    delivery_id: int,
    *,
    client: httpx.Client | None = None,
) -> DeliveryOutcome:
    """Claim delivery ``delivery_id`` if due, POST it once, record the attempt.

    The claim (one transaction) and the record (another) bracket the HTTP call, which holds no
    database connection. Not due, already done or claimed elsewhere: ``status="skipped"``.
    """
    lease_s = settings.webhook_timeout_s + 30.0
    with database.session_scope() as session:
        delivery = claim_delivery(session, delivery_id, lease_s=lease_s)
        if delivery is None:
            return DeliveryOutcome(delivery_id, "skipped", detail="not due or not pending")
        url = delivery.endpoint.url
        secret = delivery.endpoint.secret
        message_id = delivery.event_id
        body = canonical_body(delivery.payload)
    # Resolved and checked once; the POST goes to the checked address (no second lookup).
    target = resolve_target(url, allow_private=settings.outbound_allow_private_hosts)
    reason = target if isinstance(target, str) else None
    if isinstance(target, str):
        attempt = AttemptRecord(None, f"URL not allowed: {target}"[:1000], 0.0)
    else:
        try:
            attempt = _post(target, secret, message_id, body, settings.webhook_timeout_s, client)
        except (httpx.InvalidURL, ValueError) as exc:  # the URL itself: no retry can help
            reason = f"URL not usable: {type(exc).__name__}: {exc}"[:1000]
            attempt = AttemptRecord(None, reason, 0.0)
    with database.session_scope() as session:
        recorded = record_attempt(
            session,
            delivery_id,
            attempt,
            max_attempts=settings.webhook_max_attempts,
            retry_delay_s=lambda n: retry_delay_s(settings, n),
            permanent=reason is not None,
        )
        state, attempts = recorded.state, recorded.attempts
    if state == WebhookDeliveryState.SUCCEEDED:
        return DeliveryOutcome(delivery_id, "succeeded", attempt.status_code)
    detail = attempt.error or f"HTTP {attempt.status_code}"
    if state == WebhookDeliveryState.FAILED:
        return DeliveryOutcome(delivery_id, "failed", attempt.status_code, detail=detail)
    return DeliveryOutcome(
        delivery_id,
        "retry",
        attempt.status_code,
        retry_in_s=retry_delay_s(settings, attempts),
        detail=detail,
    )


def _post(
    target: WebhookTarget,
    secret: str,
    message_id: str,
    body: bytes,
    timeout_s: float,
    client: httpx.Client | None,
) -> AttemptRecord:
    headers = signed_headers(secret, message_id, body, timestamp=int(time.time()))
    started = time.perf_counter()
    own = client is None
    # No redirects at all: a receiver answers where it was registered.
    http = client or httpx.Client(timeout=timeout_s, follow_redirects=False)
    try:
        request = pinned_request(
            http, target, "POST", headers=headers, content=body, timeout_s=timeout_s
        )
        response = http.send(request)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        excerpt = response.text[:500] if response.content else ""
        error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
        return AttemptRecord(response.status_code, error, elapsed_ms, excerpt)
    except httpx.HTTPError as exc:
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        return AttemptRecord(None, f"{type(exc).__name__}: {exc}"[:1000], elapsed_ms)
    finally:
        if own:
            http.close()


def queue_overdue_deliveries(session: Session, *, overdue_s: float, limit: int = 500) -> list[int]:
    """Queue again (outbox) every pending delivery overdue by ``overdue_s`` seconds: a retry
    whose message was lost. Returns their ids."""
    ids = due_delivery_ids(session, overdue_s=overdue_s, limit=limit)
    for delivery_id in ids:
        add_message(session, topic=DELIVER_WEBHOOK, payload={"delivery_id": delivery_id})
    return ids


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
