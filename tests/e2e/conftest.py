"""The platform as processes: API (uvicorn subprocess), Celery workers and beat (subprocesses),
PostgreSQL and Redis on loopback, a moto S3 server (thread of the test process, reached over HTTP).

Every process gets the same ``UNMASK_*`` environment (the 12-factor contract); each worker its
own ``UNMASK_DATA_DIR``, i.e. its own host-local stage cache. The Redis keys of a session share a
unique prefix (``UNMASK_BROKER_KEY_PREFIX``), deleted at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
from psycopg import sql

from services.platform import identity
from services.storage.db import Database
from services.storage.migrate import upgrade_database
from support.workers import stop_process
from workers.names import QUEUE_REAPER

ROOT = Path(__file__).resolve().parents[2]
PG_HOST = os.environ.get("UNMASK_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("UNMASK_TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("UNMASK_TEST_PG_USER", "postgres")
REDIS_URL = os.environ.get("UNMASK_TEST_REDIS_URL", "redis://127.0.0.1:6379/12")
HMAC_KEY = "e2e-test-hmac-key"
BUCKET = "unmask-e2e"
# Podman's Docker-API socket (scripts/ensure_podman.sh); workers run container submissions there.
PODMAN_SOCKET = os.environ.get("UNMASK_PODMAN_SOCKET", "/run/unmask-podman.sock")


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class PlatformProcesses:
    """Handles on the running platform and helpers to start more workers."""

    root: Path
    env: dict[str, str]
    api_url: str
    database: Database
    s3_endpoint: str
    admin_token: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    workers: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def spawn(self, name: str, command: list[str], *, data_dir: Path | None = None) -> Any:
        env = {**os.environ, **self.env}
        if data_dir is not None:
            env["UNMASK_DATA_DIR"] = str(data_dir)
        log = open(self.root / f"{name}.log", "ab")
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        self.processes.append(process)
        return process

    def start_worker(self, name: str) -> subprocess.Popen[bytes]:
        """A worker on both queues with its own data folder (a fresh "host")."""
        command = [sys.executable, "-m", "celery", "-A", "workers.app", "worker"]
        command += ["-Q", "gpu,cpu", "--pool", "solo", "-n", f"{name}@%h", "--loglevel", "INFO"]
        process = self.spawn(name, command, data_dir=self.root / name)
        self.workers[name] = process
        return process

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _admin_connection() -> psycopg.Connection[Any]:
    return psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True
    )


@pytest.fixture(scope="session")
def e2e_platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlatformProcesses]:
    from moto.server import ThreadedMotoServer

    root = tmp_path_factory.mktemp("e2e")
    dbname = f"unmask_e2e_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with _admin_connection() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    url = f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"
    upgrade_database(url)
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    s3_endpoint = f"http://{host}:{port}"
    prefix = f"unmask-e2e-{uuid.uuid4().hex[:8]}:"
    api_port = free_port()
    env = {
        "UNMASK_DATABASE_URL": url,
        "UNMASK_BROKER_URL": REDIS_URL,
        "UNMASK_BROKER_KEY_PREFIX": prefix,
        "UNMASK_RESULT_BACKEND": "",
        "UNMASK_CELERY_EAGER": "0",
        "UNMASK_BLOB_BACKEND": "s3",
        "UNMASK_S3_ENDPOINT_URL": s3_endpoint,
        "UNMASK_S3_BUCKET": BUCKET,
        "UNMASK_S3_ACCESS_KEY_ID": "testing",
        "UNMASK_S3_SECRET_ACCESS_KEY": "testing",
        "UNMASK_TOKEN_HMAC_KEY": HMAC_KEY,
        "UNMASK_TRUSTED_HOSTS": '["127.0.0.1", "localhost"]',
        "UNMASK_DATA_DIR": str(root / "api"),
        "UNMASK_HEARTBEAT_INTERVAL_S": "1",
        "UNMASK_STAGE_STALE_AFTER_S": "8",
        "UNMASK_REAPER_INTERVAL_S": "2",
        # Stage claims (services/pipeline/stage_claims.py): a killed worker's claim expires
        # before the reaper hands its stage to another worker (stale after 8 s).
        "UNMASK_STAGE_CLAIM_LEASE_S": "6",
        "UNMASK_STAGE_CLAIM_HEARTBEAT_S": "1",
        "UNMASK_STAGE_CLAIM_POLL_MAX_S": "0.5",
        "UNMASK_NUM_THREADS": "1",
        "UNMASK_DEVICE": "cpu",
        # Container submissions (tests/e2e/test_platform_container.py): the engine the workers
        # use and small sandbox limits; shards of 16 so one set takes several container runs.
        "UNMASK_CONTAINER_ENGINE_URL": f"unix://{PODMAN_SOCKET}",
        "UNMASK_CONTAINER_MEMORY_MB": "1024",
        "UNMASK_CONTAINER_CPUS": "1",
        "UNMASK_CONTAINER_TIME_LIMIT_S": "300",
        "UNMASK_CONTAINER_SHARD_SIZE": "16",
        "UNMASK_CONTAINER_REGISTRIES": '["localhost"]',  # podman-built local images
        # Service submissions (tests/e2e/test_platform_service.py): the endpoint is on loopback.
        "UNMASK_OUTBOUND_ALLOW_PRIVATE_HOSTS": "1",
    }
    database = Database(url)
    with database.session_scope() as session:
        team = identity.create_team(session, "operators")
        admin_token = identity.issue_team_token(
            session, team.slug, hmac_key=HMAC_KEY, scopes=["admin"]
        ).plaintext
    platform = PlatformProcesses(
        root, env, f"http://127.0.0.1:{api_port}", database, s3_endpoint, admin_token
    )
    api = platform.spawn(
        "api",
        [
            sys.executable,
            "-m",
            "uvicorn",
            "api.app:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(api_port),
            "--log-level",
            "warning",
        ],
    )
    beat = [sys.executable, "-m", "celery", "-A", "workers.app", "beat", "--loglevel", "INFO"]
    platform.spawn("beat", [*beat, "--schedule", str(root / "beat-schedule")])
    # The reaper's own worker (queue QUEUE_REAPER), as in docker-compose.yml.
    reaper = [sys.executable, "-m", "celery", "-A", "workers.app", "worker", "--pool", "solo"]
    platform.spawn(
        "reaper",
        [*reaper, "-Q", QUEUE_REAPER, "-n", "reaper@%h", "--loglevel", "INFO"],
        data_dir=root / "reaper",
    )
    platform.start_worker("worker1")
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{platform.api_url}/v1/health/live", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if api.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"API did not start:\n{platform.log_tail('api')}")
        time.sleep(0.5)
    try:
        yield platform
    finally:
        for process in reversed(platform.processes):
            stop_process(process)
        moto.stop()
        database.dispose()
        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(f"{prefix}*"))
        if keys:
            client.delete(*keys)
        with _admin_connection() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
            )
