"""How the API (and the workers themselves) hand work to Celery.

The API calls these after its transaction committed: ``enqueue_job`` when a job was created,
``cancel_job`` after it marked a job cancelled, ``enqueue_archive_validation`` after an archive
upload. Each phase task has a deterministic id (``jobs.task_id_for``), which is what lets
``cancel_job`` revoke a job's tasks without storing task ids.
"""

from __future__ import annotations

import logging

from services.pipeline.jobs import (
    PHASE_QUEUES,
    PHASES,
    cancel_unstarted_stages,
    stage_hard_time_limit_s,
    stage_time_limit_s,
    start_job,
    task_id_for,
)

log = logging.getLogger(__name__)


def send_phase(job_id: int, phase: str) -> None:
    """Send the task of one phase to its queue, with that phase's soft and hard time limits."""
    from workers.runtime import get_services
    from workers.tasks import run_phase

    settings = get_services().settings
    run_phase.apply_async(
        args=(job_id, phase),
        queue=PHASE_QUEUES[phase],
        routing_key=PHASE_QUEUES[phase],
        task_id=task_id_for(job_id, phase),
        soft_time_limit=stage_time_limit_s(settings, phase),
        time_limit=stage_hard_time_limit_s(settings, phase),
    )


def enqueue_job(job_id: int) -> None:
    """Start a committed job: send the task of its first unfinished phase."""
    from workers.runtime import get_services

    phase = start_job(get_services(), job_id)
    log.info("job %s: sent phase %s", job_id, phase)


def cancel_job(job_id: int) -> None:
    """Revoke a cancelled job's tasks; a running phase notices the state and stops itself.

    Revocation is best effort (a worker that is down misses the broadcast): a task that still
    runs finds the job cancelled when it claims its stage and does nothing.
    """
    from workers.app import app
    from workers.runtime import get_services

    try:
        app.control.revoke([task_id_for(job_id, phase) for phase in PHASES])
    except Exception as exc:
        log.warning("could not revoke the tasks of job %s: %s", job_id, exc)
    cancel_unstarted_stages(get_services().database, job_id)


def enqueue_archive_validation(submission_id: int) -> None:
    """Queue the validation of an uploaded archive submission (cpu queue)."""
    from workers.tasks import validate_archive

    validate_archive.apply_async(args=(submission_id,), queue="cpu", routing_key="cpu")
