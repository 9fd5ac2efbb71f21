"""Protocols: versioned evaluation setups (a JSON config or a blob), one row per version."""

from services.platform.protocols.service import (
    create_protocol,
    get_protocol,
    get_protocol_by_id,
    list_protocols,
)

__all__ = ["create_protocol", "get_protocol", "get_protocol_by_id", "list_protocols"]
