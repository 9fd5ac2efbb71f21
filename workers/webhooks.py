"""Celery tasks of outgoing webhooks: deliver one event (retried with backoff), sweep the outbox.

``deliver_webhook(delivery_id)`` makes one HTTP attempt (``services.webhooks.attempt_delivery``)
and, when it failed and attempts remain, retries itself after the delay the attempt recorded
(``webhook_retry_backoff_s`` doubling, at most 1 h). The database holds the truth (attempt count,
next time, the log); a retry whose message is lost is sent again by ``sweep_webhooks``, which
Celery beat runs every ``webhook_sweep_interval_s``. Importing this module installs the sender
that queues a task for every delivery the moment its job's transaction commits.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from celery import Task

from services.storage.webhooks import set_delivery_sender
from services.webhooks import attempt_delivery, overdue_delivery_ids
from workers.app import TASK_DELIVER_WEBHOOK, TASK_SWEEP_WEBHOOKS, app
from workers.runtime import get_services

log = logging.getLogger(__name__)
# A sweep leaves alone what a task's own countdown is about to retry (seconds).
SWEEP_GRACE_S = 15.0


@app.task(bind=True, name=TASK_DELIVER_WEBHOOK, acks_late=True, reject_on_worker_lost=True)
def deliver_webhook(self: Task, delivery_id: int) -> dict[str, Any]:
    """One delivery attempt; on failure with attempts left, retry after the recorded delay."""
    services = get_services()
    outcome = attempt_delivery(services.database, services.settings, delivery_id)
    log.info("webhook delivery %s: %s %s", delivery_id, outcome.status, outcome.detail)
    if outcome.retry_in_s is not None:
        # The attempt count lives in the database (webhook_max_attempts); Celery's own cap is off.
        raise self.retry(countdown=outcome.retry_in_s, max_retries=None)
    return {"delivery_id": delivery_id, "status": outcome.status, "code": outcome.status_code}


@app.task(name=TASK_SWEEP_WEBHOOKS)
def sweep_webhooks() -> int:
    """Queue every pending delivery that is overdue (lost messages, API-side events)."""
    services = get_services()
    ids = overdue_delivery_ids(services.database, overdue_s=SWEEP_GRACE_S)
    send_deliveries(ids)
    return len(ids)


def send_deliveries(delivery_ids: Sequence[int]) -> None:
    """Queue one ``deliver_webhook`` task per delivery (cpu queue)."""
    for delivery_id in delivery_ids:
        deliver_webhook.apply_async(args=(delivery_id,), queue="cpu", routing_key="cpu")


set_delivery_sender(send_deliveries)
