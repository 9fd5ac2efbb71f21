"""The bodies of the job tasks: one phase of a job, the reaper, archive validation.

Plain functions, registered on the Celery app by name in ``workers/app.py`` (this module imports
no app). Each is a thin shell over ``services.platform``; what a task adds is Celery's part:
retries with exponential backoff for transient errors (never for bad input) and the time limits.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task

from services.platform.archives import validate_submission_archive
from services.platform.jobs import (
    TransientPhaseError,
    give_up,
    reap_archive_uploads,
    reap_stale_stages,
    run_job_phase,
    stage_time_limit_s,
)
from services.platform.jobs.protocol_asr import (
    TransientProtocolAsrError,
    give_up_protocol_asr,
    reap_protocol_asr,
)
from services.platform.jobs.protocol_asr import train_protocol_asr as train_asr_of_protocol
from services.platform.outbox import prune_sent, relay_pass
from services.platform.webhooks import release_due_events
from services.settings import Settings
from workers.runtime import get_services

log = logging.getLogger(__name__)
MAX_RETRY_DELAY_S = 600.0


def retry_delay_s(settings: Settings, retries: int, *, requeued: bool = True) -> float:
    """Backoff before retry number ``retries + 1`` (seconds): doubling, capped at 10 minutes.

    When the stage could not be put back to ``queued`` (database unreachable) the retry also
    waits until its heartbeat is stale, so that the retry may take the stage over.
    """
    delay = min(settings.task_retry_backoff_s * 2.0**retries, MAX_RETRY_DELAY_S)
    return delay if requeued else delay + settings.stage_stale_after_s


def run_phase(self: Task, job_id: int, phase: str) -> dict[str, Any]:
    """Run one phase of job ``job_id`` (idempotent; see services/platform/jobs/runner.py)."""
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


def reap() -> dict[str, Any]:
    """One pass of the reaper (Celery beat, every ``reaper_interval_s``: stages, archive uploads,
    protocol ASR trainings past their time limit), then of the outbox relay (a fallback for
    beat's relay thread); sent outbox messages older than a day go."""
    services = get_services()
    report = reap_stale_stages(services)
    archives = reap_archive_uploads(services)
    protocol_asrs = reap_protocol_asr(services)
    revealed = release_due_events(services.database.engine)
    relayed = relay_pass(
        services.database.engine, retry_after_s=services.settings.outbox_resend_after_s
    )
    prune_sent(services.database.engine)
    return {
        "requeued": report.requeued,
        "failed": report.failed,
        "cancelled": report.cancelled,
        "resent": report.resent,
        "archives_rejected_stuck": archives.rejected_stuck,
        "uploads_aborted": len(archives.aborted_uploads),
        "protocol_asr_failed": protocol_asrs,
        "outbox_sent": len(relayed.sent),
        "revealed_phases": sorted(revealed),
    }


def validate_archive(self: Task, submission_id: int) -> str:
    """Validate an uploaded archive submission; accept or reject it."""
    services = get_services()
    settings = services.settings
    try:
        return validate_submission_archive(services, submission_id)
    except Exception as exc:
        if services.is_transient(exc) and (self.request.retries or 0) < settings.task_max_retries:
            raise self.retry(
                exc=exc,
                countdown=retry_delay_s(settings, self.request.retries or 0),
                max_retries=settings.task_max_retries,
            ) from exc
        raise


def train_protocol_asr(self: Task, protocol_id: int) -> str:
    """Train the utility ASR of a newly registered protocol (see services/platform/protocols/
    asr.py); lost connections are retried with the phases' backoff."""
    services = get_services()
    settings = services.settings
    try:
        return train_asr_of_protocol(services, protocol_id)
    except TransientProtocolAsrError as exc:
        retries = self.request.retries or 0
        if retries >= settings.task_max_retries:
            reason = f"gave up after {retries} retries: {exc}"
            try:  # failed: registering the protocol again queues it again
                give_up_protocol_asr(services, protocol_id, reason)
            except Exception as record_exc:
                log.error("could not record giving up on protocol %s: %s", protocol_id, record_exc)
            raise
        countdown = retry_delay_s(settings, retries)
        log.warning("protocol %s ASR: %s; retry in %.0f s", protocol_id, exc, countdown)
        raise self.retry(
            exc=exc, countdown=countdown, max_retries=settings.task_max_retries
        ) from exc
