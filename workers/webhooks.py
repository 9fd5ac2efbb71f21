"""The bodies of the webhook tasks: deliver one event (retried with backoff), sweep lost retries.

``deliver_webhook(delivery_id)`` makes one HTTP attempt
(``services.platform.webhooks.attempt_delivery``) and, when it failed and attempts remain,
retries itself after the delay the attempt recorded (``webhook_retry_backoff_s`` doubling, at
most 1 h). The database holds the truth (attempt count, next time, the log); a retry whose message
is lost is queued again by ``sweep_webhooks`` (Celery beat, every ``webhook_sweep_interval_s``).
The first attempt of every event is queued through the outbox when its job's transaction commits.
Registered on the Celery app by name in ``workers/app.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task

from services.platform.webhooks import attempt_delivery, queue_overdue_deliveries
from workers.runtime import get_services

log = logging.getLogger(__name__)
# A sweep leaves alone what a task's own countdown is about to retry (seconds).
SWEEP_GRACE_S = 15.0


def deliver_webhook(self: Task, delivery_id: int) -> dict[str, Any]:
    """One delivery attempt; on failure with attempts left, retry after the recorded delay."""
    services = get_services()
    outcome = attempt_delivery(services.database, services.settings, delivery_id)
    log.info("webhook delivery %s: %s %s", delivery_id, outcome.status, outcome.detail)
    if outcome.retry_in_s is not None:
        # The attempt count lives in the database (webhook_max_attempts); Celery's own cap is off.
        raise self.retry(countdown=outcome.retry_in_s, max_retries=None)
    return {"delivery_id": delivery_id, "status": outcome.status, "code": outcome.status_code}


def sweep_webhooks() -> int:
    """Queue (outbox) every pending delivery that is overdue: a retry whose message was lost."""
    services = get_services()
    with services.database.session_scope() as session:
        ids = queue_overdue_deliveries(session, overdue_s=SWEEP_GRACE_S)
    return len(ids)
