"""Webhook endpoints: the URLs a team registers for its job events, with their signing secrets."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.platform.rows import get_row
from services.platform.webhooks.targets import url_refusal
from services.storage.errors import ConflictError, NotFoundError
from services.storage.models import Team, WebhookEndpoint
from services.vocab import WEBHOOK_EVENT_TYPES

# Event types: one per terminal job state, in the vocabulary's order (services.vocab).
JOB_EVENT_TYPES: tuple[str, ...] = WEBHOOK_EVENT_TYPES
EVENT_TYPE_ORDER: tuple[str, ...] = WEBHOOK_EVENT_TYPES
SECRET_PREFIX = "whsec_"
MAX_ENDPOINTS_PER_TEAM = 20


def generate_secret() -> str:
    """A new signing secret: ``whsec_`` + base64 of 32 random bytes (Standard Webhooks)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


# --- endpoints ----------------------------------------------------------------------------------


def validate_webhook_url(url: str, *, allow_private: bool = False) -> str:
    """``url`` if it is an absolute http(s) URL without credentials, control characters or a
    literal non-global address (``targets.url_refusal``), else :class:`ConflictError`.

    (A host name is resolved and its addresses checked at delivery time, see targets.py.)
    """
    if len(url) > 2048:
        raise ConflictError("webhook url is longer than 2048 characters")
    refusal = url_refusal(url, allow_private=allow_private)
    if refusal is not None:
        raise ConflictError(refusal)
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
    allow_private: bool = False,
) -> CreatedEndpoint:
    """Register ``url`` for the team's job events (default: every event type); a literal
    non-global address is refused unless ``allow_private`` (tests, single-host setups)."""
    validate_webhook_url(url, allow_private=allow_private)
    # The team row, locked until the transaction ends: concurrent registrations (any API
    # process) count one after the other, so the cap is exact.
    get_row(session, Team, team_id, lock=True)
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
