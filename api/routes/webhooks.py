"""Outgoing webhooks: a team registers URLs that receive its job events (docs/api.md "Webhooks").

Events: ``job.succeeded``, ``job.failed``, ``job.cancelled``, signed the Standard Webhooks way
(``services/platform/webhooks/``) and retried with exponential backoff by a Celery task
(``workers/webhooks.py``). The signing secret is returned once, by the create call.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Response, status

from api.deps import ContextDep, ReadReader, SubmitPrincipal
from api.routes.common import errors, scope
from api.schemas import (
    Cursor,
    DbId,
    WebhookCreate,
    WebhookCreated,
    WebhookDeliveryOut,
    WebhookDeliveryPageOut,
    WebhookOut,
)
from services.platform import webhooks as store

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


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
            allow_private=context.settings.outbound_allow_private_hosts,
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
