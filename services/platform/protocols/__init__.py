"""Protocols: versioned evaluation setups (a JSON config or a blob), one row per version, and
the utility ASR each trains once, queued at registration (``asr.py``; trained by
``services/platform/jobs/protocol_asr.py``)."""

from services.platform.protocols.asr import protocol_asr_config, queue_protocol_asr
from services.platform.protocols.service import (
    create_protocol,
    get_protocol,
    get_protocol_by_id,
    list_protocols,
)

__all__ = [
    "create_protocol",
    "get_protocol",
    "get_protocol_by_id",
    "list_protocols",
    "protocol_asr_config",
    "queue_protocol_asr",
]
