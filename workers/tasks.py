"""The Celery tasks: one phase of a job, the reaper, archive validation.

Each task is a thin shell over `services.pipeline.jobs`; what a task adds is Celery's part:
retries with exponential backoff for transient errors (never for bad input), the time limits,
and per-process setup (torch threads).
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from celery.signals import celeryd_after_setup, worker_process_init

from services.pipeline.jobs import (
    TransientPhaseError,
    give_up,
    is_transient_error,
    reap_stale_stages,
    run_job_phase,
    stage_time_limit_s,
    validate_submission_archive,
)
from services.settings import Settings, apply_thread_settings, get_settings
from workers.app import TASK_REAP, TASK_RUN_PHASE, TASK_VALIDATE_ARCHIVE, app
from workers.runtime import get_services, set_node_name

log = logging.getLogger(__name__)
MAX_RETRY_DELAY_S = 600.0


def retry_delay_s(settings: Settings, retries: int, *, requeued: bool = True) -> float:
    """Backoff before retry number ``retries + 1`` (seconds): doubling, capped at 10 minutes.

    When the stage could not be put back to ``queued`` (database unreachable) the retry also
    waits until its heartbeat is stale, so that the retry may take the stage over.
    """
    delay = min(settings.task_retry_backoff_s * 2.0**retries, MAX_RETRY_DELAY_S)
    return delay if requeued else delay + settings.stage_stale_after_s


@celeryd_after_setup.connect
def _record_node_name(sender: str, **_: Any) -> None:
    set_node_name(sender)


@worker_process_init.connect
def _init_worker_process(**_: Any) -> None:
    apply_thread_settings(get_settings())


@app.task(bind=True, name=TASK_RUN_PHASE, acks_late=True, reject_on_worker_lost=True)
def run_phase(self: Task, job_id: int, phase: str) -> dict[str, Any]:
    """Run one phase of job ``job_id`` (idempotent; see services/pipeline/jobs.py)."""
    services = get_services()
    settings = services.settings
    try:
        outcome = run_job_phase(
            services, job_id, phase, time_limit_s=stage_time_limit_s(settings, phase)
        )
    except TransientPhaseError as exc:
        retries = self.request.retries or 0
        if retries >= settings.task_max_retries:
            reason = f"phase {phase} gave up after {retries} retries: {exc}"
            try:
                give_up(services, job_id, phase, reason)
            except Exception as record_exc:  # the reaper will fail it when attempts run out
                log.error("could not record giving up on job %s: %s", job_id, record_exc)
            raise
        countdown = retry_delay_s(settings, retries, requeued=exc.requeued)
        log.warning("job %s phase %s: %s; retry in %.0f s", job_id, phase, exc, countdown)
        raise self.retry(
            exc=exc, countdown=countdown, max_retries=settings.task_max_retries
        ) from exc
    return outcome.as_dict()


@app.task(name=TASK_REAP)
def reap() -> dict[str, Any]:
    """One pass of the reaper (scheduled by Celery beat every ``reaper_interval_s``)."""
    report = reap_stale_stages(get_services())
    return {
        "requeued": report.requeued,
        "failed": report.failed,
        "cancelled": report.cancelled,
        "resent": report.resent,
    }


@app.task(bind=True, name=TASK_VALIDATE_ARCHIVE, acks_late=True, reject_on_worker_lost=True)
def validate_archive(self: Task, submission_id: int) -> str:
    """Validate an uploaded archive submission; accept or reject it."""
    services = get_services()
    settings = services.settings
    try:
        return validate_submission_archive(services, submission_id)
    except Exception as exc:
        if is_transient_error(exc) and (self.request.retries or 0) < settings.task_max_retries:
            raise self.retry(
                exc=exc,
                countdown=retry_delay_s(settings, self.request.retries or 0),
                max_retries=settings.task_max_retries,
            ) from exc
        raise
