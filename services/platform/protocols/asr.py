"""A protocol's utility ASR, trained once when the protocol is registered (docs/utility.md).

The speech recognizer behind the WER is trained on the protocol's ORIGINAL attacker-train speech
(``utility.asr.source: train``), so it depends on the protocol alone. Registering a protocol
that trains one (:func:`queue_protocol_asr`, called by ``create_protocol``) sets its
``asr_state`` to ``queued`` and writes a ``train_protocol_asr`` message to the outbox in the same
transaction; a worker on the model queue then runs :func:`train_protocol_asr`: the corpus stage
and the ``utility-asr`` stage exactly as a job's utility phase computes them, through the shared
stage store and its database claims. A job's utility phase asks for the same stage key, so

- after the training, it downloads the published ASR and trains none;
- during it, the job's claim request finds the key held and waits for the publication;
- before it (the task still queued), the job trains it and the task then finds it published.

One copy is trained whatever the order. A job whose ``config_overrides`` change ``utility.asr``
has another key and trains its own. The state (``queued``, ``running``, ``ready``, ``failed``)
is shown with the protocol; a failed training is queued again when the same protocol is
registered again, and meanwhile jobs train the ASR themselves.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session

from services.errors import InvalidInputError
from services.pipeline.config import EvaluationConfig, parse_config
from services.platform.outbox import TRAIN_PROTOCOL_ASR, add_message
from services.platform.rows import get_row
from services.storage.models import OutboxMessage, ProtocolAsrState, ProtocolRecord
from services.storage.types import utc_now

if TYPE_CHECKING:
    from services.platform.jobs.host import JobServices

log = logging.getLogger(__name__)

# A state in which the training needs no new message: it is on its way, or done.
_UNDER_WAY = (ProtocolAsrState.QUEUED.value, ProtocolAsrState.RUNNING.value)
_MAX_ERROR_CHARS = 2000


class TransientProtocolAsrError(Exception):
    """The training hit a lost connection (database, blob store): retry later."""


def protocol_asr_config(protocol: ProtocolRecord) -> EvaluationConfig | None:
    """The protocol's config as an evaluation when it trains a utility ASR, else None (no
    utility block, no WER, an operator's pretrained ASR, or a protocol stored as a blob).

    The anonymizer is the config's default: it enters neither the corpus nor the ASR stage key.
    """
    if protocol.body is None:
        return None
    config: Mapping[str, Any] = protocol.body.get("config") or {}
    cfg = parse_config(dict(config), source=f"protocol {protocol.id} config")
    utility = cfg.utility
    if utility is None or not utility.wer or utility.asr.source != "train":
        return None
    return cfg


def _set_state(
    protocol: ProtocolRecord,
    state: ProtocolAsrState,
    *,
    error: str | None = None,
    key: str | None = None,
) -> None:
    protocol.asr_state = state.value
    protocol.asr_error = error[:_MAX_ERROR_CHARS] if error else None
    if key is not None:
        protocol.asr_key = key
    protocol.asr_updated_at = utc_now()


def queue_protocol_asr(session: Session, protocol: ProtocolRecord) -> OutboxMessage | None:
    """Queue the training of ``protocol``'s ASR in ``session``'s transaction: state ``queued``
    and the task's message in the outbox (sent after the commit).

    None when there is nothing to queue: the protocol trains no ASR, or its training is queued,
    running or ready. A failed one is queued again.
    """
    if protocol.asr_state in _UNDER_WAY or protocol.asr_state == ProtocolAsrState.READY.value:
        return None
    try:
        cfg = protocol_asr_config(protocol)
    except InvalidInputError:  # a config the API would refuse: its jobs report the problem
        return None
    if cfg is None:
        return None
    _set_state(protocol, ProtocolAsrState.QUEUED)
    session.flush()
    return add_message(session, topic=TRAIN_PROTOCOL_ASR, payload={"protocol_id": protocol.id})


def _claim(services: JobServices, protocol_id: int) -> EvaluationConfig | str:
    """Mark the training running (one transaction); its config, or why there is nothing to do."""
    with services.database.session_scope() as session:
        protocol = get_row(session, ProtocolRecord, protocol_id, lock=True, noun="protocol")
        if protocol.asr_state is None:
            return "skipped: the protocol trains no ASR"
        if protocol.asr_state == ProtocolAsrState.READY.value:
            return "skipped: ready"
        cfg = protocol_asr_config(protocol)
        if cfg is None:  # unreachable for a queued state, kept for a hand-edited row
            return "skipped: the protocol trains no ASR"
        # A duplicate delivery while another worker trains is harmless: its stage claim waits
        # for the other's publication and downloads it.
        _set_state(protocol, ProtocolAsrState.RUNNING)
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
        _set_state(protocol, state, error=error, key=key)


def give_up_protocol_asr(services: JobServices, protocol_id: int, reason: str) -> None:
    """Record a training whose transient errors outlasted its retries as ``failed``."""
    _finish(services, protocol_id, ProtocolAsrState.FAILED, error=reason)


def _train(services: JobServices, cfg: EvaluationConfig) -> str:
    """The corpus and ``utility-asr`` stages of ``cfg`` in the shared stage store, composed as a
    job's phase composes them (the same keys); returns the ASR's stage key."""
    # Deferred: the stages import torch, which the API process and the Celery app avoid.
    from services.anonymizers.container import ContainerSandbox
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
    claimed = _claim(services, protocol_id)
    if isinstance(claimed, str):
        log.info("protocol %s ASR: %s", protocol_id, claimed)
        return claimed
    try:
        key = _train(services, claimed)
    except InvalidInputError as exc:
        _finish(services, protocol_id, ProtocolAsrState.FAILED, error=str(exc))
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
        _finish(services, protocol_id, ProtocolAsrState.FAILED, error=reason)
        raise
    _finish(services, protocol_id, ProtocolAsrState.READY, key=key)
    log.info("protocol %s ASR ready: %s", protocol_id, key)
    return ProtocolAsrState.READY.value
