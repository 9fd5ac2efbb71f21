"""Jobs phase by phase against real PostgreSQL and a moto S3 server (services/platform/jobs/).

Two "hosts" (separate work folders, shared database and bucket) run one job: the gpu phases on
host A, the cpu phases on host B, which has to fetch every stage it reuses from S3. The outbox's
phase sender is an in-process queue, so these tests exercise the job logic without a broker
(test_workers_celery.py adds the broker).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from services.pipeline.phases import PHASES
from services.pipeline.stage_runner import DONE_FILE
from services.pipeline.workspace import StageWorkspace, stage_index_key
from services.platform import identity
from services.platform import leaderboard as leaderboard_records
from services.platform import protocols as protocol_records
from services.platform import results as result_records
from services.platform import submissions as submission_records
from services.platform.jobs import (
    PHASE_QUEUES,
    JobServices,
    PhaseClaim,
    PhaseOutcome,
    StageMonitor,
    TransientPhaseError,
    claim_phase,
    complete_phase,
    job_config,
    job_stage_names,
    phase_of_stage,
    reap_stale_stages,
    run_job_phase,
    start_job,
)
from services.platform.jobs import records as job_records
from services.platform.outbox import RUN_PHASE, install_senders
from services.platform.results.document import result_rows_from_document
from services.settings import Settings
from services.storage.blob_s3 import S3BlobStore
from services.storage.db import Database
from services.storage.errors import BlobIntegrityError
from services.storage.migrate import upgrade_database
from services.storage.models import AGGREGATE_SEED
from services.storage.types import utc_now
from support.configs import tiny_protocol_config
from support.s3 import moto_s3_client

pytestmark = pytest.mark.integration

TINY_CONFIG: dict[str, Any] = tiny_protocol_config(name="tiny")


def tiny_config(seed: int = 0) -> dict[str, Any]:
    """The tiny config with another corpus seed (a different seed shares no stage)."""
    config = json.loads(json.dumps(TINY_CONFIG))
    config["synthetic"]["seed"] = seed
    return config


@dataclass
class Platform:
    """One database, one bucket, two worker hosts and the queue of sent tasks."""

    database: Database
    store: S3BlobStore
    root: Path
    sent: list[tuple[int, str]] = field(default_factory=list)
    team_id: int = 0

    def services(self, host: str, **settings: Any) -> JobServices:
        base = {"data_dir": self.root / host, "heartbeat_interval_s": 0.5}
        return JobServices(
            database=self.database,
            store=self.store,
            settings=Settings(**{**base, **settings}),
            worker_host=host,
        )

    def record_sent(self, payload: Any) -> None:
        """The outbox's phase sender: queue the task in memory."""
        self.sent.append((int(payload["job_id"]), str(payload["phase"])))

    def start(self, job_id: int) -> str | None:
        """Queue the job's first phase (what the API does at creation); returns it."""
        with self.database.session_scope() as session:
            message = start_job(session, job_id=job_id)
        return str(message.payload["phase"]) if message is not None else None

    def create_job(
        self, config: dict[str, Any], *, builtin: str = "pitch", protocol: bool = True
    ) -> int:
        with self.database.session_scope() as session:
            submission = submission_records.create_submission(
                session,
                self.team_id,
                f"{builtin}-{uuid.uuid4().hex[:6]}",
                "builtin",
                builtin_name=builtin,
                builtin_params={},
                visibility="public",
            )
            protocol_id = None
            if protocol:
                protocol_id = protocol_records.create_protocol(
                    session, "tiny", body={"config": config}
                ).id
            job = job_records.create_job(
                session,
                team_id=self.team_id,
                submission_id=submission.id,
                protocol_id=protocol_id,
                config=job_config(config, submission),  # built once, with the anonymizer
                stage_names=job_stage_names(),  # what the API plans
            ).job
            return job.id

    def drain(self, pick: Callable[[str], JobServices]) -> list[PhaseOutcome]:
        """Run every sent task (and those it sends) on the host ``pick(queue)`` names."""
        outcomes = []
        while self.sent:
            job_id, phase = self.sent.pop(0)
            outcomes.append(run_job_phase(pick(PHASE_QUEUES[phase]), job_id, phase))
        return outcomes


@pytest.fixture(scope="module")
def platform(
    postgres_database_factory: Callable[[], str],
    moto_endpoint: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Platform]:
    url = postgres_database_factory()
    upgrade_database(url)
    database = Database(url)
    store = S3BlobStore(
        f"unmask-workers-{uuid.uuid4().hex[:10]}", client=moto_s3_client(moto_endpoint)
    )
    out = Platform(database, store, tmp_path_factory.mktemp("hosts"))
    with database.session_scope() as session:
        out.team_id = identity.create_team(session, "workers-lab").id
    install_senders({RUN_PHASE: out.record_sent})
    yield out
    install_senders(None)
    database.dispose()


@pytest.fixture(scope="module")
def finished_job(platform: Platform) -> tuple[int, list[PhaseOutcome]]:
    """The tiny job, gpu phases on host A and cpu phases on host B (B starts empty)."""
    job_id = platform.create_job(tiny_config())
    host_a, host_b = platform.services("host-a"), platform.services("host-b")
    assert platform.start(job_id) == "corpus"
    outcomes = platform.drain(lambda queue: host_a if queue == "gpu" else host_b)
    return job_id, outcomes


def _results(database: Database, job_id: int) -> list[tuple[int, str, str, int, str, Any]]:
    with database.session_scope() as session:
        return sorted(
            (r.id, r.scenario, r.backend, r.seed, r.metric, r.value)
            for r in result_records.list_results(session, job_id)
        )


@pytest.mark.slow
def test_job_runs_every_phase_once_across_two_hosts(
    platform: Platform, finished_job: tuple[int, list[PhaseOutcome]]
) -> None:
    job_id, outcomes = finished_job
    assert [(o.phase, o.status) for o in outcomes] == [(p, "succeeded") for p in job_stage_names()]
    with platform.database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        assert job.state == "succeeded" and job.error_message is None
        hosts = {s.name: s.worker_host for s in job.stages}
        assert all(s.state == "succeeded" and s.attempts == 1 for s in job.stages)
        assert all(s.progress == 1.0 for s in job.stages)
        train = next(s for s in job.stages if s.name == "train")
        assert "[train]" in train.log_tail and "epoch 1/1" in train.log_tail
        embed_keys = next(s for s in job.stages if s.name == "embed").artifact_keys
    assert hosts["train"] == "host-a" and hosts["score"] == "host-b"
    # Host B never trained: it downloaded the trained models (and everything else it reused).
    b_stages = platform.root / "host-b" / "work" / "stages"
    for name, index_key in embed_keys.items():
        stage, key = name.split("/")
        assert (b_stages / stage / key / DONE_FILE).is_file()
        assert platform.store.exists(index_key)
    assert list((b_stages / "train").glob(f"*/{DONE_FILE}"))
    assert not list((b_stages / "train").glob("*.tmp"))


@pytest.mark.slow
def test_results_and_artifacts_match_the_report(
    platform: Platform, finished_job: tuple[int, list[PhaseOutcome]]
) -> None:
    job_id, _ = finished_job
    with platform.database.session_scope() as session:
        artifacts = result_records.list_artifacts(session, job_id)
        results = {
            (r.scenario, r.backend, r.seed, r.metric): r.value
            for r in result_records.list_results(session, job_id)
        }
    keys = {a.key for a in artifacts}
    assert f"jobs/{job_id}/results.json" in keys
    assert any(k.endswith(".png") for k in keys) and any(k.endswith(".svg") for k in keys)
    for artifact in artifacts:
        info = platform.store.stat(artifact.key)
        assert (info.sha256, info.size_bytes) == (artifact.sha256, artifact.size_bytes)
    document = json.loads(platform.store.get_bytes(f"jobs/{job_id}/results.json"))
    for row in document["rows"]:
        stored = results[(row["scenario"], row["backend"], row["seed"], "eer_percent")]
        assert stored == pytest.approx(row["eer_percent"])
    for entry in document["summary"]:
        mean = entry["eer_percent"]["mean"]
        key = (entry["scenario"], entry["backend"], AGGREGATE_SEED, "eer_percent")
        assert results[key] == pytest.approx(mean)
    assert len(results) == len(result_rows_from_document(document))


@pytest.mark.slow
def test_leaderboard_ranks_the_finished_job(
    platform: Platform, finished_job: tuple[int, list[PhaseOutcome]]
) -> None:
    job_id, _ = finished_job
    with platform.database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        protocol = job.protocol
        assert protocol is not None
        view = leaderboard_records.build_view(session, protocol, None)
        entry = next(r for r in view.ranked if r.job_id == job_id)
        metrics = entry.metrics_of(view.scenario, view.backend)
    value = entry.values[view.ranking_key]
    assert view.metric == "eer_percent" and value is not None and 0.0 <= value <= 100.0
    assert "srd_mean_disclosure_bits" in metrics


@pytest.mark.slow
def test_duplicate_deliveries_change_nothing(
    platform: Platform, finished_job: tuple[int, list[PhaseOutcome]]
) -> None:
    job_id, _ = finished_job
    before = _results(platform.database, job_id)
    host_b = platform.services("host-b")
    for phase in PHASE_QUEUES:
        outcome = run_job_phase(host_b, job_id, phase)
        assert outcome.status == "skipped" and "succeeded" in outcome.detail
    assert platform.sent == []
    assert _results(platform.database, job_id) == before


@pytest.mark.slow
def test_lost_worker_is_taken_over_and_its_late_result_ignored(platform: Platform) -> None:
    """Worker 1 claims corpus and goes silent; the reaper requeues; worker 2 finishes the job.

    The stages are cached from the finished job, so this re-runs the whole job cheaply (the
    report's plots are the main cost). Worker 1 reporting late must not record anything.
    """
    job_id = platform.create_job(tiny_config())
    lost = platform.services("lost-host", stage_stale_after_s=5)
    host = platform.services("host-a", stage_stale_after_s=5)
    claim = claim_phase(lost, job_id, "corpus")
    assert isinstance(claim, PhaseClaim) and claim.attempt == 1
    # A duplicate delivery while the claim is fresh is skipped, not run twice.
    assert run_job_phase(host, job_id, "corpus").status == "skipped"
    report = reap_stale_stages(host, now=utc_now() + dt.timedelta(seconds=6))
    assert report.requeued == [(job_id, "corpus")]
    assert platform.sent == [(job_id, "corpus")]
    outcomes = platform.drain(lambda queue: host)
    assert [o.status for o in outcomes] == ["succeeded"] * len(job_stage_names())
    late = complete_phase(lost, job_id, "corpus", claim, artifact_keys={}, input_hash="0" * 64)
    assert late.status == "superseded"
    with platform.database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        corpus = next(s for s in job.stages if s.name == "corpus")
        assert job.state == "succeeded"
        assert corpus.attempts == 2 and corpus.worker_host == "host-a"
    rows = _results(platform.database, job_id)
    identities = [r[1:5] for r in rows]
    assert len(identities) == len(set(identities)) > 0


def test_reaper_fails_a_stage_out_of_attempts_with_a_reason(platform: Platform) -> None:
    job_id = platform.create_job(tiny_config(seed=7))
    services = platform.services("host-a", stage_max_attempts=1, stage_stale_after_s=30)
    claim = claim_phase(services, job_id, "corpus")
    assert isinstance(claim, PhaseClaim)
    report = reap_stale_stages(services, now=utc_now() + dt.timedelta(seconds=31))
    assert report.failed == [(job_id, "corpus")]
    with platform.database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        states = {s.name: s.state for s in job.stages}
    assert job.state == "failed"
    assert "no heartbeat" in (job.error_message or "") and "1 attempt" in (job.error_message or "")
    assert states["corpus"] == "failed" and states["report"] == "cancelled"
    assert platform.sent == []


def test_reaper_resends_a_lost_task_and_cancels_stages_of_cancelled_jobs(
    platform: Platform,
) -> None:
    services = platform.services("host-a", stage_requeue_after_s=60)
    lost = platform.create_job(tiny_config(seed=8))  # committed, but its task never sent
    waiting = platform.create_job(tiny_config(seed=9))
    platform.start(waiting)
    platform.sent.clear()
    cancelled = platform.create_job(tiny_config(seed=10))
    with platform.database.session_scope() as session:
        job_records.ensure_stages(session, cancelled, list(PHASE_QUEUES))
        job_records.transition_job(session, cancelled, "cancelled")
    report = reap_stale_stages(services)
    assert (lost, "corpus") in report.resent
    assert all(job != waiting for job, _ in report.resent)  # sent just now: not yet lost
    assert {job for job, _ in report.cancelled} >= {cancelled}
    assert (lost, "corpus") in platform.sent
    later = reap_stale_stages(services, now=utc_now() + dt.timedelta(seconds=61))
    assert (waiting, "corpus") in later.resent
    platform.sent.clear()
    with platform.database.session_scope() as session:
        for job_id in (lost, waiting):
            job_records.mark_job_cancelled(session, job_id)


def test_unknown_anonymizer_fails_the_job_with_its_message(platform: Platform) -> None:
    job_id = platform.create_job(tiny_config(), builtin="no-such-anonymizer", protocol=False)
    services = platform.services("host-a")
    platform.start(job_id)
    outcomes = platform.drain(lambda queue: services)
    assert [(o.phase, o.status) for o in outcomes] == [
        ("corpus", "succeeded"),
        ("anonymize", "failed"),
    ]
    with platform.database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        anonymize = next(s for s in job.stages if s.name == "anonymize")
    assert job.state == "failed" and "no-such-anonymizer" in (job.error_message or "")
    assert anonymize.attempts == 1 and anonymize.error == job.error_message


@pytest.mark.slow
def test_cancel_stops_a_running_phase(platform: Platform) -> None:
    job_id = platform.create_job(tiny_config(seed=11))  # nothing cached: anonymize really runs
    services = platform.services("host-a", heartbeat_interval_s=0.2)
    platform.start(job_id)
    platform.sent.clear()
    assert run_job_phase(services, job_id, "corpus").status == "succeeded"
    platform.sent.clear()
    result: dict[str, PhaseOutcome] = {}
    worker = threading.Thread(
        target=lambda: result.update(out=run_job_phase(services, job_id, "anonymize"))
    )
    worker.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with platform.database.session_scope() as session:
            if job_records.get_stage(session, job_id, "anonymize").state == "running":
                job_records.mark_job_cancelled(session, job_id, reason="test cancel")
                break
        time.sleep(0.05)
    worker.join(timeout=120)
    assert result["out"].status == "cancelled"
    with platform.database.session_scope() as session:
        job = job_records.get_job(session, job_id)
        states = {s.name: s.state for s in job.stages}
    assert job.state == "cancelled"
    assert states["anonymize"] == "cancelled" and states["train"] == "cancelled"
    assert platform.sent == []  # the next phase was never sent


def test_unreachable_blob_store_requeues_the_stage_for_a_retry(
    platform: Platform, tmp_path: Path
) -> None:
    import boto3
    from botocore.config import Config

    dead = boto3.client(
        "s3",
        endpoint_url="http://127.0.0.1:9",  # discard port: connection refused
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    job_id = platform.create_job(tiny_config(seed=12))
    services = platform.services("host-a")
    services.store = S3BlobStore("dead", client=dead, create_bucket=False)
    with pytest.raises(TransientPhaseError) as info:
        run_job_phase(services, job_id, "corpus")
    assert info.value.requeued
    with platform.database.session_scope() as session:
        stage = job_records.get_stage(session, job_id, "corpus")
        job = job_records.get_job(session, job_id)
        # The transient retry is the task's to count, not the lost-worker budget's.
        assert stage.state == "queued" and stage.attempts == 0
        assert "transient" in (stage.error or "") and job.state == "running"
        job_records.mark_job_cancelled(session, job_id)


def test_transient_retries_leave_the_lost_worker_budget_intact(platform: Platform) -> None:
    """An S3 outage (more transient retries than UNMASK_STAGE_MAX_ATTEMPTS), then a lost worker:
    the reaper still requeues the stage, because transient retries are not lost workers."""
    import boto3
    from botocore.config import Config

    dead = boto3.client(
        "s3",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"max_attempts": 1}, connect_timeout=1),
    )
    job_id = platform.create_job(tiny_config(seed=14))
    outage = platform.services("host-a", stage_max_attempts=3, stage_stale_after_s=5)
    outage.store = S3BlobStore("dead", client=dead, create_bucket=False)
    for _ in range(outage.settings.stage_max_attempts + 1):
        with pytest.raises(TransientPhaseError):
            run_job_phase(outage, job_id, "corpus")
    lost = platform.services("lost-host", stage_max_attempts=3, stage_stale_after_s=5)
    claim = claim_phase(lost, job_id, "corpus")
    assert isinstance(claim, PhaseClaim) and claim.attempt == 1
    report = reap_stale_stages(lost, now=utc_now() + dt.timedelta(seconds=6))
    assert report.requeued == [(job_id, "corpus")] and report.failed == []
    platform.sent.clear()
    with platform.database.session_scope() as session:
        stage = job_records.get_stage(session, job_id, "corpus")
        assert stage.state == "queued" and stage.attempts == 1
        job_records.mark_job_cancelled(session, job_id)


def test_monitor_throttles_progress_writes(platform: Platform) -> None:
    job_id = platform.create_job(tiny_config(seed=13))
    services = platform.services("host-a")
    claim = claim_phase(services, job_id, "corpus")
    assert isinstance(claim, PhaseClaim)
    monitor = StageMonitor(
        platform.database, job_id, claim.stage_id, "corpus", heartbeat_interval_s=0.3
    )
    with monitor:
        for i in range(2000):
            monitor.report("corpus", i / 2000, f"step {i}")
            monitor.report("anonymize", 0.9, "another stage: ignored")
        time.sleep(0.8)
    assert 1 <= monitor.writes <= 6
    with platform.database.session_scope() as session:
        stage = job_records.get_stage(session, job_id, "corpus")
        assert stage.progress == pytest.approx(1999 / 2000)
        assert "step 1999" in stage.log_tail and "another stage" not in stage.log_tail
        assert stage.started_at is not None and stage.heartbeat_at is not None
        assert stage.heartbeat_at > stage.started_at
        job_records.mark_job_cancelled(session, job_id)


def test_stage_folders_round_trip_through_s3(platform: Platform, tmp_path: Path) -> None:
    key = uuid.uuid4().hex[:16]
    folder_a = tmp_path / "a" / "demo" / key
    (folder_a / "audio").mkdir(parents=True)
    (folder_a / "audio" / "x 1.wav").write_bytes(b"RIFF" + bytes(100))  # a space: stored by hash
    (folder_a / ".hidden").write_text("dot file")
    (folder_a / DONE_FILE).write_text("{}")
    a = StageWorkspace(platform.store, tmp_path / "a")
    b = StageWorkspace(platform.store, tmp_path / "b")
    assert b.download("demo", key).direction == "none"  # nothing remote yet
    first = a.upload("demo", key)
    assert first.direction == "upload" and first.files == 3
    assert a.upload("demo", key).direction == "none"  # content-addressed: never rewritten
    got = b.download("demo", key)
    assert got.direction == "download" and got.bytes == first.bytes
    folder_b = tmp_path / "b" / "demo" / key
    assert (folder_b / "audio" / "x 1.wav").read_bytes() == b"RIFF" + bytes(100)
    assert (folder_b / ".hidden").read_text() == "dot file"
    # A blob that no longer matches the index is refused and leaves no folder behind.
    index = json.loads(platform.store.get_bytes(stage_index_key("demo", key)))
    victim = next(e for e in index["files"] if e["path"] == DONE_FILE)
    platform.store.put_bytes(victim["key"], b'{"tampered": true}')
    c = StageWorkspace(platform.store, tmp_path / "c")
    with pytest.raises(BlobIntegrityError):
        c.download("demo", key)
    assert not (tmp_path / "c" / "demo" / key).exists()


def test_every_phase_has_a_queue() -> None:
    assert tuple(PHASE_QUEUES) == PHASES
    # The analyze phase's stages carry their own names; they are recorded under the phase.
    assert phase_of_stage("analysis-srd") == "analyze"
    assert phase_of_stage("train") == "train"
    assert phase_of_stage("legal") == "score"  # the legal metrics' stage, run with the rows
