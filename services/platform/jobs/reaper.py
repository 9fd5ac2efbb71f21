"""The reaper: rescues stages whose worker died and tasks that were lost (run periodically),
and sweeps archive uploads: archives stuck validating and abandoned presigned uploads.

No Celery here: Celery beat schedules the task that calls :func:`reap_stale_stages` and
:func:`reap_archive_uploads`; the tasks it re-queues go out through the outbox like every other.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from services.platform.archives import abort_stale_uploads, reject_stuck_validations
from services.platform.jobs import records as job_records
from services.platform.jobs.host import JobServices
from services.platform.jobs.phase_queues import stage_hard_time_limit_s
from services.platform.jobs.runner import fail_job
from services.platform.jobs.service import queue_phase
from services.storage.types import utc_now
from services.vocab import TERMINAL_STATES, RunState


@dataclass
class ReapReport:
    """What one reaper pass did (lists of ``(job_id, stage name)``)."""

    requeued: list[tuple[int, str]] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    cancelled: list[tuple[int, str]] = field(default_factory=list)
    resent: list[tuple[int, str]] = field(default_factory=list)


def reap_stale_stages(services: JobServices, *, now: dt.datetime | None = None) -> ReapReport:
    """Rescue stages whose worker died, and tasks that were lost; one transaction.

    - A ``running`` stage without heartbeat for ``stage_stale_after_s`` or past its hard time
      limit goes back to ``queued`` (and its task is queued again) while attempts remain
      (``stage_max_attempts``), else the stage and job fail with a reason the user sees.
    - A ``queued`` stage whose earlier stages all succeeded and whose task was sent more than
      ``stage_requeue_after_s`` ago (or never) has its task queued again: a message the broker
      accepted and then lost (a task the outbox could not send is re-sent by the outbox relay
      within seconds). Duplicates are harmless: a claimed stage is skipped.
    - Unfinished stages of finished (cancelled/failed) jobs are cancelled.
    """
    settings = services.settings
    now = now or utc_now()
    report = ReapReport()
    terminal = {s.value for s in TERMINAL_STATES}
    with services.database.session_scope() as session:
        candidates = job_records.list_stages_in_states(
            session, [RunState.RUNNING.value, RunState.QUEUED.value]
        )
        for candidate in candidates:
            job = job_records.get_job(session, candidate.job_id, lock=True)
            stage = job_records.get_stage_for_update(session, candidate.id)
            ident = (job.id, stage.name)
            if stage.state in terminal:
                continue
            if job.state in terminal:
                job_records.transition_stage(
                    session, stage.id, RunState.CANCELLED.value, error=f"job {job.state}"
                )
                report.cancelled.append(ident)
                continue
            if stage.state == RunState.RUNNING.value:
                beat = stage.heartbeat_at or stage.started_at or now
                silent_s = (now - beat).total_seconds()
                started = stage.started_at or now
                ran_s = (now - started).total_seconds()
                hard_limit = stage_hard_time_limit_s(settings, stage.name)
                if silent_s >= settings.stage_stale_after_s:
                    reason = (
                        f"worker {stage.worker_host} lost: no heartbeat for {silent_s:.0f} s"
                        f" (limit {settings.stage_stale_after_s:.0f} s)"
                    )
                elif ran_s >= hard_limit:
                    reason = f"stage {stage.name} exceeded its time limit of {hard_limit:.0f} s"
                else:
                    continue
                if stage.attempts < settings.stage_max_attempts and "time limit" not in reason:
                    job_records.transition_stage(
                        session, stage.id, RunState.QUEUED.value, error=reason
                    )
                    queue_phase(
                        session, job_id=job.id, stage_id=stage.id, phase=stage.name, now=now
                    )
                    report.requeued.append(ident)
                else:
                    final = f"stage {stage.name} failed after {stage.attempts} attempt(s): {reason}"
                    fail_job(session, job, stage, final)
                    report.failed.append(ident)
                continue
            # queued: queue again a task that was lost (or never sent) once its turn has come
            earlier = [s for s in job.stages if s.position < stage.position]
            if any(s.state != RunState.SUCCEEDED.value for s in earlier):
                continue
            sent = stage.heartbeat_at
            if sent is None or (now - sent).total_seconds() >= settings.stage_requeue_after_s:
                queue_phase(session, job_id=job.id, stage_id=stage.id, phase=stage.name, now=now)
                report.resent.append(ident)
    return report


@dataclass
class ArchiveReapReport:
    """What one archive sweep did: submissions rejected as stuck, uploads aborted (blob keys)."""

    rejected_stuck: list[int] = field(default_factory=list)
    aborted_uploads: list[str] = field(default_factory=list)


def reap_archive_uploads(
    services: JobServices, *, now: dt.datetime | None = None
) -> ArchiveReapReport:
    """Reject archives validating for longer than ``archive_validation_timeout_s`` and abort
    presigned uploads abandoned past their ticket's expiry (``upload_abort_grace_s``)."""
    now = now or utc_now()
    rejected = reject_stuck_validations(services, now=now)
    aborted = abort_stale_uploads(services.database, services.store, services.settings, now=now)
    return ArchiveReapReport(rejected_stuck=rejected, aborted_uploads=aborted.aborted)
