"""Presigned archive uploads: recorded while open, completed, or aborted once abandoned.

The API hands out presigned part URLs (``api/routes/archive_transfer.py``) and records the
upload here in the same step (``archive_uploads``), so an upload that is never completed (the
client vanished, or called ``complete`` without parts) is charged to the team's storage quota
with its declared size and, once its ticket expired, aborted by the reaper
(:func:`abort_stale_uploads`): the S3 multipart upload is aborted (its parts deleted) and any
blob under its key that no submission holds is deleted. The S3 lifecycle rule
``AbortIncompleteMultipartUpload`` (docker-compose.yml) is the backstop for uploads this table
never saw.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.platform.submissions import find_submission_by_archive_key
from services.settings import Settings
from services.storage.blob_interface import BlobStore
from services.storage.db import Database
from services.storage.models import ArchiveUpload, ArchiveUploadState
from services.storage.types import utc_now

log = logging.getLogger(__name__)

# Rows handled per reaper pass (the next pass takes the rest).
ABORT_BATCH = 200


def record_upload(
    session: Session,
    *,
    team_id: int,
    blob_key: str,
    s3_upload_id: str | None,
    size_bytes: int,
    expires_at: dt.datetime,
) -> ArchiveUpload:
    """Record a presigned upload just handed out (state ``open``)."""
    upload = ArchiveUpload(
        team_id=team_id,
        blob_key=blob_key,
        s3_upload_id=s3_upload_id,
        size_bytes=size_bytes,
        state=ArchiveUploadState.OPEN.value,
        expires_at=expires_at,
    )
    session.add(upload)
    session.flush()
    return upload


def mark_upload_completed(session: Session, blob_key: str) -> None:
    """The upload of ``blob_key`` became a submission (no-op for unrecorded keys)."""
    upload = session.scalar(select(ArchiveUpload).where(ArchiveUpload.blob_key == blob_key))
    if upload is not None and upload.state == ArchiveUploadState.OPEN.value:
        upload.state = ArchiveUploadState.COMPLETED.value
        upload.finished_at = utc_now()
        session.flush()


def abort_multipart_upload(store: BlobStore, key: str, s3_upload_id: str | None) -> bool:
    """Abort the S3 multipart upload ``s3_upload_id`` of ``key`` (False when S3 refused it, e.g.
    it is gone already; a no-op True for single PUTs and non-S3 stores)."""
    if s3_upload_id is None:
        return True
    aborted = store.abort_multipart_upload(key, s3_upload_id)
    if not aborted:
        log.info("abort of multipart upload %s (%s) refused", s3_upload_id, key)
    return aborted


@dataclass
class UploadSweepReport:
    """Blob keys of the uploads one pass aborted."""

    aborted: list[str] = field(default_factory=list)


def abort_stale_uploads(
    database: Database,
    store: BlobStore,
    settings: Settings,
    *,
    now: dt.datetime | None = None,
) -> UploadSweepReport:
    """Abort open presigned uploads whose ticket expired ``upload_abort_grace_s`` ago.

    An expired ticket cannot be completed any more (``complete`` answers 410), so nothing races
    with this. Each upload: its multipart upload is aborted, a blob already under its key is
    deleted unless a submission holds it, and the row is marked ``aborted`` (which releases its
    storage quota).
    """
    now = now or utc_now()
    cutoff = now - dt.timedelta(seconds=settings.upload_abort_grace_s)
    report = UploadSweepReport()
    with database.session_scope() as session:
        stale = session.scalars(
            select(ArchiveUpload)
            .where(
                ArchiveUpload.state == ArchiveUploadState.OPEN.value,
                ArchiveUpload.expires_at < cutoff,
            )
            .order_by(ArchiveUpload.expires_at)
            .limit(ABORT_BATCH)
        ).all()
        todo = [(u.id, u.team_id, u.blob_key, u.s3_upload_id) for u in stale]
    for upload_id, team_id, key, s3_upload_id in todo:
        abort_multipart_upload(store, key, s3_upload_id)
        with database.session_scope() as session:
            upload = session.get(ArchiveUpload, upload_id, with_for_update=True)
            if upload is None or upload.state != ArchiveUploadState.OPEN.value:
                continue
            if find_submission_by_archive_key(session, team_id, key) is None:
                store.delete(key)
            upload.state = ArchiveUploadState.ABORTED.value
            upload.finished_at = now
        report.aborted.append(key)
    return report
