"""Load test of the HTTP gateway on loopback: job status requests at a fixed rate.

Starts the API server (``python -m api.server``, one process) on a fresh PostgreSQL database, seeds
a team, a token, a submission and a job with six stages, then sends ``GET /v1/jobs/{id}`` (bearer
auth + token lookup + job, stages and submission reads) at a fixed rate, open loop: request *i* is
sent at ``i / rate`` seconds whatever happened to the others, so a slow server shows up as latency
and not as a lower request rate. The reference row is ``GET /v1/health/live`` at the same rate (no
auth, no database): the ratio says what authentication and the database add.

    .venv/bin/python benchmarks/api_load.py            # 200 requests/s for 20 s per endpoint
    .venv/bin/python benchmarks/api_load.py --quick    # 100 requests/s for 5 s

Needs PostgreSQL on 127.0.0.1:5432 (user postgres, trust auth; override with
UNMASK_TEST_PG_HOST/PORT/USER). The database is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import psycopg
from psycopg import sql

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

PG_HOST = os.environ.get("UNMASK_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("UNMASK_TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("UNMASK_TEST_PG_USER", "postgres")
HMAC_KEY = "api-load-benchmark"
CONNECTIONS = 64
"""Keep-alive connections of the load client (requests beyond them wait, counted as latency)."""
STAGES = ["corpus", "anonymize", "train", "embed", "score", "report"]


def _admin() -> psycopg.Connection:
    return psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _seed(url: str) -> tuple[str, int]:
    from services.platform import identity
    from services.platform import submissions as submission_records
    from services.platform.jobs import records as job_records
    from services.storage.db import Database
    from services.storage.migrate import upgrade_database

    upgrade_database(url)
    database = Database(url)
    with database.session_scope() as session:
        team = identity.create_team(session, "bench")
        token = identity.issue_team_token(session, "bench", hmac_key=HMAC_KEY, scopes=["read"])
        sub = submission_records.create_submission(
            session, team.id, "pitch", "builtin", builtin_name="pitch", builtin_params={}
        )
        job = job_records.create_job(
            session, team_id=team.id, submission_id=sub.id, config={}, stage_names=STAGES
        ).job
        job_records.transition_job(session, job.id, "running")
        stage = job_records.get_stage(session, job.id, "corpus")
        job_records.transition_stage(session, stage.id, "running", worker_host="bench")
        job_records.heartbeat_stage(session, stage.id, progress=0.4, log="line\n" * 400)
        plaintext, job_id = token.plaintext, job.id
    database.dispose()
    return plaintext, job_id


@dataclass
class LoadResult:
    name: str
    sent: int
    errors: int
    duration_s: float
    latencies_ms: np.ndarray

    def row(self, reference_p50: float | None) -> str:
        lat = self.latencies_ms
        p50, p90, p99 = (float(np.percentile(lat, q)) for q in (50, 90, 99))
        ratio = "1.00 (reference)" if reference_p50 is None else f"{p50 / reference_p50:.2f}"
        return (
            f"| {self.name} | {self.sent / self.duration_s:.0f} | {self.errors} | {p50:.1f} | "
            f"{p90:.1f} | {p99:.1f} | {float(lat.max()):.1f} | {ratio} |"
        )


class _Connection:
    """One keep-alive HTTP/1.1 connection; ``get`` returns the status code (body read fully)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, request: bytes) -> int:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        try:
            self.writer.write(request)
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            fields = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
            await self.reader.readexactly(int(fields["content-length"]))
            return int(lines[0].split(" ", 2)[1])
        except (OSError, asyncio.IncompleteReadError, KeyError, ValueError):
            self.writer.close()
            self.writer = self.reader = None
            raise


async def _run_load(
    base_url: str,
    path: str,
    headers: dict[str, str],
    rate: float,
    seconds: float,
    name: str,
    client: str = "raw",
) -> LoadResult:
    n = int(rate * seconds)
    latencies = np.full(n, np.nan)
    errors = 0
    host, port = base_url.removeprefix("http://").split(":")
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        + "\r\n"
    ).encode()
    pool: asyncio.Queue[_Connection] = asyncio.Queue()
    for _ in range(CONNECTIONS):
        pool.put_nowait(_Connection(host, int(port)))
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=30.0) as http:

        async def fetch() -> int:
            if client == "httpx":
                return (await http.get(path, headers=headers)).status_code
            conn = await pool.get()
            try:
                return await conn.get(request)
            finally:
                pool.put_nowait(conn)

        # Warm-up: connections, the first token lookup, SQLAlchemy's compiled-statement cache.
        for _ in range(20):
            await fetch()
        start = time.perf_counter()

        async def one(index: int) -> None:
            nonlocal errors
            scheduled = start + index / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                ok = await fetch() == 200
            except (OSError, asyncio.IncompleteReadError, KeyError, ValueError, httpx.HTTPError):
                ok = False
            # From the scheduled send time: waiting in our own queue counts as latency too.
            latencies[index] = (time.perf_counter() - scheduled) * 1000
            if not ok:
                errors += 1

        await asyncio.gather(*(one(i) for i in range(n)))
        duration = time.perf_counter() - start
    return LoadResult(name, n, errors, duration, latencies[~np.isnan(latencies)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 requests/s for 5 s")
    parser.add_argument("--rate", type=float, default=None, help="requests per second")
    parser.add_argument("--seconds", type=float, default=None, help="duration per endpoint")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument(
        "--client",
        choices=["raw", "httpx"],
        default="raw",
        help="load client: raw asyncio HTTP/1.1 (default; light) or httpx.AsyncClient (about "
        "1 core at 120 requests/s here: it saturates before the server does)",
    )
    args = parser.parse_args()
    rate = args.rate or (100.0 if args.quick else 200.0)
    seconds = args.seconds or (5.0 if args.quick else 20.0)

    dbname = f"unmask_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with _admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    url = f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"
    server: subprocess.Popen[bytes] | None = None
    try:
        token, job_id = _seed(url)
        port = _free_port()
        with tempfile.TemporaryDirectory() as data_dir:
            env = {
                **os.environ,
                "UNMASK_DATABASE_URL": url,
                "UNMASK_TOKEN_HMAC_KEY": HMAC_KEY,
                "UNMASK_TRUSTED_HOSTS": '["127.0.0.1"]',
                "UNMASK_DATA_DIR": data_dir,
            }
            server = subprocess.Popen(
                [sys.executable, "-m", "api.server", "--host", "127.0.0.1",
                 "--port", str(port), "--log-level", "warning", "--no-access-log",
                 "--workers", str(args.workers)],
                cwd=REPO_ROOT,
                env=env,
            )  # fmt: skip
            base = f"http://127.0.0.1:{port}"
            deadline = time.time() + 60
            while True:
                try:
                    if httpx.get(f"{base}/v1/health/live", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("uvicorn did not start")
                time.sleep(0.2)
            load_before = os.getloadavg()
            reference = asyncio.run(
                _run_load(
                    base, "/v1/health/live", {}, rate, seconds, "GET /v1/health/live", args.client
                )
            )
            job = asyncio.run(
                _run_load(
                    base,
                    f"/v1/jobs/{job_id}",
                    {"Authorization": f"Bearer {token}"},
                    rate,
                    seconds,
                    "GET /v1/jobs/{id} (auth + DB)",
                    args.client,
                )
            )
            load_after = os.getloadavg()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        with _admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
            )

    print(
        f"target rate {rate:.0f} requests/s, {seconds:.0f} s per endpoint, open loop, "
        f"{args.workers} uvicorn worker(s), {args.client} client;"
    )
    print(
        f"1-minute load average {load_before[0]:.1f} before, {load_after[0]:.1f} after "
        f"({os.cpu_count()} CPUs; other processes included)"
    )
    print()
    print("| endpoint | achieved req/s | errors | p50 ms | p90 ms | p99 ms | max ms | p50 ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(reference.row(None))
    print(job.row(float(np.percentile(reference.latencies_ms, 50))))


if __name__ == "__main__":
    main()
