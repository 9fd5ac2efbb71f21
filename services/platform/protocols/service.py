"""Protocols: versioned evaluation setups that jobs run and leaderboards rank under."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.platform.hashing import SHA256_HEX_RE, canonical_json_hash
from services.platform.protocols.asr import queue_protocol_asr
from services.platform.rows import get_row
from services.storage.blob_interface import validate_key
from services.storage.errors import ConflictError, NotFoundError
from services.storage.models import ProtocolRecord


def create_protocol(
    session: Session,
    name: str,
    *,
    body: Mapping[str, Any] | None = None,
    blob_key: str | None = None,
    blob_sha256: str | None = None,
    description: str = "",
) -> ProtocolRecord:
    """A new version of protocol ``name`` (versions count 1, 2, ...).

    Content is a JSON ``body`` or a blob (``blob_key`` + its ``blob_sha256``). Registering the
    same content as the latest version returns that version instead of a duplicate. A protocol
    whose config trains a utility ASR gets its training queued in the same transaction
    (:func:`~services.platform.protocols.asr.queue_protocol_asr`; again after a failed one).
    """
    if (body is None) == (blob_key is None):
        raise ConflictError(f"protocol {name!r}: give exactly one of body or blob_key")
    if body is not None:
        content_hash = canonical_json_hash(body)
    else:
        assert blob_key is not None
        validate_key(blob_key)
        if blob_sha256 is None or not SHA256_HEX_RE.match(blob_sha256):
            raise ConflictError(f"protocol {name!r}: blob_sha256 must be 64 lowercase hex digits")
        content_hash = blob_sha256
    latest = session.scalar(
        select(ProtocolRecord)
        .where(ProtocolRecord.name == name)
        .order_by(ProtocolRecord.version.desc())
        .limit(1)
    )
    if latest is not None and latest.content_hash == content_hash:
        queue_protocol_asr(session, latest)  # a failed ASR training is queued again
        return latest
    protocol = ProtocolRecord(
        name=name,
        version=1 if latest is None else latest.version + 1,
        content_hash=content_hash,
        description=description,
        body=dict(body) if body is not None else None,
        blob_key=blob_key,
    )
    session.add(protocol)
    session.flush()
    queue_protocol_asr(session, protocol)
    return protocol


def get_protocol(session: Session, name: str, version: int | None = None) -> ProtocolRecord:
    """Protocol ``name`` at ``version`` (default: the latest)."""
    query = select(ProtocolRecord).where(ProtocolRecord.name == name)
    if version is not None:
        query = query.where(ProtocolRecord.version == version)
    protocol = session.scalar(query.order_by(ProtocolRecord.version.desc()).limit(1))
    if protocol is None:
        suffix = "" if version is None else f" version {version}"
        raise NotFoundError(f"protocol {name!r}{suffix} not found")
    return protocol


def get_protocol_by_id(session: Session, protocol_id: int) -> ProtocolRecord:
    """The protocol with ``protocol_id`` or :class:`NotFoundError` ("protocol N not found")."""
    return get_row(session, ProtocolRecord, protocol_id, noun="protocol")


def list_protocols(session: Session, *, name: str | None = None) -> list[ProtocolRecord]:
    """Every protocol version (optionally of one ``name``), by name then version."""
    query = select(ProtocolRecord)
    if name is not None:
        query = query.where(ProtocolRecord.name == name)
    return list(session.scalars(query.order_by(ProtocolRecord.name, ProtocolRecord.version)))
