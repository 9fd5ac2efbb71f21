"""A service submission end to end: a job whose anonymize stage calls the example server
(examples/service-anonymizer/, the built-in pitch behind HTTP) on loopback, run phase by phase by
a worker's job services on PostgreSQL, lands on the leaderboard with the EER of the built-in
itself through the same seed."""

from __future__ import annotations

import importlib.util
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.anonymizers.kinds.registry import kind_of
from services.anonymizers.kinds.service import ServiceSpec, decrypt_secret
from services.platform import identity
from services.platform import leaderboard as leaderboard_records
from services.platform import protocols as protocol_records
from services.platform import results as result_records
from services.platform import submissions as submission_records
from services.platform.jobs import (
    PHASE_QUEUES,
    JobServices,
    job_config,
    job_stage_names,
    run_job_phase,
    start_job,
)
from services.platform.jobs import records as job_records
from services.platform.outbox import RUN_PHASE, install_senders
from services.settings import Settings, get_settings
from services.storage.blob_local import LocalBlobStore
from services.storage.db import Database
from services.storage.models import AGGREGATE_SEED
from support.configs import micro_protocol_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"semitones": 4}


def _example_app(secret: str) -> Any:
    path = ROOT / "examples" / "service-anonymizer" / "server.py"
    spec = importlib.util.spec_from_file_location("service_anonymizer_example_e2e", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.create_app(secret, "pitch", PARAMS)


class _Served:
    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        self.sock.close()


@pytest.fixture()
def worker(
    pg_database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[JobServices, list[Any]]]:
    # The anonymize stage reads the process's settings, as a worker process does.
    monkeypatch.setenv("UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS", "true")  # the service is on loopback
    monkeypatch.setenv("UNMASK_TOKEN_HMAC_KEY", "e2e-key")
    monkeypatch.setenv("UNMASK_CACHE_DIR", str(tmp_path / "cache"))
    get_settings.cache_clear()
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        data_dir=tmp_path / "host",
        heartbeat_interval_s=0.5,
    )
    assert settings.outbound_allow_private_hosts and settings.token_hmac_key == "e2e-key"
    services = JobServices(
        pg_database, LocalBlobStore(tmp_path / "blobs", signing_key="k"), settings
    )
    sent: list[Any] = []
    install_senders({RUN_PHASE: lambda payload: sent.append(payload)})
    yield services, sent
    install_senders(None)
    get_settings.cache_clear()


def _run(
    database: Database,
    services: JobServices,
    sent: list[Any],
    team_id: int,
    protocol_id: int,
    config: dict[str, Any],
    kind: str,
    columns: dict[str, Any],
) -> int:
    with database.session_scope() as session:
        submission = submission_records.create_submission(
            session, team_id, f"{kind}-{uuid.uuid4().hex[:6]}", kind, visibility="public", **columns
        )
        job = job_records.create_job(
            session,
            team_id=team_id,
            submission_id=submission.id,
            protocol_id=protocol_id,
            config=job_config(config, submission),
            stage_names=job_stage_names(),
        ).job
        job_id = job.id
    with database.session_scope() as session:
        start_job(session, job_id=job_id)
    while sent:
        payload = sent.pop(0)
        outcome = run_job_phase(services, int(payload["job_id"]), str(payload["phase"]))
        assert PHASE_QUEUES[str(payload["phase"])]
        assert outcome is not None
    with database.session_scope() as session:
        state = job_records.get_job(session, job_id).state
        error = job_records.get_job(session, job_id).error_message
    assert state == "succeeded", error
    return job_id


def _eer(database: Database, job_id: int) -> float:
    with database.session_scope() as session:
        rows = [
            r
            for r in result_records.list_results(session, job_id)
            if r.metric == "eer_percent"
            and r.seed == AGGREGATE_SEED
            and r.scenario == "semi-informed"
        ]
    assert rows
    return float(rows[0].value)


def test_a_service_job_matches_the_builtin_through_the_same_seed(
    pg_database: Database, worker: tuple[JobServices, list[Any]], tmp_path: Path
) -> None:
    services, sent = worker
    config = micro_protocol_config(scenarios=["semi-informed"], backends=["cosine"])
    with pg_database.session_scope() as session:
        team_id = identity.create_team(session, "served-lab").id
        protocol_id = protocol_records.create_protocol(session, "micro", body={"config": config}).id
    builtin = _run(
        pg_database,
        services,
        sent,
        team_id,
        protocol_id,
        config,
        "builtin",
        {"builtin_name": "pitch", "builtin_params": PARAMS},
    )
    kind = kind_of("service")
    served: _Served | None = None
    try:
        # The URL is known once the server listens; the secret once the columns exist.
        placeholder = _Served(_example_app("pending"))
        columns = kind.submission_columns(ServiceSpec(url=placeholder.url), services.settings)
        placeholder.stop()
        secret = decrypt_secret(
            columns["service_secret"], services.settings.resolved_service_secret_key()
        )
        served = _Served(_example_app(secret))
        columns["service_url"] = served.url
        service = _run(
            pg_database, services, sent, team_id, protocol_id, config, "service", columns
        )
    finally:
        if served is not None:
            served.stop()
    # The endpoint answered every utterance (kept in the answer cache), and the EER is the
    # built-in's own.
    answers = list((tmp_path / "cache" / "service-answers").rglob("*.npy"))
    assert len(answers) > 10
    assert _eer(pg_database, service) == _eer(pg_database, builtin)
    with pg_database.session_scope() as session:
        protocol = job_records.get_job(session, service).protocol
        assert protocol is not None
        view = leaderboard_records.build_view(session, protocol, None)
        assert {builtin, service} <= {r.job_id for r in view.ranked}
