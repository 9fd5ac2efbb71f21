"""Outgoing webhooks: a team registers URLs that receive its job events (docs/api.md "Webhooks").

Events: ``job.succeeded``, ``job.failed``, ``job.cancelled``, signed the Standard Webhooks way
(``services/platform/webhooks/``) and retried with exponential backoff by a Celery task
(``workers/webhooks.py``). The signing secret is returned once, by the create call.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel, ConfigDict, Field

from api.deps import ContextDep, ReadReader, SubmitPrincipal
from api.routes.common import errors, scope
from api.schemas import Cursor, DbId, ShortText, Text
from api.schemas.common import EventType
from services.platform import webhooks as store
from services.storage.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from services.vocab import WEBHOOK_EVENT_TYPES

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])

ALL_EVENTS: tuple[str, ...] = WEBHOOK_EVENT_TYPES


class WebhookCreate(BaseModel):
    """Register a URL for the team's job events."""

    model_config = ConfigDict(extra="forbid")

    url: Text(2048, min_length=1) = Field(  # type: ignore[valid-type]
        description="http(s) URL that receives a POST per event; must resolve to a public "
        "address unless the server allows private hosts (`UNMASK_WEBHOOK_ALLOW_PRIVATE_HOSTS`).",
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
    state: Literal["pending", "succeeded", "failed"]
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


@router.post(
    "",
    response_model=WebhookCreated,
    status_code=status.HTTP_201_CREATED,
    summary="Register a webhook URL (the secret is returned once)",
    responses=errors(409),
    openapi_extra=scope("submit"),
)
def create_webhook(
    principal: SubmitPrincipal,
    context: ContextDep,
    body: WebhookCreate,
) -> WebhookCreated:
    """Events of the caller's team's jobs are POSTed to `url`, signed with the returned secret."""
    with context.database.session_scope() as session:
        created = store.create_webhook_endpoint(
            session,
            principal.team_id,
            body.url,
            event_types=list(body.events),
            description=body.description,
            allow_private=context.settings.webhook_allow_private_hosts,
        )
        out = WebhookOut.of(created.endpoint)
        return WebhookCreated(**out.model_dump(), secret=created.secret)


@router.get(
    "",
    response_model=list[WebhookOut],
    summary="List the team's webhook URLs",
    responses=errors(),
    openapi_extra=scope("read"),
)
def list_webhooks(
    reader: ReadReader,
) -> list[WebhookOut]:
    """Oldest first; secrets are not shown."""
    with reader.open() as (principal, session):
        return [WebhookOut.of(e) for e in store.list_webhook_endpoints(session, principal.team_id)]


@router.delete(
    "/{webhook_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Delete a webhook URL and its delivery log",
    responses=errors(404),
    openapi_extra=scope("submit"),
)
def delete_webhook(
    principal: SubmitPrincipal,
    context: ContextDep,
    webhook_id: DbId,
) -> Response:
    """Pending deliveries to it are dropped. Another team's endpoint: 404."""
    with context.database.session_scope() as session:
        store.delete_webhook_endpoint(session, principal.team_id, webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get(
    "/{webhook_id}/deliveries",
    response_model=WebhookDeliveryPageOut,
    summary="Delivery log of a webhook URL",
    responses=errors(404),
    openapi_extra=scope("read"),
)
def list_webhook_deliveries(
    reader: ReadReader,
    webhook_id: DbId,
    limit: int = Query(50, ge=1, le=500),
    cursor: Cursor | None = Query(None),
) -> WebhookDeliveryPageOut:
    """Each event with its state, payload and every attempt (status, error, duration)."""
    with reader.open() as (principal, session):
        page = store.list_deliveries(
            session, principal.team_id, webhook_id, limit=limit, cursor=cursor
        )
        return WebhookDeliveryPageOut(
            items=[WebhookDeliveryOut.of(d) for d in page.items], next_cursor=page.next_cursor
        )
