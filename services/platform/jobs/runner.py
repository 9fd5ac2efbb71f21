"""One phase of a job on a worker: claim, execute, complete.

A job (``jobs`` row) is an evaluation config plus the submission it evaluates. Its stages are the
pipeline's phases (``services/pipeline/phases.py``): each runs as one task on the queue that
suits it (``phases.PHASE_QUEUES``). A task calls :func:`run_job_phase`, which

1. **claims** the phase's stage in one transaction (row locks): skips a job that is finished or
   cancelled, a stage that already succeeded or is running elsewhere with a fresh heartbeat, and
   takes over a stage whose worker went silent (counting attempts);
2. **executes** ``EvaluationRun(cfg, job_dir).run(stop_after=phase)`` with a
   :class:`SyncedStageRunner`, so earlier phases' stages are reused (downloaded from the blob store
   when this host lacks them) and new ones uploaded; a :class:`StageMonitor` thread writes the
   heartbeat, progress and log tail (throttled) and watches for cancellation;
3. **completes** in one transaction: stage succeeded (artifact keys, input hash), and for the
   ``report`` phase the results and artifacts replace any earlier set and the job succeeds;
   otherwise the next phase is queued, its task written to the outbox in the same transaction
   (sent after the commit, or by the outbox relay if the broker is down then).

Errors: :class:`InvalidInputError` fails the job with its message (no retry); transient errors
(lost connection to the database, broker or blob store, a failing container engine:
``JobServices.transient_errors``) put the stage back to ``queued``, give the run's attempt back
(the caller's retry counter counts transient retries; ``attempts`` counts lost workers) and raise
:class:`TransientPhaseError` for the caller to retry with backoff; the user sees which service
failed (``transient_summary``), the log the details. Anything else fails the job with an
"internal error" message and propagates.
The reaper (``reaper.py``) rescues stages whose worker died. No Celery here.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from services.anonymizers.container_sandbox import ContainerSandbox
from services.anonymizers.kinds.archive import ArchiveAnonymizerConfig
from services.errors import ConfigError, InvalidInputError
from services.pipeline.config import EvaluationConfig
from services.pipeline.phases import PHASES
from services.pipeline.stage_versions import current_evaluator
from services.pipeline.workspace import StageWorkspace, SyncedStageRunner, stage_index_key
from services.platform import results as result_records
from services.platform.archives.service import prepare_archive
from services.platform.jobs import records as job_records
from services.platform.jobs.config import run_config, stored_evaluation_config
from services.platform.jobs.host import JobServices, transient_summary
from services.platform.jobs.monitor import JobCancelledError, StageMonitor, StageSupersededError
from services.platform.jobs.phase_queues import job_stage_names, next_phase, phase_of_stage
from services.platform.jobs.service import queue_phase
from services.platform.jobs.stage_claims import DatabaseStageClaims
from services.platform.results.document import (
    report_summary_from_document,
    result_rows_from_document,
    upload_report,
)
from services.storage.models import Job, Stage
from services.storage.types import utc_now
from services.vocab import TERMINAL_STATES, RunState

log = logging.getLogger(__name__)

_TERMINAL = frozenset(s.value for s in TERMINAL_STATES)


class TransientPhaseError(Exception):
    """A phase hit a transient error (connection lost); retry it later.

    ``requeued``: the stage is back to ``queued`` (else it is still ``running`` in the DB and a
    retry must wait until its heartbeat is stale before taking it over).
    """

    def __init__(self, message: str, *, requeued: bool) -> None:
        super().__init__(message)
        self.requeued = requeued


@dataclass(frozen=True)
class PhaseOutcome:
    """What one delivery of a phase task did.

    ``status``: succeeded | skipped | failed | cancelled | superseded; ``detail`` says why.
    """

    job_id: int
    phase: str
    status: str
    detail: str = ""
    next_phase: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (the Celery task's return value)."""
        return {
            "job_id": self.job_id,
            "phase": self.phase,
            "status": self.status,
            "detail": self.detail,
            "next_phase": self.next_phase,
        }


@dataclass(frozen=True)
class PhaseClaim:
    """A stage this worker took: its id, the attempt number and the job's stored config."""

    stage_id: int
    attempt: int
    config: EvaluationConfig
    archive_sha256: str | None = None


def stage_of(session: Session, job_id: int, phase: str) -> Stage:
    """The job's stage of ``phase``, row-locked (created when missing)."""
    stages = job_records.ensure_stages(session, job_id, job_stage_names())
    by_name = {s.name: s for s in stages}
    return job_records.get_stage_for_update(session, by_name[phase].id)


def fail_job(session: Session, job: Job, stage: Stage | None, reason: str) -> None:
    """Fail ``stage`` and ``job`` with ``reason``; cancel the job's other queued stages."""
    if stage is not None and stage.state not in _TERMINAL:
        job_records.transition_stage(session, stage.id, RunState.FAILED.value, error=reason)
    if job.state not in _TERMINAL:
        job_records.transition_job(session, job.id, RunState.FAILED.value, error_message=reason)
    for other in job.stages:
        if other.state == RunState.QUEUED.value:
            job_records.transition_stage(session, other.id, RunState.CANCELLED.value)


def claim_phase(services: JobServices, job_id: int, phase: str) -> PhaseClaim | PhaseOutcome:
    """Take the stage of ``phase`` for this worker (one transaction), or say why not."""
    settings = services.settings
    now = utc_now()
    with services.database.session_scope() as session:
        job = job_records.get_job(session, job_id, lock=True)
        if job.state in _TERMINAL:
            return PhaseOutcome(job_id, phase, "skipped", f"job is {job.state}")
        stage = stage_of(session, job_id, phase)
        earlier = [s for s in job.stages if s.position < stage.position]
        pending = [s.name for s in earlier if s.state != RunState.SUCCEEDED.value]
        if pending:
            return PhaseOutcome(job_id, phase, "skipped", f"waiting for {', '.join(pending)}")
        if stage.state in _TERMINAL:
            return PhaseOutcome(job_id, phase, "skipped", f"stage is {stage.state}")
        if stage.state == RunState.RUNNING.value:
            beat = stage.heartbeat_at or stage.started_at or now
            silent_s = (now - beat).total_seconds()
            if silent_s < settings.stage_stale_after_s:
                return PhaseOutcome(
                    job_id, phase, "skipped", f"running on {stage.worker_host} (duplicate task)"
                )
            if stage.attempts >= settings.stage_max_attempts:
                reason = (
                    f"stage {phase} failed: worker {stage.worker_host} lost (no heartbeat for"
                    f" {silent_s:.0f} s) after {stage.attempts} attempts"
                )
                fail_job(session, job, stage, reason)
                return PhaseOutcome(job_id, phase, "failed", reason)
            job_records.transition_stage(
                session,
                stage.id,
                RunState.QUEUED.value,
                error=f"taken over: worker {stage.worker_host} silent for {silent_s:.0f} s",
            )
        try:
            config = stored_evaluation_config(job)
        except InvalidInputError as exc:
            fail_job(session, job, stage, str(exc))
            return PhaseOutcome(job_id, phase, "failed", str(exc))
        job_records.transition_stage(
            session, stage.id, RunState.RUNNING.value, worker_host=services.worker_host, now=now
        )
        if job.state == RunState.QUEUED.value:
            job_records.transition_job(session, job_id, RunState.RUNNING.value, now=now)
        return PhaseClaim(stage.id, stage.attempts, config, job.submission.archive_sha256)


def _still_ours(stage: Stage, claim: PhaseClaim) -> bool:
    return stage.state == RunState.RUNNING.value and stage.attempts == claim.attempt


def _input_hash(stage_keys: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(sorted(stage_keys)).encode()).hexdigest()


@dataclass(frozen=True)
class _Finished:
    """What a phase produced, to be recorded by :func:`complete_phase`."""

    artifact_keys: dict[str, str]
    input_hash: str
    results: list[result_records.ResultRow] | None = None
    artifacts: list[result_records.ArtifactRecord] | None = None
    report: result_records.ReportSummary | None = None


def _execute(
    services: JobServices, job_id: int, phase: str, claim: PhaseClaim, monitor: StageMonitor
) -> _Finished:
    # Deferred: the evaluation imports torch, which the Celery app and its health checks avoid.
    from services.pipeline.evaluation import EvaluationRun

    stages_dir = services.stages_dir()
    job_dir = services.job_dir(job_id)
    workspace = StageWorkspace(services.store, stages_dir)
    archive_folder = None
    if isinstance(claim.config.anonymizer, ArchiveAnonymizerConfig):
        archive_key = str(claim.config.anonymizer.archive)
        archive_folder = prepare_archive(workspace, archive_key, claim.archive_sha256)
    config = run_config(claim.config, services.settings, archive_folder=archive_folder)
    # Cross-host claims in the shared database: each stage key is computed by one worker.
    claims = DatabaseStageClaims.from_settings(services.database, services.settings)
    runner = SyncedStageRunner(stages_dir, workspace, before_stage=monitor.check, claims=claims)
    run = EvaluationRun(
        config,
        job_dir,
        cache_dir=services.settings.resolved_cache_dir(),
        progress=monitor.report,
        sandbox=ContainerSandbox.from_settings(services.settings),
        runner=runner,
    )
    monitor.report(phase, 0.0, f"phase {phase} started on {services.worker_host}")
    document = run.run(stop_after=phase)  # type: ignore[arg-type]
    monitor.check()
    mine = [o for o in runner.log if phase_of_stage(o.stage) == phase]
    artifact_keys = {f"{o.stage}/{o.key}": stage_index_key(o.stage, o.key) for o in mine}
    input_hash = _input_hash(f"{o.stage}/{o.key}" for o in mine)
    results = artifacts = report = None
    if phase == PHASES[-1]:
        assert document is not None  # what results.json holds (write_report returns it)
        results = result_rows_from_document(document)
        report = report_summary_from_document(document)  # trust mark, DET points
        artifacts = upload_report(services.store, job_id, job_dir)
        artifact_keys = {**artifact_keys, "results": f"jobs/{job_id}/results.json"}
    return _Finished(artifact_keys, input_hash, results, artifacts, report)


def complete_phase(
    services: JobServices,
    job_id: int,
    phase: str,
    claim: PhaseClaim,
    *,
    artifact_keys: Mapping[str, str],
    input_hash: str,
    results: list[result_records.ResultRow] | None = None,
    artifacts: list[result_records.ArtifactRecord] | None = None,
    report: result_records.ReportSummary | None = None,
) -> PhaseOutcome:
    """Record a finished phase (one transaction) and queue the next one (outbox)."""
    following = next_phase(phase)
    with services.database.session_scope() as session:
        job = job_records.get_job(session, job_id, lock=True)
        stage = job_records.get_stage_for_update(session, claim.stage_id)
        if job.state == RunState.CANCELLED.value:
            if stage.state == RunState.RUNNING.value:
                job_records.transition_stage(session, stage.id, RunState.CANCELLED.value)
            return PhaseOutcome(job_id, phase, "cancelled", "job was cancelled")
        if not _still_ours(stage, claim):
            return PhaseOutcome(
                job_id, phase, "superseded", f"stage is {stage.state}, attempt {stage.attempts}"
            )
        job_records.transition_stage(
            session,
            stage.id,
            RunState.SUCCEEDED.value,
            artifact_keys=dict(artifact_keys),
            input_hash=input_hash,
        )
        if phase == PHASES[-1]:
            result_records.replace_job_results(
                session,
                job_id,
                results=results or [],
                artifacts=artifacts or [],
                stage_id=stage.id,
                report=report,
            )
            # What actually ran: this worker's code, which may differ from the API's at creation.
            job.evaluator = current_evaluator(job.config_hash)
            job_records.transition_job(session, job_id, RunState.SUCCEEDED.value)
            following = None
        elif following is not None:
            nxt = job_records.get_stage(session, job_id, following)
            if nxt.state == RunState.QUEUED.value:
                queue_phase(session, job_id=job_id, stage_id=nxt.id, phase=following)
            else:
                following = None
    return PhaseOutcome(job_id, phase, "succeeded", next_phase=following)


def _finish_with(
    services: JobServices, job_id: int, claim: PhaseClaim, state: RunState, reason: str
) -> None:
    with services.database.session_scope() as session:
        job = job_records.get_job(session, job_id, lock=True)
        stage = job_records.get_stage_for_update(session, claim.stage_id)
        if not _still_ours(stage, claim):
            return
        if state == RunState.FAILED:
            fail_job(session, job, stage, reason)
        else:
            job_records.transition_stage(session, stage.id, state.value, error=reason or None)


def _requeue(
    services: JobServices, job_id: int, phase: str, claim: PhaseClaim, reason: str, *, send: bool
) -> bool:
    """Put our running stage back to queued; ``send``: also queue its task (outbox).

    False when the database is unreachable.
    """
    try:
        with services.database.session_scope() as session:
            job_records.get_job(session, job_id, lock=True)
            stage = job_records.get_stage_for_update(session, claim.stage_id)
            if not _still_ours(stage, claim):
                return True
            job_records.transition_stage(session, stage.id, RunState.QUEUED.value, error=reason)
            if send:
                queue_phase(session, job_id=job_id, stage_id=stage.id, phase=phase)
            else:
                # A transient error is not a lost worker: its retries are counted by the task's
                # own retry counter (UNMASK_TASK_MAX_RETRIES), so this run gives its attempt back
                # to the lost-worker budget (UNMASK_STAGE_MAX_ATTEMPTS). Reusing the number as a
                # fencing token is safe: this worker stopped executing (its monitor is closed)
                # and holds the row lock, so no write of this claim can follow the next one's.
                job_records.release_stage_attempt(session, stage.id)
                # The caller's task retry re-delivers it; "sent at" keeps the reaper away.
                job_records.mark_stage_enqueued(session, stage.id)
        return True
    except Exception as exc:
        log.warning("could not requeue stage %s: %s", claim.stage_id, exc)
        return False


def give_up(services: JobServices, job_id: int, phase: str, reason: str) -> None:
    """Fail a job whose phase kept hitting transient errors (retries exhausted)."""
    with services.database.session_scope() as session:
        job = job_records.get_job(session, job_id, lock=True)
        stage = stage_of(session, job_id, phase)
        if job.state not in _TERMINAL:
            fail_job(session, job, stage, reason)


def run_job_phase(
    services: JobServices, job_id: int, phase: str, *, time_limit_s: float | None = None
) -> PhaseOutcome:
    """Run one phase of a job (claim, execute, complete); see the module docstring.

    Raises :class:`TransientPhaseError` for a retryable failure; unexpected errors fail the job
    and propagate. ``time_limit_s`` only words the message when the phase is stopped by a time
    limit (seconds).
    """
    if phase not in PHASES:
        raise ConfigError(f"unknown phase {phase!r}; one of {', '.join(PHASES)}")
    try:
        claimed = claim_phase(services, job_id, phase)
    except Exception as exc:
        if services.is_transient(exc):  # nothing changed in the DB: the stage is still queued
            log.warning("job %s phase %s: transient error claiming: %r", job_id, phase, exc)
            reason = f"transient error claiming phase {phase}: {transient_summary(exc)}"
            raise TransientPhaseError(reason, requeued=True) from exc
        raise
    if isinstance(claimed, PhaseOutcome):
        log.info("job %s phase %s: %s (%s)", job_id, phase, claimed.status, claimed.detail)
        return claimed
    monitor = StageMonitor(
        services.database,
        job_id,
        claimed.stage_id,
        phase,
        heartbeat_interval_s=services.settings.heartbeat_interval_s,
    )
    try:
        # The heartbeat thread stops before the completing transaction, so it cannot write
        # progress after the stage is marked succeeded.
        with monitor:
            finished = _execute(services, job_id, phase, claimed, monitor)
        return complete_phase(
            services,
            job_id,
            phase,
            claimed,
            artifact_keys=finished.artifact_keys,
            input_hash=finished.input_hash,
            results=finished.results,
            artifacts=finished.artifacts,
            report=finished.report,
        )
    except JobCancelledError:
        _finish_with(services, job_id, claimed, RunState.CANCELLED, "")
        return PhaseOutcome(job_id, phase, "cancelled", "job was cancelled")
    except StageSupersededError as exc:
        return PhaseOutcome(job_id, phase, "superseded", str(exc))
    except InvalidInputError as exc:
        _finish_with(services, job_id, claimed, RunState.FAILED, str(exc))
        return PhaseOutcome(job_id, phase, "failed", str(exc))
    except BaseException as exc:
        if not isinstance(exc, Exception):
            # SystemExit / KeyboardInterrupt: the worker is shutting down, the job is fine;
            # hand the phase to another worker now rather than after the heartbeat goes stale.
            reason = f"worker {services.worker_host} shut down"
            _requeue(services, job_id, phase, claimed, reason, send=True)
            raise
        if services.is_transient(exc):
            # The details (engine socket, endpoint, exception) are for the operator's log only.
            log.warning("job %s phase %s: transient error: %r", job_id, phase, exc)
            reason = f"transient error in phase {phase}: {transient_summary(exc)}"
            requeued = _requeue(services, job_id, phase, claimed, reason, send=False)
            raise TransientPhaseError(reason, requeued=requeued) from exc
        if type(exc).__name__ in ("SoftTimeLimitExceeded", "TimeLimitExceeded"):
            limit = f" of {time_limit_s:.0f} s" if time_limit_s is not None else ""
            reason = f"phase {phase} exceeded its time limit{limit}"
        else:
            reason = f"internal error in phase {phase}: {type(exc).__name__}: {exc}"
        try:
            _finish_with(services, job_id, claimed, RunState.FAILED, reason)
        except Exception as record_exc:
            log.error("could not record the failure of job %s: %s", job_id, record_exc)
        raise
