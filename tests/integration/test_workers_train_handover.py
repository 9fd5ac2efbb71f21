"""Training handed over between hosts: a worker SIGKILLed mid-training on host A is resumed on
host B from the last epoch A uploaded, and the model equals an uninterrupted run's.

Two real Celery worker processes, each with its own work folder (``UNMASK_DATA_DIR``), share
only PostgreSQL, Redis (unique key prefix) and a moto S3 server on loopback. The reaper runs in
this test process (the requeue goes out through the outbox's Celery sender, as beat's would).
"""

from __future__ import annotations

import io
import json
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from services.pipeline.checkpoint_sync import CHECKPOINTS_PREFIX, POINTER_FILE
from services.pipeline.config import parse_config
from services.pipeline.evaluation import EvaluationRun
from services.platform.jobs import JobServices, reap_stale_stages, start_job
from services.platform.jobs import records as job_records
from services.settings import Settings
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from support.configs import micro_protocol_config
from support.s3 import moto_s3_client
from support.seeding import planned_builtin_job
from support.workers import celery_app_on, spawn_celery, stop_process, wait_until_ready
from workers.errors import transient_errors

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_URL = "redis://127.0.0.1:6379/13"
EPOCHS = 24  # 2 steps each: long enough to be caught after an uploaded epoch, short to redo
STALE_AFTER_S = 3.0
CONFIG = micro_protocol_config(
    scenarios=["original", "ignorant"],  # one recognizer (original speech): one train stage
    backends=["cosine"],
    metrics={"bootstrap_resamples": 5},
    # Every epoch runs (no early stop): the test follows the epochs across the handover.
    training={"epochs": EPOCHS, "patience": None},
)


@pytest.fixture()
def hosts(
    migrated_postgres_url: str, pg_database: Database, moto_endpoint: str, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    bucket = f"unmask-handover-{uuid.uuid4().hex[:8]}"
    client = moto_s3_client(moto_endpoint)
    store = S3BlobStore(bucket, client=client)
    prefix = f"unmask-handover-{uuid.uuid4().hex[:8]}:"
    env = {
        "UNMASK_DATABASE_URL": migrated_postgres_url,
        "UNMASK_BROKER_URL": REDIS_URL,
        "UNMASK_BROKER_KEY_PREFIX": prefix,
        "UNMASK_RESULT_BACKEND": "",
        "UNMASK_CELERY_EAGER": "0",
        "UNMASK_BLOB_BACKEND": "s3",
        "UNMASK_S3_ENDPOINT_URL": moto_endpoint,
        "UNMASK_S3_BUCKET": bucket,
        "UNMASK_S3_ACCESS_KEY_ID": "testing",
        "UNMASK_S3_SECRET_ACCESS_KEY": "testing",
        "UNMASK_HEARTBEAT_INTERVAL_S": "0.5",
        "UNMASK_STAGE_STALE_AFTER_S": str(STALE_AFTER_S),
        "UNMASK_NUM_THREADS": "1",
        "UNMASK_DEVICE": "cpu",
    }
    settings = Settings(
        data_dir=tmp_path / "test-process",
        broker_url=REDIS_URL,
        stage_stale_after_s=STALE_AFTER_S,
    )
    services = JobServices(
        pg_database, store, settings, worker_host="reaper", transient_errors=transient_errors()
    )
    processes: list[Any] = []

    def start(name: str) -> Any:
        log = tmp_path / f"{name}.log"
        command = ["worker", "-Q", "gpu,cpu", "--pool", "solo", "-n", f"{name}@%h", "-l", "INFO"]
        process = spawn_celery(command, {**env, "UNMASK_DATA_DIR": str(tmp_path / name)}, log)
        processes.append(process)
        wait_until_ready(process, log)
        return process

    with celery_app_on(settings, services, key_prefix=prefix):
        try:
            yield {
                "start": start,
                "services": services,
                "client": client,
                "bucket": bucket,
                "root": tmp_path,
            }
        finally:
            for process in processes:
                stop_process(process)


def _keys(client: Any, bucket: str, prefix: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return [o["Key"] for o in listed.get("Contents", [])]


def _train_stage(database: Database, job_id: int) -> Any:
    with database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        stage = next(s for s in job.stages if s.name == "train")
        return job.state, stage.state, stage.attempts, stage.worker_host


def _encoder(blob: bytes) -> dict[str, torch.Tensor]:
    payload = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
    return {k: v for k, v in payload["encoder"].items()}


def test_a_worker_killed_mid_training_is_resumed_on_another_host_from_its_uploaded_epoch(
    hosts: dict[str, Any], pg_database: Database
) -> None:
    client, bucket, services = hosts["client"], hosts["bucket"], hosts["services"]
    job_id = planned_builtin_job(pg_database, CONFIG, team_slug=f"t-{uuid.uuid4().hex[:6]}")
    host_a = hosts["start"]("host-a")
    with pg_database.session_scope() as session:
        start_job(session, job_id=job_id)  # the first phase goes out after the commit

    # Host A trains; kill it once an epoch (not the last) is uploaded.
    deadline = time.monotonic() + 240
    uploaded = 0
    while uploaded < 2:
        assert time.monotonic() < deadline, "no checkpoint was uploaded"
        pointers = [
            k for k in _keys(client, bucket, CHECKPOINTS_PREFIX) if k.endswith(POINTER_FILE)
        ]
        if pointers:
            pointer = json.loads(client.get_object(Bucket=bucket, Key=pointers[0])["Body"].read())
            uploaded = int(pointer["epoch"])
        time.sleep(0.05)
    host_a.send_signal(signal.SIGKILL)
    host_a.wait(timeout=30)
    assert uploaded < EPOCHS, "training finished before host A could be killed"
    job_state, stage_state, attempts, worker = _train_stage(pg_database, job_id)
    assert (stage_state, attempts) == ("running", 1) and "host-a" in worker

    # Host B (an empty work folder) takes the stage over once the reaper finds it silent.
    hosts["start"]("host-b")
    deadline = time.monotonic() + 240
    while _train_stage(pg_database, job_id)[0] not in ("succeeded", "failed", "cancelled"):
        assert time.monotonic() < deadline, (hosts["root"] / "host-b.log").read_text()[-3000:]
        reap_stale_stages(services)
        time.sleep(0.5)
    job_state, stage_state, attempts, worker = _train_stage(pg_database, job_id)
    assert job_state == "succeeded" and stage_state == "succeeded"
    assert attempts == 2 and "host-b" in worker

    # B resumed after an epoch A uploaded (>= the one seen before the kill), not from scratch.
    [trained_key] = [
        k for k in _keys(client, bucket, "stages/train/") if k.endswith("trained.json")
    ]
    trained = json.loads(client.get_object(Bucket=bucket, Key=trained_key)["Body"].read())
    assert uploaded <= trained["resumed_after_epoch"] < EPOCHS
    assert [r["epoch"] for r in trained["history"]] == list(range(1, EPOCHS + 1))
    # The stage is published: its checkpoints are gone from the store.
    assert _keys(client, bucket, CHECKPOINTS_PREFIX) == []

    # The same model as a run that was never interrupted (in this process, its own folder).
    with pg_database.session_scope() as session:
        config = parse_config(job_records.get_job(session, job_id).config)
    config = config.model_copy(
        update={"training": config.training.model_copy(update={"device": "cpu"})}
    )
    reference = EvaluationRun(config, hosts["root"] / "reference")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers' UNMASK_NUM_THREADS: CPU results depend on it
    try:
        reference.run(stop_after="train")
    finally:
        torch.set_num_threads(threads)
    # stages/train/<key>/attempts/<uuid>/...: the published index names each file's blob.
    stage_key = trained_key.split("/")[2]
    index = json.loads(
        client.get_object(Bucket=bucket, Key=f"stages/train/{stage_key}/INDEX.json")["Body"].read()
    )
    blob_of = {entry["path"]: entry["key"] for entry in index["files"]}
    for name in ("last.pt", "best.pt"):
        local = reference.runner.folder("train", stage_key) / "model" / name
        stored = client.get_object(Bucket=bucket, Key=blob_of[f"model/{name}"])["Body"].read()
        a, b = _encoder(local.read_bytes()), _encoder(stored)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
