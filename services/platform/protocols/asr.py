"""A protocol's utility ASR, trained once when the protocol is registered (docs/utility.md).

The speech recognizer behind the WER is trained on the protocol's ORIGINAL attacker-train speech
(``utility.asr.source: train``), so it depends on the protocol alone. Registering a protocol
that trains one (:func:`queue_protocol_asr`, called by ``create_protocol``) sets its
``asr_state`` to ``queued`` and writes a ``train_protocol_asr`` message to the outbox in the same
transaction; a worker on the model queue then runs ``train_protocol_asr``: the corpus stage
and the ``utility-asr`` stage exactly as a job's utility phase computes them, through the shared
stage store and its database claims. A job's utility phase asks for the same stage key, so

- after the training, it downloads the published ASR and trains none;
- during it, the job's claim request finds the key held and waits for the publication;
- before it (the task still queued), the job trains it and the task then finds it published.

One copy is trained whatever the order. A job whose ``config_overrides`` change ``utility.asr``
has another key and trains its own. The state (``queued``, ``running``, ``ready``, ``failed``)
is shown with the protocol; a failed training is queued again when the same protocol is
registered again, and meanwhile jobs train the ASR themselves. The training itself
(:func:`services.platform.jobs.protocol_asr.train_protocol_asr`) runs stages as a job does, so
it lives with the jobs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sqlalchemy.orm import Session

from services.errors import InvalidInputError
from services.pipeline.config import EvaluationConfig, parse_config
from services.platform.outbox import TRAIN_PROTOCOL_ASR, add_message
from services.storage.models import OutboxMessage, ProtocolAsrState, ProtocolRecord
from services.storage.types import utc_now

log = logging.getLogger(__name__)

# A state in which the training needs no new message: it is on its way, or done.
_UNDER_WAY = (ProtocolAsrState.QUEUED.value, ProtocolAsrState.RUNNING.value)
_MAX_ERROR_CHARS = 2000


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


def set_protocol_asr_state(
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
    set_protocol_asr_state(protocol, ProtocolAsrState.QUEUED)
    session.flush()
    return add_message(session, topic=TRAIN_PROTOCOL_ASR, payload={"protocol_id": protocol.id})
