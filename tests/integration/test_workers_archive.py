"""Archive submissions on the workers: validation against the protocol, then a job that uses them.

Real PostgreSQL and a moto S3 server. The archive holds the protocol's own audio (an identity
"anonymizer"), laid out as ``<set>/<stem>.wav``, as a maker following docs/container-contract.md
would produce it.
"""

from __future__ import annotations

import datetime as dt
import json
import tarfile
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.anonymizers.archive import expected_from_protocol, output_stem
from services.pipeline.config import parse_config
from services.pipeline.evaluation import EvaluationRun
from services.pipeline.workspace import stage_index_key
from services.platform import identity
from services.platform import protocols as protocol_records
from services.platform import submissions as submission_records
from services.platform.archives import (
    ARCHIVE_STAGE,
    archive_stage_key,
    validate_submission_archive,
)
from services.platform.jobs import JobServices, job_config, job_stage_names, run_job_phase
from services.platform.jobs import records as job_records
from services.settings import Settings
from services.storage.blob_interface import sha256_file
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from support.configs import micro_protocol_config
from support.s3 import moto_s3_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CONFIG: dict[str, Any] = micro_protocol_config(synthetic={"seed": 21})


def _identity_archive(
    path: Path, work: Path, drop: int = 0, compression: int = zipfile.ZIP_STORED
) -> Path:
    """A zip of the protocol's original audio in ``<set>/<stem>.wav`` (minus ``drop`` files)."""
    run = EvaluationRun(parse_config(CONFIG), work)
    protocol, manifest, _ = run.corpus_stage()
    by_id = {u.utt_id: u for u in manifest.utterances}
    members = [
        (f"{name}/{output_stem(utt)}.wav", manifest.resolve(by_id[utt]))
        for name, utts in expected_from_protocol(protocol).items()
        for utt in utts
    ]
    if path.name.endswith(".tar.xz"):
        with tarfile.open(path, "w:xz") as tar:
            for arcname, source in members[drop:]:
                tar.add(source, arcname)
        return path
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for arcname, source in members[drop:]:
            archive.write(source, arcname)
    return path


@pytest.fixture()
def setup(
    pg_database: Database, moto_endpoint: str, tmp_path: Path
) -> tuple[JobServices, Callable[..., tuple[int, int]]]:
    store = S3BlobStore(
        f"unmask-archive-{uuid.uuid4().hex[:8]}", client=moto_s3_client(moto_endpoint)
    )
    services = JobServices(
        pg_database,
        store,
        Settings(data_dir=tmp_path / "host-a", heartbeat_interval_s=0.5),
        worker_host="host-a",
    )
    with pg_database.session_scope() as session:
        team_id = identity.create_team(session, f"t-{uuid.uuid4().hex[:6]}").id
        protocol_id = protocol_records.create_protocol(
            session, "archive-p", body={"config": CONFIG}
        ).id

    def submit(
        drop: int = 0,
        suffix: str = ".zip",
        compression: int = zipfile.ZIP_STORED,
        damage: Callable[[Path], None] | None = None,
    ) -> tuple[int, int]:
        archive = _identity_archive(
            tmp_path / f"a{drop}{suffix}", tmp_path / "maker", drop, compression
        )
        if damage is not None:
            damage(archive)
        # The protocol comes from ``submission.protocol_id``, not from the key.
        key = f"archives/team-{team_id}/{uuid.uuid4().hex}"
        sha256, _ = sha256_file(archive)
        store.put_file(key, archive, media_type="application/zip")
        with pg_database.session_scope() as session:
            submission = submission_records.create_submission(
                session,
                team_id,
                f"archive-{drop}",
                "archive",
                archive_blob_key=key,
                archive_sha256=sha256,
                accept=False,
            )
            submission.protocol_id = protocol_id  # the protocol the archive was uploaded for
            return submission.id, protocol_id

    return services, submit


def test_valid_archive_is_accepted_and_its_audio_feeds_a_job_on_another_host(
    setup: tuple[JobServices, Callable[..., tuple[int, int]]], pg_database: Database
) -> None:
    services, submit = setup
    submission_id, protocol_id = submit()
    assert validate_submission_archive(services, submission_id) == "accepted"
    with pg_database.session_scope() as session:
        submission = submission_records.get_submission(session, submission_id)
        assert submission.status == "accepted"
        sha256 = submission.archive_sha256 or ""
        key = submission.archive_blob_key or ""
        job_id = job_records.create_job(
            session,
            team_id=submission.team_id,
            submission_id=submission_id,
            protocol_id=protocol_id,
            config=job_config(CONFIG, submission),  # anonymizer: the archive's blob key
            stage_names=job_stage_names(),
        ).job.id
    assert services.store.exists(stage_index_key(ARCHIVE_STAGE, archive_stage_key(sha256)))
    report = json.loads(services.store.get_bytes(f"{key}.validation.json"))
    assert report["problems"] == []
    # Nothing of the validation stays in the worker's scratch folder (the download included).
    assert not (services.settings.resolved_work_dir() / "archives" / str(submission_id)).exists()
    # Host B has never seen the archive: it fetches the validated audio from the store.
    host_b = JobServices(
        services.database,
        services.store,
        Settings(data_dir=services.settings.data_dir.parent / "host-b"),
        worker_host="host-b",
    )
    assert run_job_phase(host_b, job_id, "corpus").status == "succeeded"
    assert run_job_phase(host_b, job_id, "anonymize").status == "succeeded"
    local = host_b.stages_dir() / ARCHIVE_STAGE / archive_stage_key(sha256)
    assert (local / "audio").is_dir()
    with pg_database.session_scope() as session:
        anonymize = job_records.get_stage(session, job_id, "anonymize")
        assert anonymize.state == "succeeded" and len(anonymize.artifact_keys) == 4
        job_records.mark_job_cancelled(session, job_id)


def _assert_rejected_and_cleaned(
    services: JobServices, database: Database, submission_id: int, fragment: str
) -> None:
    """Rejected with ``fragment`` in the reason; blob, report and scratch folder are gone."""
    with database.session_scope() as session:
        submission = submission_records.get_submission(session, submission_id)
        status, reason, key = (
            submission.status,
            submission.rejection_reason or "",
            submission.archive_blob_key or "",
        )
    assert status == "rejected"
    assert fragment in reason, reason
    assert not services.store.exists(key)
    assert not services.store.exists(f"{key}.validation.json")
    assert not (services.settings.resolved_work_dir() / "archives" / str(submission_id)).exists()


def test_incomplete_archive_is_rejected_with_its_reason(
    setup: tuple[JobServices, Callable[..., tuple[int, int]]], pg_database: Database
) -> None:
    services, submit = setup
    submission_id, _ = submit(drop=2)
    assert validate_submission_archive(services, submission_id) == "rejected"
    _assert_rejected_and_cleaned(services, pg_database, submission_id, "missing utterance(s)")


def _overwrite_deflate_data(path: Path) -> None:
    """Overwrite 400 bytes inside the first member's deflate stream."""
    with zipfile.ZipFile(path) as archive:
        first = archive.infolist()[0]
    data = bytearray(path.read_bytes())
    start = first.header_offset + 30 + len(first.filename) + 64
    data[start : start + 400] = bytes((i * 37 + 11) % 251 + 1 for i in range(400))
    path.write_bytes(bytes(data))


def _flip_bytes(path: Path) -> None:
    """Flip every 97th byte of the middle third."""
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, 2 * len(data) // 3, 97):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("suffix", "compression", "damage"),
    [
        (".zip", zipfile.ZIP_DEFLATED, _overwrite_deflate_data),  # zlib.error in the worker
        (".tar.xz", zipfile.ZIP_STORED, _flip_bytes),  # lzma.LZMAError
    ],
)
def test_corrupt_compressed_archive_is_rejected_not_left_validating(
    setup: tuple[JobServices, Callable[..., tuple[int, int]]],
    pg_database: Database,
    suffix: str,
    compression: int,
    damage: Callable[[Path], None],
) -> None:
    services, submit = setup
    submission_id, _ = submit(suffix=suffix, compression=compression, damage=damage)
    assert validate_submission_archive(services, submission_id) == "rejected"
    _assert_rejected_and_cleaned(services, pg_database, submission_id, "corrupt archive")


def test_reaper_rejects_archives_stuck_validating(
    setup: tuple[JobServices, Callable[..., tuple[int, int]]], pg_database: Database
) -> None:
    from services.platform.jobs import reap_archive_uploads
    from services.storage.models import Submission

    services, _ = setup
    with pg_database.session_scope() as session:
        team_id = identity.create_team(session, f"s-{uuid.uuid4().hex[:6]}").id
        ids = []
        for age_s in (7200.0, 60.0):
            key = f"archives/team-{team_id}/{uuid.uuid4().hex}"
            services.store.put_bytes(key, b"an archive the worker never got to")
            submission = submission_records.create_submission(
                session,
                team_id,
                f"stuck-{age_s:.0f}",
                "archive",
                archive_blob_key=key,
                archive_sha256="0" * 64,
                accept=False,
            )
            session.flush()
            row = session.get(Submission, submission.id)
            assert row is not None
            row.created_at -= dt.timedelta(seconds=age_s)
            ids.append((submission.id, key))
    report = reap_archive_uploads(services)
    (old_id, _), (new_id, new_key) = ids
    assert report.rejected_stuck == [old_id]
    _assert_rejected_and_cleaned(services, pg_database, old_id, "did not finish within 3600 s")
    with pg_database.session_scope() as session:
        assert submission_records.get_submission(session, new_id).status == "pending"
    assert services.store.exists(new_key)
