"""Two processes with separate stage folders race on the same stages through one S3 bucket.

moto's S3 server on loopback (with its conditional ``If-None-Match: *`` PUT), real processes
(spawned), a barrier per round so both start each stage at the same moment. Without claims both
compute every stage and race to publish; with the database claims (PostgreSQL) one computes and
the other waits for the published copy. Either way no run may fail, both racers must end with the
published bytes, and a third process must read every stage in full.
"""

from __future__ import annotations

import json
import multiprocessing
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from services.pipeline.workspace import (
    ATTEMPTS_DIR,
    StageWorkspace,
    local_entries,
    stage_index_key,
    stage_prefix,
)
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from services.storage.models import StageClaim
from support.s3 import moto_s3_client
from support.stage_race import RACE_STAGE, racer, reader

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROUNDS = 20


def _published_entries(store: S3BlobStore, key: str) -> dict[str, Any]:
    index = json.loads(store.get_bytes(stage_index_key(RACE_STAGE, key)))
    return {e["path"]: (e["size_bytes"], e["sha256"]) for e in index["files"]}


def _attempts(store: S3BlobStore, key: str) -> set[str]:
    prefix = f"{stage_prefix(RACE_STAGE, key)}/{ATTEMPTS_DIR}/"
    listing = store.client.list_objects_v2(Bucket=store.bucket, Prefix=prefix)
    return {o["Key"][len(prefix) :].split("/")[0] for o in listing.get("Contents", [])}


def _race(tmp_path: Path, endpoint: str, database_url: str | None) -> list[list[dict[str, Any]]]:
    bucket = f"race-{uuid.uuid4().hex[:12]}"
    S3BlobStore(bucket, client=moto_s3_client(endpoint))  # creates the bucket
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    tag = uuid.uuid4().hex[:8]
    reports = [tmp_path / f"racer{i}.json" for i in range(2)]
    processes = [
        context.Process(
            target=racer,
            args=(
                endpoint,
                bucket,
                str(tmp_path / f"host{i}" / "stages"),
                ROUNDS,
                tag,
                barrier,
                database_url,
                str(reports[i]),
            ),
        )
        for i in range(2)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
    runs = [json.loads(path.read_text()) for path in reports]
    failures = [r["error"] for run in runs for r in run if not r["ok"]]
    assert not failures, failures[0]
    assert all(len(run) == ROUNDS for run in runs)

    store = S3BlobStore(bucket, client=moto_s3_client(endpoint), create_bucket=False)
    keys = [r["key"] for r in runs[0]]
    assert keys == [r["key"] for r in runs[1]] and len(set(keys)) == ROUNDS
    for number, key in enumerate(keys):
        published = _published_entries(store, key)
        for run in runs:
            assert run[number]["problem"] is None
        # Both hosts go on with the published bytes (a loser adopted the winner's copy).
        for i in range(2):
            local = tmp_path / f"host{i}" / "stages" / RACE_STAGE / key
            assert StageWorkspace(store, local.parent.parent).is_local(RACE_STAGE, key)
            assert local_entries(local) == published
        outputs = [run[number]["outputs"] for run in runs]
        assert outputs[0] == outputs[1]
        # Only the published upload's blobs remain: a loser removed its own, nothing else.
        assert len(_attempts(store, key)) == 1

    reader_report = tmp_path / "reader.json"
    third = context.Process(
        target=reader,
        args=(endpoint, bucket, str(tmp_path / "reader" / "stages"), keys, str(reader_report)),
    )
    third.start()
    third.join(timeout=120)
    assert third.exitcode == 0
    read = json.loads(reader_report.read_text())
    assert [r["direction"] for r in read] == ["download"] * ROUNDS
    assert [r["problem"] for r in read] == [None] * ROUNDS
    return runs


def test_racing_hosts_without_claims_publish_one_consistent_copy(
    tmp_path: Path, moto_endpoint: str
) -> None:
    runs = _race(tmp_path, moto_endpoint, None)
    # Exactly one upload is published per round, and the race did happen: in some rounds both
    # processes computed the stage (how many depends on scheduling; the barrier makes it common).
    for number in range(ROUNDS):
        published = sorted("upload" in run[number]["transfers"] for run in runs)
        assert published == [False, True]
    both = sum(all(run[number]["computed"] for run in runs) for number in range(ROUNDS))
    assert both >= 1


def test_racing_hosts_with_database_claims_compute_each_stage_once(
    tmp_path: Path, moto_endpoint: str, postgres_database_factory: Callable[[], str]
) -> None:
    url = postgres_database_factory()
    upgrade_database(url)
    runs = _race(tmp_path, moto_endpoint, url)
    for number in range(ROUNDS):
        computed = [run[number]["computed"] for run in runs]
        assert sorted(computed) == [False, True]  # one computed, the other downloaded
    database = Database(url)
    try:
        with database.session_scope() as session:
            claims = session.query(StageClaim).filter(StageClaim.stage == RACE_STAGE).all()
            assert len(claims) == ROUNDS
            assert {(c.state, c.computations) for c in claims} == {("published", 1)}
    finally:
        database.dispose()
