"""Two API processes (two uvicorn servers, as replicas behind a load balancer) on one PostgreSQL
database under concurrent load: idempotent job creation, per-team phase limits, concurrent
re-runs of the leaderboard, webhook registrations against the per-team cap, and leaderboard reads
beside them. No answer is a server error, every limit is exact, no job is created twice.

Each request goes to one of the two processes in turn, so every race is also a race between
processes (the in-process locks of one server cannot be what keeps them exact)."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import func, select

from services.platform import identity, results
from services.platform.jobs import records as job_records
from services.platform.webhooks.endpoints import MAX_ENDPOINTS_PER_TEAM
from services.storage.db import Database
from services.storage.models import Job, WebhookEndpoint
from support.workers import stop_process

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
REDIS_URL = os.environ.get("UNMASK_TEST_REDIS_URL", "redis://127.0.0.1:6379/12")
PHASE_LIMIT = 3
HMAC_KEY = "two-api-processes-test-key"
PROTOCOL_BODY: dict[str, Any] = {
    "name": "two-processes",
    "config": {
        "synthetic": {
            "n_speakers": 12,
            "utts_per_speaker": 6,
            "n_attacker_train_speakers": 6,
            "n_eval_speakers": 4,
            "n_target_speakers": 2,
            "enrollments_per_speaker": 3,
            "trials_per_speaker": 3,
        },
        "scenarios": ["ignorant", "semi-informed"],
        "backends": ["cosine"],
    },
    "leaderboard": {"metric": "eer_percent"},
}


class World:
    """An admin and two teams (a, b) with tokens, issued straight in the database."""

    def __init__(self, database: Database) -> None:
        with database.session_scope() as session:
            for slug in ("ops", "team-a", "team-b"):
                identity.create_team(session, slug)

            def token(team: str, scopes: list[str]) -> str:
                issued = identity.issue_team_token(session, team, hmac_key=HMAC_KEY, scopes=scopes)
                return issued.plaintext

            self.admin = token("ops", ["admin"])
            self.a = token("team-a", ["submit", "read"])
            self.a_read = token("team-a", ["read"])
            self.b = token("team-b", ["submit", "read"])


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class TwoApis:
    """Two uvicorn processes of ``api.app:app`` on one database; ``next_url()`` alternates."""

    def __init__(self, urls: list[str], database: Database, world: World) -> None:
        self.urls = urls
        self.database = database
        self.world = world
        self._turn = itertools.cycle(range(len(urls)))
        self._lock = threading.Lock()
        self.answers: list[tuple[str, int, str]] = []

    def request(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        with self._lock:
            url = self.urls[next(self._turn)]
        headers = {"Authorization": f"Bearer {token}", **kwargs.pop("headers", {})}
        response = httpx.request(method, url + path, headers=headers, timeout=60, **kwargs)
        with self._lock:
            self.answers.append((f"{method} {path}", response.status_code, response.text[:300]))
        return response


@pytest.fixture()
def two_apis(pg_database: Database, tmp_path: Path) -> Iterator[TwoApis]:
    database, url = pg_database, pg_database.url
    world = World(database)
    prefix = f"unmask-two-apis-{uuid.uuid4().hex[:8]}:"
    ports = [_free_port(), _free_port()]
    env = {
        **os.environ,
        "UNMASK_DATABASE_URL": url,
        "UNMASK_BROKER_URL": REDIS_URL,
        "UNMASK_BROKER_KEY_PREFIX": prefix,
        "UNMASK_RESULT_BACKEND": "",
        "UNMASK_CELERY_EAGER": "0",
        "UNMASK_BLOB_BACKEND": "local",
        "UNMASK_BLOB_DIR": str(tmp_path / "blobs"),
        "UNMASK_DATA_DIR": str(tmp_path / "api"),
        "UNMASK_TOKEN_HMAC_KEY": HMAC_KEY,
        "UNMASK_TRUSTED_HOSTS": '["127.0.0.1", "localhost"]',
        "UNMASK_QUOTA_JOBS_PER_DAY": "1000",
        "UNMASK_QUOTA_CONCURRENT_JOBS": "1000",
        "UNMASK_QUOTA_SUBMISSIONS_PER_DAY": "1000",
    }
    processes: list[subprocess.Popen[bytes]] = []
    for index, port in enumerate(ports):
        log = open(tmp_path / f"api{index}.log", "ab")  # the child keeps its own descriptor
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "api.server",  # the image's server: the same options
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ROOT,
            )
        )
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        deadline = time.monotonic() + 50
        for process, base in zip(processes, urls, strict=True):
            while True:
                try:
                    if httpx.get(f"{base}/v1/health/live", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    logs = [(tmp_path / f"api{i}.log").read_text() for i in range(len(urls))]
                    raise RuntimeError(f"an API process did not start: {logs}")
                time.sleep(0.3)
        yield TwoApis(urls, database, world)
    finally:
        for process in processes:
            stop_process(process)
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)


def _ok(response: httpx.Response, *codes: int) -> dict[str, Any]:
    assert response.status_code in codes, f"{response.status_code}: {response.text[:500]}"
    body: dict[str, Any] = response.json()
    return body


def _succeed(database: Database, job_id: int, eer: float) -> None:
    with database.session_scope() as session:
        job_records.transition_job(session, job_id, "running")
        results.record_results_and_artifacts(
            session,
            job_id,
            results=[results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer)],
            artifacts=[],
            stage_id=job_records.get_stage(session, job_id, "report").id,
        )
        job_records.transition_job(session, job_id, "succeeded")


def _submission(apis: TwoApis, token: str, name: str) -> int:
    body = {
        "kind": "builtin",
        "name": name,
        "visibility": "public",
        "builtin": {"name": "pitch", "params": {"semitones": 2}},
    }
    return int(_ok(apis.request("POST", "/v1/submissions", token, json=body), 201)["id"])


def _parallel(calls: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    with ThreadPoolExecutor(max_workers=12) as pool:
        return list(pool.map(lambda call: call(), calls))


def test_two_api_processes_under_concurrent_load_keep_every_limit_exact(
    two_apis: TwoApis,
) -> None:
    apis, world = two_apis, two_apis.world
    protocol_id = _ok(
        apis.request("POST", "/v1/admin/protocols", world.admin, json=PROTOCOL_BODY), 201
    )["id"]
    now = dt.datetime.now(dt.UTC)
    phase = {
        "name": "development",
        "starts_at": (now - dt.timedelta(hours=1)).isoformat(),
        "ends_at": (now + dt.timedelta(hours=2)).isoformat(),
        "submission_limit": PHASE_LIMIT,
    }
    _ok(apis.request("POST", f"/v1/protocols/{protocol_id}/phases", world.admin, json=phase), 201)
    sub_a, sub_b = _submission(apis, world.a, "a-pitch"), _submission(apis, world.b, "b-pitch")
    board = f"/v1/protocols/{protocol_id}/leaderboard"
    stop_reading = threading.Event()
    reads: list[int] = []

    def read_the_board() -> None:
        while not stop_reading.is_set():
            reads.append(apis.request("GET", board, world.a_read).status_code)
            reads.append(apis.request("GET", f"/protocols/{protocol_id}", world.a).status_code)

    readers = [threading.Thread(target=read_the_board) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        # 1. One idempotency key, ten requests at once over both processes: one job.
        same = _parallel(
            [
                lambda: apis.request(
                    "POST",
                    "/v1/jobs",
                    world.a,
                    json={"submission_id": sub_a, "protocol_id": protocol_id},
                    headers={"Idempotency-Key": "one-job"},
                )
                for _ in range(10)
            ]
        )
        assert sorted({r.status_code for r in same}) in ([201], [200, 201]), [
            (r.status_code, r.text[:200]) for r in same
        ]
        assert sum(r.status_code == 201 for r in same) == 1
        assert len({r.json()["id"] for r in same}) == 1

        # 2. The phase allows PHASE_LIMIT jobs per team: team a has one, team b none.
        def create(token: str, submission: int) -> Callable[[], httpx.Response]:
            body = {"submission_id": submission, "protocol_id": protocol_id}
            return lambda: apis.request("POST", "/v1/jobs", token, json=body)

        raced = _parallel(
            [create(world.a, sub_a) for _ in range(8)] + [create(world.b, sub_b) for _ in range(8)]
        )
        codes_a = sorted(r.status_code for r in raced[:8])
        codes_b = sorted(r.status_code for r in raced[8:])
        assert codes_a == [201] * (PHASE_LIMIT - 1) + [409] * (8 - PHASE_LIMIT + 1), codes_a
        assert codes_b == [201] * PHASE_LIMIT + [409] * (8 - PHASE_LIMIT), codes_b
        with apis.database.session_scope() as session:
            per_submission = dict(
                session.execute(
                    select(Job.submission_id, func.count()).group_by(Job.submission_id)
                ).all()
            )
        assert per_submission == {sub_a: PHASE_LIMIT, sub_b: PHASE_LIMIT}
        # 3. Each submission's newest job succeeds; six concurrent re-runs of the whole board
        # queue one re-run per submission.
        for submission in (sub_a, sub_b):
            with apis.database.session_scope() as session:
                newest = session.scalar(
                    select(func.max(Job.id)).where(Job.submission_id == submission)
                )
            assert newest is not None
            _succeed(apis.database, newest, 30.0)
        rerun = f"/v1/protocols/{protocol_id}/rerun-outdated"
        plans = _parallel(
            [
                lambda: apis.request("POST", rerun, world.admin, json={"include_current": True})
                for _ in range(6)
            ]
        )
        queued = [len(_ok(plan, 200)["queued"]) for plan in plans]
        assert sum(queued) == 2, queued
        with apis.database.session_scope() as session:
            reruns = session.scalar(
                select(func.count()).select_from(Job).where(Job.charged.is_(False))
            )
        assert reruns == 2
        # 4. Webhook registrations race against the per-team cap.
        extra = 5

        def register(n: int) -> Callable[[], httpx.Response]:
            body = {"url": f"https://hooks.example.org/unmask/{n}"}
            return lambda: apis.request("POST", "/v1/webhooks", world.a, json=body)

        hooks = _parallel([register(n) for n in range(MAX_ENDPOINTS_PER_TEAM + extra)])
        codes = sorted(r.status_code for r in hooks)
        assert codes == [201] * MAX_ENDPOINTS_PER_TEAM + [409] * extra, codes
        with apis.database.session_scope() as session:
            stored = session.scalar(select(func.count()).select_from(WebhookEndpoint))
        assert stored == MAX_ENDPOINTS_PER_TEAM
    finally:
        stop_reading.set()
        for reader in readers:
            reader.join(30)
    assert reads and set(reads) == {200}, sorted(set(reads))
    errors = [answer for answer in apis.answers if answer[1] >= 500]
    assert errors == [], errors[:5]
