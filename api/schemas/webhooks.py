"""Webhooks: registering a URL for a team's job events, and the delivery log."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.common import DeliveryState, EventType, ShortText, Text
from services.storage.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from services.vocab import WEBHOOK_EVENT_TYPES

ALL_EVENTS: tuple[str, ...] = WEBHOOK_EVENT_TYPES


class WebhookCreate(BaseModel):
    """Register a URL for the team's job events."""

    model_config = ConfigDict(extra="forbid")

    url: Text(2048, min_length=1) = Field(  # type: ignore[valid-type]
        description="http(s) URL that receives a POST per event; must resolve to a public "
        "address unless the server allows private hosts (`UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS`).",
        examples=["https://ci.example.org/hooks/unmask"],
    )
    events: list[EventType] = Field(
        default_factory=lambda: list(ALL_EVENTS),
        min_length=1,
        description="Event types to deliver (default: all).",
    )
    description: ShortText = ""


class WebhookOut(BaseModel):
    """A registered endpoint (the secret is never shown again after creation)."""

    id: int
    url: str
    events: list[str]
    description: str
    active: bool
    secret_prefix: str = Field(description="The first characters of the secret, to tell apart.")
    created_at: dt.datetime

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> WebhookOut:
        return cls(
            id=endpoint.id,
            url=endpoint.url,
            events=list(endpoint.event_types or []),
            description=endpoint.description,
            active=endpoint.is_active,
            secret_prefix=endpoint.secret[:12],
            created_at=endpoint.created_at,
        )


class WebhookCreated(WebhookOut):
    """A new endpoint with its signing secret, shown this once."""

    secret: str = Field(
        description="`whsec_` + base64 key: verify `webhook-signature` with it. Store it now."
    )


class WebhookAttemptOut(BaseModel):
    """One HTTP try of a delivery."""

    number: int
    status_code: int | None = Field(description="HTTP status; null = no answer (see `error`).")
    error: str | None
    duration_ms: float
    response_excerpt: str = Field(description="The first 500 characters of the answer.")
    at: dt.datetime

    @classmethod
    def of(cls, attempt: WebhookAttempt) -> WebhookAttemptOut:
        return cls(
            number=attempt.number,
            status_code=attempt.status_code,
            error=attempt.error,
            duration_ms=round(attempt.duration_ms, 1),
            response_excerpt=attempt.response_excerpt,
            at=attempt.created_at,
        )


class WebhookDeliveryOut(BaseModel):
    """One event sent (or to be sent) to an endpoint, with every attempt."""

    id: int
    event_id: str = Field(description="The `webhook-id` header (the same on every retry).")
    event_type: str
    job_id: int | None
    state: DeliveryState
    attempts: int
    next_attempt_at: dt.datetime | None
    last_status_code: int | None
    last_error: str | None
    delivered_at: dt.datetime | None
    created_at: dt.datetime
    payload: dict[str, object]
    attempt_log: list[WebhookAttemptOut]

    @classmethod
    def of(cls, delivery: WebhookDelivery) -> WebhookDeliveryOut:
        return cls(
            id=delivery.id,
            event_id=delivery.event_id,
            event_type=delivery.event_type,
            job_id=delivery.job_id,
            state=delivery.state,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at,
            last_status_code=delivery.last_status_code,
            last_error=delivery.last_error,
            delivered_at=delivery.delivered_at,
            created_at=delivery.created_at,
            payload=dict(delivery.payload),
            attempt_log=[WebhookAttemptOut.of(a) for a in delivery.attempt_log],
        )


class WebhookDeliveryPageOut(BaseModel):
    """Deliveries newest first."""

    items: list[WebhookDeliveryOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null = end.")
