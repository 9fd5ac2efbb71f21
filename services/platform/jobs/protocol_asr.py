"""The training of a protocol's utility ASR on a worker (queued at registration by
:func:`services.platform.protocols.asr.queue_protocol_asr`; docs/utility.md): the corpus and
``utility-asr`` stages exactly as a job's utility phase computes them, through the shared stage
store and its database claims, so one copy is trained whatever the order of jobs and training."""

from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select

from services.errors import InvalidInputError
from services.pipeline.config import EvaluationConfig
from services.platform.jobs.host import JobServices
from services.platform.jobs.phase_queues import stage_hard_time_limit_s
from services.platform.protocols.asr import protocol_asr_config, set_protocol_asr_state
from services.platform.rows import get_row
from services.storage.models import ProtocolRecord
from services.storage.types import utc_now
from services.vocab import ProtocolAsrState

log = logging.getLogger(__name__)


class TransientProtocolAsrError(Exception):
    """The training hit a lost connection (database, blob store): retry later."""


def _claim(services: JobServices, protocol_id: int) -> EvaluationConfig | str:
    """Mark the training running (one transaction); its config, or why there is nothing to do
    (``failed`` when the stored config is refused, recorded so)."""
    with services.database.session_scope() as session:
        protocol = get_row(session, ProtocolRecord, protocol_id, lock=True, noun="protocol")
        if protocol.asr_state is None:
            return "skipped: the protocol trains no ASR"
        if protocol.asr_state == ProtocolAsrState.READY.value:
            return "skipped: ready"
        try:
            cfg = protocol_asr_config(protocol)
        except InvalidInputError as exc:  # a stored config this code refuses (an upgrade)
            # Failed, not left queued: a queued training is never queued again.
            set_protocol_asr_state(protocol, ProtocolAsrState.FAILED, error=str(exc))
            return ProtocolAsrState.FAILED.value
        if cfg is None:  # unreachable for a queued state, kept for a hand-edited row
            return "skipped: the protocol trains no ASR"
        # A duplicate delivery while another worker trains is harmless: its stage claim waits
        # for the other's publication and downloads it.
        set_protocol_asr_state(protocol, ProtocolAsrState.RUNNING)
        return cfg


def _finish(
    services: JobServices,
    protocol_id: int,
    state: ProtocolAsrState,
    *,
    error: str | None = None,
    key: str | None = None,
) -> None:
    with services.database.session_scope() as session:
        protocol = get_row(session, ProtocolRecord, protocol_id, lock=True, noun="protocol")
        if protocol.asr_state == ProtocolAsrState.READY.value and state != ProtocolAsrState.READY:
            return  # a duplicate delivery finished it meanwhile: ready stays ready
        set_protocol_asr_state(protocol, state, error=error, key=key)


def _transient_error(exc: BaseException) -> TransientProtocolAsrError:
    from services.platform.jobs.host import transient_summary

    return TransientProtocolAsrError(f"transient error: {transient_summary(exc)}")


def _record_failure(services: JobServices, protocol_id: int, error: str) -> None:
    """Record ``failed``; a lost connection meanwhile is :class:`TransientProtocolAsrError`
    (the retry trains again and records it), never a training left ``running``."""
    try:
        _finish(services, protocol_id, ProtocolAsrState.FAILED, error=error)
    except Exception as exc:
        if services.is_transient(exc):
            raise _transient_error(exc) from exc
        raise


def give_up_protocol_asr(services: JobServices, protocol_id: int, reason: str) -> None:
    """Record a training whose transient errors outlasted its retries as ``failed``."""
    _finish(services, protocol_id, ProtocolAsrState.FAILED, error=reason)


def reap_protocol_asr(services: JobServices, *, now: dt.datetime | None = None) -> list[int]:
    """Record as ``failed`` the trainings ``running`` for longer than the task's hard time limit
    (the utility phase's, seconds); returns their protocol ids.

    Celery kills a task at its hard limit and acknowledges its message, so no code of the task
    records the end, and a running training is never queued again: the reaper's pass does it.
    """
    now = now or utc_now()
    limit_s = stage_hard_time_limit_s(services.settings, "utility")
    cutoff = now - dt.timedelta(seconds=limit_s)
    reaped: list[int] = []
    with services.database.session_scope() as session:
        stuck = session.scalars(
            select(ProtocolRecord.id).where(
                ProtocolRecord.asr_state == ProtocolAsrState.RUNNING.value,
                ProtocolRecord.asr_updated_at < cutoff,
            )
        ).all()
        for protocol_id in stuck:
            protocol = get_row(session, ProtocolRecord, protocol_id, lock=True, noun="protocol")
            updated = protocol.asr_updated_at
            if protocol.asr_state != ProtocolAsrState.RUNNING.value or (
                updated is not None and updated >= cutoff
            ):
                continue  # finished or claimed again meanwhile
            reason = f"the training exceeded its time limit of {limit_s:.0f} s"
            set_protocol_asr_state(protocol, ProtocolAsrState.FAILED, error=reason)
            reaped.append(protocol_id)
    return reaped


def _train(services: JobServices, cfg: EvaluationConfig) -> str:
    """The corpus and ``utility-asr`` stages of ``cfg`` in the shared stage store, composed as a
    job's phase composes them (the same keys); returns the ASR's stage key."""
    # Deferred: the stages import torch, which the API process and the Celery app avoid.
    from services.anonymizers.container_sandbox import ContainerSandbox
    from services.pipeline.sets import corpus_stage, original_sets
    from services.pipeline.stages.context import AudioCache, StageContext
    from services.pipeline.stages.utility import asr_stage, check_transcripts
    from services.pipeline.workspace import StageWorkspace, SyncedStageRunner
    from services.platform.jobs.config import run_config
    from services.platform.jobs.stage_claims import DatabaseStageClaims

    settings = services.settings
    stages_dir = services.stages_dir()
    claims = DatabaseStageClaims.from_settings(services.database, settings)
    runner = SyncedStageRunner(
        stages_dir, StageWorkspace(services.store, stages_dir), claims=claims
    )

    def progress(stage: str, fraction: float, message: str) -> None:
        log.info("protocol ASR: %s %.0f %%: %s", stage, 100 * fraction, message)

    ctx = StageContext(
        run_config(cfg, settings),
        runner,
        progress,
        AudioCache(),
        settings.resolved_cache_dir(),
        ContainerSandbox.from_settings(settings),
    )
    protocol, manifest, corpus_key = corpus_stage(ctx)
    original = original_sets(protocol, manifest, corpus_key)
    check_transcripts(original)
    _, key, _ = asr_stage(ctx, original)
    return key


def train_protocol_asr(services: JobServices, protocol_id: int) -> str:
    """Train (or fetch, when a job published it first) the utility ASR of protocol
    ``protocol_id`` and record the outcome; returns ``ready``, ``failed`` or why it skipped.

    Bad input (a config or corpus problem) records ``failed`` with its message; a lost
    connection puts the state back to ``queued`` and raises :class:`TransientProtocolAsrError`
    for the caller to retry; anything else records ``failed`` and propagates.
    """
    try:
        claimed = _claim(services, protocol_id)
    except Exception as exc:
        if services.is_transient(exc):  # nothing changed in the database: still queued
            raise _transient_error(exc) from exc
        raise
    if isinstance(claimed, str):
        log.info("protocol %s ASR: %s", protocol_id, claimed)
        return claimed
    try:
        key = _train(services, claimed)
        _finish(services, protocol_id, ProtocolAsrState.READY, key=key)
    except InvalidInputError as exc:
        _record_failure(services, protocol_id, str(exc))
        return ProtocolAsrState.FAILED.value
    except Exception as exc:
        if services.is_transient(exc):
            from services.platform.jobs.host import transient_summary

            reason = f"transient error: {transient_summary(exc)}"
            try:
                _finish(services, protocol_id, ProtocolAsrState.QUEUED, error=reason)
            except Exception as record_exc:  # the retry marks it running again anyway
                log.warning("protocol %s ASR: could not record %r", protocol_id, record_exc)
            raise TransientProtocolAsrError(reason) from exc
        reason = f"internal error: {type(exc).__name__}: {exc}"
        _record_failure(services, protocol_id, reason)
        raise
    log.info("protocol %s ASR ready: %s", protocol_id, key)
    return ProtocolAsrState.READY.value
