"""The utility ASR trained at a protocol's registration (services/platform/protocols/asr.py
queues it, services/platform/jobs/protocol_asr.py trains it).

Registering a protocol whose config measures the WER queues exactly one training (the outbox's
``train_protocol_asr`` message, a Celery task on the model queue); the jobs on that protocol then
train no ASR: after the training they download it, during it they wait for it (the stage key's
claim), and a job that came first leaves the registration's task nothing to train. Each "host"
has its own stage folder; the database and the blob store are shared. The protocol is the micro
one with a 1-epoch, 16-wide ASR, so every training takes seconds.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.pipeline.config import EvaluationConfig, parse_config
from services.pipeline.stage_claims import ClaimStatus
from services.platform import identity
from services.platform import protocols as protocol_records
from services.platform import submissions as submission_records
from services.platform.jobs import JobServices
from services.platform.jobs.config import build_job_config, run_config
from services.platform.jobs.protocol_asr import train_protocol_asr
from services.platform.jobs.stage_claims import DatabaseStageClaims
from services.platform.outbox import TRAIN_PROTOCOL_ASR, install_senders
from services.settings import Settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.models import OutboxMessage, ProtocolRecord
from support.configs import micro_protocol_config

pytestmark = pytest.mark.integration

PROTOCOL_CONFIG: dict[str, Any] = micro_protocol_config(
    utility={"asr": {"epochs": 1, "hidden_size": 16}}
)


@pytest.fixture()
def trainings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Every utility ASR training (its number of utterances), on one torch thread."""
    import torch

    import services.utility.asr as asr_module

    trained: list[int] = []
    real_train = asr_module.train_asr

    def counting_train(audio: list[Any], *args: Any, **kwargs: Any) -> Any:
        trained.append(len(audio))
        return real_train(audio, *args, **kwargs)

    monkeypatch.setattr(asr_module, "train_asr", counting_train)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield trained
    finally:
        torch.set_num_threads(before)


def _host(database: Database, store: LocalBlobStore, root: Path, name: str) -> JobServices:
    settings = Settings(
        data_dir=root / name,
        stage_claim_poll_max_s=0.2,
        stage_claim_heartbeat_s=1.0,
    )
    return JobServices(database, store, settings, worker_host=name)


def _register(database: Database, name: str = "asr-protocol") -> int:
    with database.session_scope() as session:
        return protocol_records.create_protocol(session, name, body={"config": PROTOCOL_CONFIG}).id


def _protocol(database: Database, protocol_id: int) -> ProtocolRecord:
    with database.session_scope() as session:
        protocol = protocol_records.get_protocol_by_id(session, protocol_id)
        session.expunge(protocol)
        return protocol


def _job_config(database: Database, protocol_id: int, builtin: str) -> EvaluationConfig:
    """The stored config of a job of a new team's ``builtin`` submission on the protocol."""
    with database.session_scope() as session:
        team = identity.create_team(session, f"t-{uuid.uuid4().hex[:8]}")
        submission = submission_records.create_submission(
            session, team.id, builtin, "builtin", builtin_name=builtin, builtin_params={}
        )
        protocol = protocol_records.get_protocol_by_id(session, protocol_id)
        built = build_job_config(protocol, submission, {}, settings=Settings())
    return parse_config(built)


def _job_asr(services: JobServices, config: EvaluationConfig) -> tuple[str, list[str]]:
    """A job's utility ASR on ``services``' host, composed as its phase composes it
    (services/platform/jobs/runner.py): its stage key and the stage's transfers."""
    from services.anonymizers.container import ContainerSandbox
    from services.pipeline.sets import corpus_stage, original_sets
    from services.pipeline.stages.context import AudioCache, StageContext, no_progress
    from services.pipeline.stages.utility import asr_stage
    from services.pipeline.workspace import StageWorkspace, SyncedStageRunner

    stages_dir = services.stages_dir()
    claims = DatabaseStageClaims.from_settings(services.database, services.settings)
    runner = SyncedStageRunner(
        stages_dir, StageWorkspace(services.store, stages_dir), claims=claims
    )
    ctx = StageContext(
        run_config(config, services.settings),
        runner,
        no_progress,
        AudioCache(),
        None,
        ContainerSandbox.from_settings(services.settings),
    )
    protocol, manifest, key = corpus_stage(ctx)
    _, asr_key, _ = asr_stage(ctx, original_sets(protocol, manifest, key))
    return asr_key, [t.direction for t in runner.transfers if t.stage == "utility-asr"]


def test_registering_queues_one_training_through_celery_and_a_job_after_it_trains_none(
    sqlite_migrated_database: Database, tmp_path: Path, trainings: list[int]
) -> None:
    """Eager Celery (tasks run inline at the commit): registration -> outbox -> task -> ready."""
    from support.workers import celery_app_on

    database = sqlite_migrated_database
    store = LocalBlobStore(tmp_path / "blobs", signing_key="k")
    registry = _host(database, store, tmp_path, "gpu-a")
    eager = registry.settings.model_copy(update={"celery_eager": True})
    with celery_app_on(eager, registry):
        protocol_id = _register(database)  # the task runs when this transaction commits
        again = _register(database)  # the same content: that version, nothing queued
    assert again == protocol_id
    protocol = _protocol(database, protocol_id)
    assert (protocol.asr_state, protocol.asr_error) == ("ready", None)
    assert protocol.asr_key is not None and protocol.asr_key.startswith("utility-asr:")
    assert len(trainings) == 1 and trainings[0] > 0
    with database.session_scope() as session:
        messages = session.query(OutboxMessage).filter(OutboxMessage.topic == TRAIN_PROTOCOL_ASR)
        assert [(m.payload, m.sent_at is not None) for m in messages] == [
            ({"protocol_id": protocol_id}, True)
        ]

    # Two submissions' jobs on two other hosts: both download it, neither trains.
    for host, builtin in (("gpu-b", "pitch"), ("gpu-c", "vtln")):
        config = _job_config(database, protocol_id, builtin)
        key, transfers = _job_asr(_host(database, store, tmp_path, host), config)
        assert key == protocol.asr_key
        assert transfers == ["download"]
    assert len(trainings) == 1


def test_a_job_during_the_registrations_training_waits_for_it(
    pg_database: Database,
    tmp_path: Path,
    trainings: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import services.utility.asr as asr_module

    store = LocalBlobStore(tmp_path / "blobs", signing_key="k")
    sent: list[int] = []
    install_senders({TRAIN_PROTOCOL_ASR: lambda payload: sent.append(payload["protocol_id"])})
    try:
        protocol_id = _register(pg_database, f"p-{uuid.uuid4().hex[:6]}")
    finally:
        install_senders(None)
    assert sent == [protocol_id]
    assert _protocol(pg_database, protocol_id).asr_state == "queued"

    # The registration's training holds the stage key's claim until the job has asked for it.
    training, release = threading.Event(), threading.Event()
    counting_train = asr_module.train_asr

    def held_train(*args: Any, **kwargs: Any) -> Any:
        training.set()
        assert release.wait(60)
        return counting_train(*args, **kwargs)

    monkeypatch.setattr(asr_module, "train_asr", held_train)
    answers: list[tuple[str, ClaimStatus]] = []
    real_acquire = DatabaseStageClaims.try_acquire

    def recording_acquire(self: DatabaseStageClaims, stage: str, key: str, **kw: Any) -> Any:
        status = real_acquire(self, stage, key, **kw)
        answers.append((stage, status))
        return status

    monkeypatch.setattr(DatabaseStageClaims, "try_acquire", recording_acquire)
    outcome: dict[str, Any] = {}
    registry = _host(pg_database, store, tmp_path, "gpu-a")
    task = threading.Thread(
        target=lambda: outcome.update(task=train_protocol_asr(registry, sent[0]))
    )
    task.start()
    assert training.wait(120)
    assert _protocol(pg_database, protocol_id).asr_state == "running"
    config = _job_config(pg_database, protocol_id, "pitch")
    worker_b = _host(pg_database, store, tmp_path, "gpu-b")
    job = threading.Thread(target=lambda: outcome.update(job=_job_asr(worker_b, config)))
    job.start()
    deadline = time.monotonic() + 60
    while ("utility-asr", ClaimStatus.HELD) not in answers and time.monotonic() < deadline:
        time.sleep(0.05)
    release.set()
    task.join(120)
    job.join(120)
    assert ("utility-asr", ClaimStatus.HELD) in answers  # the job waited for the training
    protocol = _protocol(pg_database, protocol_id)
    assert outcome["task"] == "ready" and protocol.asr_state == "ready"
    assert outcome["job"] == (protocol.asr_key, ["download"])
    assert len(trainings) == 1


def test_a_job_before_the_training_leaves_it_nothing_to_train_and_failures_are_requeued(
    pg_database: Database,
    tmp_path: Path,
    trainings: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import services.utility.asr as asr_module
    from services.errors import CorpusError

    store = LocalBlobStore(tmp_path / "blobs", signing_key="k")
    name = f"p-{uuid.uuid4().hex[:6]}"
    protocol_id = _register(pg_database, name)  # no sender: the message waits in the outbox
    job_key, transfers = _job_asr(
        _host(pg_database, store, tmp_path, "gpu-b"), _job_config(pg_database, protocol_id, "pitch")
    )
    assert transfers == ["upload"] and len(trainings) == 1
    registry = _host(pg_database, store, tmp_path, "gpu-a")
    assert train_protocol_asr(registry, protocol_id) == "ready"
    assert _protocol(pg_database, protocol_id).asr_key == job_key
    assert len(trainings) == 1  # the task downloaded the job's
    assert train_protocol_asr(registry, protocol_id) == "skipped: ready"

    # A training that fails on bad input is recorded; registering again queues it again.
    other = micro_protocol_config(utility={"asr": {"epochs": 1, "hidden_size": 8}})

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise CorpusError("utterance x: unreadable")

    monkeypatch.setattr(asr_module, "train_asr", broken)
    with pg_database.session_scope() as session:
        failing = protocol_records.create_protocol(session, name, body={"config": other}).id
    assert train_protocol_asr(registry, failing) == "failed"
    failed = _protocol(pg_database, failing)
    assert (failed.asr_state, failed.asr_error) == ("failed", "utterance x: unreadable")
    with pg_database.session_scope() as session:
        again = protocol_records.create_protocol(session, name, body={"config": other})
        assert (again.id, again.asr_state) == (failing, "queued")
        queued = session.query(OutboxMessage).filter(OutboxMessage.topic == TRAIN_PROTOCOL_ASR)
        assert sorted(m.payload["protocol_id"] for m in queued if m.sent_at is None) == sorted(
            [protocol_id, failing, failing]
        )


def test_a_protocol_without_wer_queues_nothing(pg_database: Database) -> None:
    bodies = (
        {"config": micro_protocol_config()},  # no utility block
        {"config": micro_protocol_config(utility={"wer": False})},
    )
    with pg_database.session_scope() as session:
        before = session.query(OutboxMessage).count()
        for i, body in enumerate(bodies):
            protocol = protocol_records.create_protocol(session, f"no-asr-{i}", body=body)
            assert protocol.asr_state is None
        assert session.query(OutboxMessage).count() == before


def test_the_protocol_routes_show_the_asr_state(
    make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any], api_dispatcher: Any
) -> None:
    client = make_api_client()
    admin = api_world.auth(api_world.admin)
    config = {**api_protocol_body["config"], "utility": {"asr": {"epochs": 1}}}
    created = client.post(
        "/v1/admin/protocols", json={**api_protocol_body, "config": config}, headers=admin
    )
    assert created.status_code == 201, created.text
    protocol = created.json()
    assert protocol["asr"]["state"] == "queued" and protocol["asr"]["error"] is None
    assert api_dispatcher.asr_trainings == [protocol["id"]]
    fetched = client.get(f"/v1/protocols/{protocol['id']}", headers=admin)
    assert fetched.status_code == 200 and fetched.json()["asr"]["state"] == "queued"
    page = client.get(f"/protocols/{protocol['id']}")
    assert page.status_code == 200
    assert re.search(r'id="protocol-asr">Utility ASR .*<strong>queued</strong>', page.text)
    plain = client.post(
        "/v1/admin/protocols", json={**api_protocol_body, "name": "no-wer"}, headers=admin
    )
    assert plain.status_code == 201 and plain.json()["asr"] is None
    assert api_dispatcher.asr_trainings == [protocol["id"]]


def test_the_training_task_goes_to_the_gpu_queue_with_the_utility_phases_limits(
    pg_database: Database, tmp_path: Path
) -> None:
    """Through Redis, no worker: the message the registration's commit publishes."""
    import json

    import redis

    from services.platform.jobs import stage_time_limit_s
    from support.workers import celery_app_on

    url = "redis://127.0.0.1:6379/13"
    prefix = f"unmask-test-{uuid.uuid4().hex[:8]}:"
    settings = Settings(data_dir=tmp_path / "data", broker_url=url)
    with celery_app_on(settings, key_prefix=prefix):
        protocol_id = _register(pg_database)
        client = redis.Redis.from_url(url)
        messages = [json.loads(m) for m in client.lrange(f"{prefix}gpu", 0, -1)]
        assert client.llen(f"{prefix}cpu") == 0
    assert len(messages) == 1
    headers = messages[0]["headers"]
    assert headers["task"] == "unmask.train_protocol_asr"
    assert headers["argsrepr"] == f"({protocol_id},)"
    soft = stage_time_limit_s(settings, "utility")
    assert headers["timelimit"] == [soft + settings.stage_hard_limit_margin_s, soft]
