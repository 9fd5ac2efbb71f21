"""Archive submissions on the workers: validation against the protocol, then the validated audio.

An archive submission (pre-anonymized audio, uploaded as one blob) is ``pending`` until
:func:`validate_submission_archive` checked it against the protocol it was uploaded for
(``submission.protocol_id``): it builds (or reuses) the protocol's corpus stage to know which
utterances the archive must hold and their durations, downloads the archive and runs
``services.anonymizers.archive.validate_archive``. Valid: the extracted audio is kept as a
content-addressed stage folder (``archive/<sha256[:16]>``) every worker can fetch, and the
submission is accepted with the report stored next to the archive; invalid (including every kind
of corrupt archive): rejected, with the problems in ``submission.rejection_reason``, and the
archive's blob is deleted (a rejected archive is still charged to the team's storage quota for
24 h). The worker's scratch folder of a validation is deleted either way.

:func:`reject_stuck_validations` (the reaper) rejects archives still validating after
``archive_validation_timeout_s``: a validation whose task was lost or kept failing.

:func:`request_validation` queues the validation in the caller's transaction (an outbox message).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
from pathlib import Path
from typing import Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from services.anonymizers.archive import (
    ArchiveLimits,
    expected_from_protocol,
    validate_archive,
    vpc_folders_of,
)
from services.anonymizers.kinds.archive import KIND as ARCHIVE_KIND
from services.errors import ConfigError, InvalidInputError
from services.pipeline.config import EvaluationConfig, parse_config
from services.pipeline.stage_runner import DONE_FILE
from services.pipeline.workspace import StageWorkspace, SyncedStageRunner
from services.platform import protocols as protocol_records
from services.platform import submissions as submission_records
from services.platform.outbox import VALIDATE_ARCHIVE, add_message
from services.settings import Settings
from services.storage.blob_interface import BlobStore
from services.storage.db import Database
from services.storage.models import Submission, SubmissionStatus
from services.storage.types import utc_now

log = logging.getLogger(__name__)

# Validated archives are kept like stage folders: stage "archive", key = the archive's sha256.
ARCHIVE_STAGE = "archive"


class ArchiveHost(Protocol):
    """What validation needs of the worker (``services.platform.jobs.JobServices`` has it)."""

    database: Database
    store: BlobStore
    settings: Settings

    def stages_dir(self) -> Path:
        """The host's shared stage cache."""
        ...


def archive_stage_key(archive_sha256: str) -> str:
    """The stage-folder key of a validated archive (its sha256, shortened like stage keys)."""
    return archive_sha256[:16]


def request_validation(session: Session, *, submission_id: int) -> None:
    """Queue the validation of an uploaded archive submission (sent after the commit)."""
    add_message(session, topic=VALIDATE_ARCHIVE, payload={"submission_id": submission_id})


def archive_protocol_config(session: Session, submission: Submission) -> EvaluationConfig:
    """The evaluation config of the protocol an archive submission was uploaded for."""
    if submission.protocol_id is None:
        raise InvalidInputError(f"archive submission {submission.id} names no protocol")
    protocol = protocol_records.get_protocol_by_id(session, submission.protocol_id)
    body = dict(protocol.body or {})
    return parse_config(dict(body.get("config", {})), f"protocol {protocol.id} config")


def report_key(archive_key: str) -> str:
    """Blob key of the validation report of an accepted archive."""
    return f"{archive_key}.validation.json"


def reject_archive(host: ArchiveHost, submission_id: int, reason: str) -> str:
    """Reject a pending archive submission with ``reason`` and delete its blob and report."""
    with host.database.session_scope() as session:
        submission = submission_records.get_submission(session, submission_id)
        if submission.status != SubmissionStatus.PENDING.value:
            return submission.status
        key = submission.archive_blob_key
        submission_records.reject_submission(session, submission_id, reason=reason)
    log.info("archive of submission %s rejected: %s", submission_id, reason)
    if key is not None:
        # After the commit: a crash in between leaves a blob of a rejected submission, which the
        # next validation attempt (a no-op on a rejected submission) never touches again.
        host.store.delete(key)
        host.store.delete(report_key(key))
    return SubmissionStatus.REJECTED.value


def validate_submission_archive(services: ArchiveHost, submission_id: int) -> str:
    """Validate a pending archive submission; accept it, or reject it when invalid.

    Accepted: the validation report is stored next to the archive (``<archive key>.validation
    .json``). Rejected: the reason is stored on the submission and the archive blob deleted.
    Returns the submission's status afterwards (a non-pending submission is left alone).
    """
    # Deferred: the evaluation imports torch, which the Celery app and its health checks avoid.
    from services.pipeline.evaluation import EvaluationRun

    with services.database.session_scope() as session:
        submission = submission_records.get_submission(session, submission_id)
        key, sha256, status = (
            submission.archive_blob_key,
            submission.archive_sha256,
            submission.status,
        )
        if status != SubmissionStatus.PENDING.value or key is None:
            return status
        try:
            cfg = archive_protocol_config(session, submission)
        except InvalidInputError as exc:
            reason: str | None = str(exc)
        else:
            reason = None
    if reason is not None:
        return reject_archive(services, submission_id, reason)
    folder = services.settings.resolved_work_dir() / "archives" / str(submission_id)
    try:
        stages_dir = services.stages_dir()
        runner = SyncedStageRunner(stages_dir, StageWorkspace(services.store, stages_dir))
        run = EvaluationRun(cfg, folder / "run", runner=runner)
        protocol, manifest, _ = run.corpus_stage()
        archive_path = folder / "archive"
        info = services.store.get_to_path(key, archive_path)
        if sha256 is not None and info.sha256 != sha256:
            raise InvalidInputError(f"archive {key}: sha256 {info.sha256}, expected {sha256}")
        extracted = folder / "extracted"
        report = validate_archive(
            archive_path,
            expected_from_protocol(protocol),
            extracted,
            ArchiveLimits.from_settings(services.settings),
            {u.utt_id: u.duration_s for u in manifest.utterances},
            vpc_folders=vpc_folders_of(protocol),
        )
        report.raise_for_problems()
        services.store.put_bytes(
            report_key(key),
            json.dumps(report.to_json(), default=str).encode(),
            media_type="application/json",
        )
        # Keep the validated audio as a content-addressed folder every worker can fetch.
        stage_key = archive_stage_key(info.sha256 or "")
        workspace = StageWorkspace(services.store, stages_dir)
        if not workspace.is_local(ARCHIVE_STAGE, stage_key):
            (extracted / DONE_FILE).write_text(json.dumps({"archive": key, "sha256": info.sha256}))
            target = workspace.local_folder(ARCHIVE_STAGE, stage_key)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(target, ignore_errors=True)
            extracted.rename(target)
        workspace.upload(ARCHIVE_STAGE, stage_key)
    except InvalidInputError as exc:
        return reject_archive(services, submission_id, str(exc))
    finally:
        # The downloaded archive, what was extracted (moved away when valid) and the run's
        # scratch files: nothing of a validation stays on the worker.
        shutil.rmtree(folder, ignore_errors=True)
    with services.database.session_scope() as session:
        submission_records.accept_submission(session, submission_id)
    return SubmissionStatus.ACCEPTED.value


def reject_stuck_validations(host: ArchiveHost, *, now: dt.datetime | None = None) -> list[int]:
    """Reject archive submissions still validating ``archive_validation_timeout_s`` after their
    upload (their task was lost, or failed on something other than the archive); their ids."""
    timeout_s = host.settings.archive_validation_timeout_s
    cutoff = (now or utc_now()) - dt.timedelta(seconds=timeout_s)
    with host.database.session_scope() as session:
        stuck = list(
            session.scalars(
                select(Submission.id).where(
                    Submission.kind == ARCHIVE_KIND,
                    Submission.status == SubmissionStatus.PENDING.value,
                    Submission.created_at < cutoff,
                )
            )
        )
    reason = (
        f"the archive's validation did not finish within {timeout_s:.0f} s of the upload; "
        "upload it again"
    )
    return [i for i in stuck if reject_archive(host, i, reason) == SubmissionStatus.REJECTED]


def prepare_archive(
    workspace: StageWorkspace, archive_key: str, archive_sha256: str | None
) -> Path:
    """The local folder of an archive submission's validated audio (downloaded when missing).

    The validation leaves the extracted audio as the stage folder ``archive/<sha256[:16]>`` in
    the blob store; a host that lacks it fetches it here.
    """
    if archive_sha256 is None:
        raise ConfigError("archive submission without archive_sha256")
    key = archive_stage_key(archive_sha256)
    workspace.download(ARCHIVE_STAGE, key)
    if not workspace.is_local(ARCHIVE_STAGE, key):
        raise InvalidInputError(
            f"the archive {archive_key} has not been validated (no extracted audio)"
        )
    return workspace.local_folder(ARCHIVE_STAGE, key)
