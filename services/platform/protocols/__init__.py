"""Protocols: versioned evaluation setups (a JSON config or a blob), one row per version, and
the utility ASR each trains once at registration (``asr.py``)."""

from services.platform.protocols.asr import (
    TransientProtocolAsrError,
    give_up_protocol_asr,
    protocol_asr_config,
    queue_protocol_asr,
    train_protocol_asr,
)
from services.platform.protocols.service import (
    create_protocol,
    get_protocol,
    get_protocol_by_id,
    list_protocols,
)

__all__ = [
    "TransientProtocolAsrError",
    "create_protocol",
    "get_protocol",
    "get_protocol_by_id",
    "give_up_protocol_asr",
    "list_protocols",
    "protocol_asr_config",
    "queue_protocol_asr",
    "train_protocol_asr",
]
