"""The outbox's senders on Celery: one per topic, each publishing a task by name.

Every process that writes outbox messages installs these at start-up
(:func:`workers.app.install_outbox_senders`): the workers and beat (Celery signals in
``workers/app.py``), the API (its lifespan, api/app.py) and the embedded demo. A sender returns
once the broker accepted the message and raises otherwise; the outbox marks a message sent only
after that. Phase tasks carry deterministic ids (``task_id_for``), which lets a cancel revoke them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from celery import Celery

from services.platform.jobs.phase_queues import (
    PHASE_QUEUES,
    stage_hard_time_limit_s,
    stage_time_limit_s,
    task_id_for,
    task_ids_of_job,
)
from services.platform.outbox import (
    DELIVER_WEBHOOK,
    REVOKE_JOB,
    RUN_PHASE,
    TRAIN_PROTOCOL_ASR,
    VALIDATE_ARCHIVE,
    MessageSender,
)
from services.settings import Settings
from workers.names import (
    TASK_DELIVER_WEBHOOK,
    TASK_RUN_PHASE,
    TASK_TRAIN_PROTOCOL_ASR,
    TASK_VALIDATE_ARCHIVE,
)

log = logging.getLogger(__name__)


def celery_senders(app: Celery, settings: Settings) -> dict[str, MessageSender]:
    """The outbox senders publishing through ``app`` (time limits from ``settings``)."""

    def send_task(name: str, args: tuple[Any, ...], **options: Any) -> None:
        # Through the registered task, so eager mode (task_always_eager) runs it inline.
        app.tasks[name].apply_async(args=args, **options)

    def run_phase(payload: Mapping[str, Any]) -> None:
        job_id, phase = int(payload["job_id"]), str(payload["phase"])
        queue = PHASE_QUEUES[phase]  # type: ignore[index]
        send_task(
            TASK_RUN_PHASE,
            (job_id, phase),
            queue=queue,
            routing_key=queue,
            task_id=task_id_for(job_id, phase),
            soft_time_limit=stage_time_limit_s(settings, phase),
            time_limit=stage_hard_time_limit_s(settings, phase),
        )

    def revoke_job(payload: Mapping[str, Any]) -> None:
        # Best effort (a worker that is down misses the broadcast): a task that still runs finds
        # the job cancelled when it claims its stage or reports progress, and stops.
        job_id = int(payload["job_id"])
        try:
            app.control.revoke(task_ids_of_job(job_id))
        except Exception as exc:
            log.warning("could not revoke the tasks of job %s: %s", job_id, exc)

    def validate_archive(payload: Mapping[str, Any]) -> None:
        send_task(
            TASK_VALIDATE_ARCHIVE, (int(payload["submission_id"]),), queue="cpu", routing_key="cpu"
        )

    def deliver_webhook(payload: Mapping[str, Any]) -> None:
        send_task(
            TASK_DELIVER_WEBHOOK, (int(payload["delivery_id"]),), queue="cpu", routing_key="cpu"
        )

    def train_protocol_asr(payload: Mapping[str, Any]) -> None:
        # The utility phase's time limits: the same training, earlier.
        send_task(
            TASK_TRAIN_PROTOCOL_ASR,
            (int(payload["protocol_id"]),),
            queue="gpu",
            routing_key="gpu",
            soft_time_limit=stage_time_limit_s(settings, "utility"),
            time_limit=stage_hard_time_limit_s(settings, "utility"),
        )

    return {
        RUN_PHASE: run_phase,
        REVOKE_JOB: revoke_job,
        VALIDATE_ARCHIVE: validate_archive,
        DELIVER_WEBHOOK: deliver_webhook,
        TRAIN_PROTOCOL_ASR: train_protocol_asr,
    }
