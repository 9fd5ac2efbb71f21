"""Load test of comparisons: many clients asking for pairs not computed yet, a leaderboard poll
beside them.

Starts the API server (``python -m api.server``, one process) on a fresh PostgreSQL database and a
local blob folder, seeds one protocol with ``--submissions`` succeeded jobs that kept their trials
(each pair's paired speaker bootstrap costs real CPU), then for ``--seconds``: ``--clients`` clients
each ask ``GET /v1/protocols/{id}/compare?a=&b=`` for pairs nobody asked for before (every 4th
request the overlaid DET plot of the pair instead), back to back, while one client polls the
leaderboard JSON at ``--poll-rate`` requests/s (open loop). Prints one table row per kind of
request: requests, server errors (5xx), other non-200 answers, latency percentiles; and how many
compare answers carried the paired interval (the others say it is being computed).

    .venv/bin/python benchmarks/compare_load.py               # 40 clients, 60 s
    .venv/bin/python benchmarks/compare_load.py --quick       # 10 clients, 10 s

Wanted: 0 server errors and the leaderboard's p99 under 1 s. The paired bootstraps and plots run
in the API's child processes (``UNMASK_CPU_POOL_PROCESSES``, passed through from the environment).
Prints the load average before and after the load. Needs PostgreSQL on
127.0.0.1:5432 (user postgres, trust auth; override with UNMASK_TEST_PG_HOST/PORT/USER). The
database is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
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
HMAC_KEY = "compare-load-benchmark"
CURVE = "semi-informed|cosine"


def _admin() -> psycopg.Connection:
    return psycopg.connect(
        host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True
    )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _trials(index: int, n_speakers: int, utterances: int) -> bytes:
    """Kept trials of one job: ``utterances`` per speaker against one model per speaker, its
    separation growing with ``index`` (every job a different system on one trial grid)."""
    from services.scoring import ScoredTrials, ScoreMatrix
    from services.scoring.trial_scores import save_scored_trials

    rng = np.random.default_rng(index)
    rows = np.repeat(np.arange(n_speakers), utterances)
    cols = np.arange(n_speakers)
    target = rows[:, None] == cols[None, :]
    scores = rng.normal(0.0, 1.0, target.shape) + target * (1.0 + 0.05 * index)
    speakers = np.array([f"spk{k:03d}" for k in range(n_speakers)])
    genders = np.array(["f"] * n_speakers)
    matrix = ScoreMatrix(scores, speakers[rows], genders[rows], speakers[cols], genders[cols])
    buffer = io.BytesIO()
    save_scored_trials(buffer, ScoredTrials("pooled", {"all": matrix}), grid="bench")
    return buffer.getvalue()


def _seed(url: str, blob_dir: Path, args: argparse.Namespace) -> tuple[str, int, list[int]]:
    """(read token, protocol id, submission ids) of a protocol whose jobs all succeeded."""
    from services.platform import identity, protocols, results
    from services.platform import submissions as submission_records
    from services.platform.jobs import records as job_records
    from services.platform.leaderboard import record_report_summary
    from services.scoring.trial_scores import trials_path
    from services.storage.blob_local import LocalBlobStore
    from services.storage.db import Database
    from services.storage.migrate import upgrade_database

    upgrade_database(url)
    database = Database(url)
    store = LocalBlobStore(blob_dir, signing_key=HMAC_KEY)
    submissions = []
    with database.session_scope() as session:
        team = identity.create_team(session, "bench")
        token = identity.issue_team_token(session, "bench", hmac_key=HMAC_KEY, scopes=["read"])
        protocol = protocols.create_protocol(
            session, "bench", body={"config": {"scenarios": ["semi-informed"]}}
        )
        for i in range(args.submissions):
            sub = submission_records.create_submission(
                session,
                team.id,
                f"anonymizer {i}",
                "builtin",
                builtin_name="pitch",
                builtin_params={"semitones": i},
                visibility="public",
            )
            job = job_records.create_job(
                session,
                team_id=team.id,
                submission_id=sub.id,
                protocol_id=protocol.id,
                config={},
                stage_names=["report"],
            ).job
            job_records.transition_job(session, job.id, "running")
            eer = 10.0 + i
            key = f"jobs/{job.id}/" + trials_path("baseline", "semi-informed", "cosine", 0)
            info = store.put_bytes(key, _trials(i, args.speakers, args.utterances))
            assert info.sha256 is not None
            results.record_results_and_artifacts(
                session,
                job.id,
                results=[results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer)],
                artifacts=[results.ArtifactRecord(key, info.size_bytes, info.sha256)],
                stage_id=job_records.get_stage(session, job.id, "report").id,
            )
            pfa = list(np.linspace(0.0, 1.0, 200))
            record_report_summary(
                session,
                job.id,
                trustworthy=True,
                trust_reasons=[],
                det_curves={CURVE: {"pfa": pfa, "pmiss": pfa[::-1], "eer": eer, "seed": 0}},
            )
            job_records.transition_job(session, job.id, "succeeded")
            submissions.append(sub.id)
        plaintext, protocol_id = token.plaintext, protocol.id
    database.dispose()
    return plaintext, protocol_id, submissions


@dataclass
class Kind:
    name: str
    latencies_ms: list[float] = field(default_factory=list)
    server_errors: int = 0
    other: int = 0
    with_interval: int = 0

    def row(self) -> str:
        lat = np.asarray(self.latencies_ms or [float("nan")])
        p50, p90, p99 = (float(np.percentile(lat, q)) for q in (50, 90, 99))
        return (
            f"| {self.name} | {len(self.latencies_ms)} | {self.server_errors} | {self.other} | "
            f"{p50:.0f} | {p90:.0f} | {p99:.0f} | {float(lat.max()):.0f} |"
        )


async def _load(
    base: str, token: str, protocol_id: int, submissions: list[int], args: argparse.Namespace
) -> tuple[Kind, Kind, Kind]:
    compare, det, board = Kind("compare JSON"), Kind("compare DET plot"), Kind("leaderboard JSON")
    pairs = list(itertools.combinations(submissions, 2))
    random.Random(0).shuffle(pairs)
    pending = iter(pairs)
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.perf_counter() + args.seconds
    limits = httpx.Limits(max_connections=args.clients + 8)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120.0) as http:

        async def record(kind: Kind, path: str, params: dict[str, object]) -> httpx.Response | None:
            started = time.perf_counter()
            try:
                response = await http.get(path, params=params, headers=headers)
            except httpx.HTTPError as exc:
                kind.server_errors += 1  # no answer at all: the server failed it
                if kind.server_errors == 1:
                    print(f"{kind.name}: no answer: {exc!r}")
                return None
            kind.latencies_ms.append((time.perf_counter() - started) * 1000.0)
            if response.status_code >= 500:
                kind.server_errors += 1
            elif response.status_code != 200:
                kind.other += 1
            return response

        async def client(index: int) -> None:
            for count in itertools.count():
                if time.perf_counter() >= deadline:
                    return
                a, b = next(pending, random.sample(submissions, 2))
                if count % 4 == 3:
                    path = f"/protocols/{protocol_id}/compare/det.png"
                    await record(det, path, {"a": a, "b": b, "curve": CURVE})
                    continue
                path = f"/v1/protocols/{protocol_id}/compare"
                response = await record(compare, path, {"a": a, "b": b})
                if response is not None and response.status_code == 200:
                    eer = next(
                        m for m in response.json()["metrics"] if m["metric"] == "eer_percent"
                    )
                    compare.with_interval += eer["paired_interval"] is not None

        async def poller() -> None:
            start = time.perf_counter()
            tasks = []
            for i in itertools.count():
                scheduled = start + i / args.poll_rate
                if scheduled >= deadline:
                    break
                await asyncio.sleep(max(0.0, scheduled - time.perf_counter()))
                path = f"/v1/protocols/{protocol_id}/leaderboard"
                tasks.append(asyncio.create_task(record(board, path, {})))
            await asyncio.gather(*tasks)

        await asyncio.gather(poller(), *(client(i) for i in range(args.clients)))
    return compare, det, board


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 clients for 10 s")
    parser.add_argument("--clients", type=int, default=40, help="concurrent compare clients")
    parser.add_argument("--seconds", type=float, default=60.0, help="duration of the load")
    parser.add_argument("--poll-rate", type=float, default=5.0, help="leaderboard requests/s")
    parser.add_argument("--submissions", type=int, default=40, help="succeeded submissions")
    parser.add_argument("--speakers", type=int, default=60, help="speakers per trial set")
    parser.add_argument("--utterances", type=int, default=10, help="trials per speaker")
    args = parser.parse_args()
    if args.quick:
        args.clients, args.seconds, args.submissions = 10, 10.0, 16

    dbname = f"unmask_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with _admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    url = f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"
    server: subprocess.Popen[bytes] | None = None
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            blob_dir = Path(data_dir) / "blobs"
            token, protocol_id, submissions = _seed(url, blob_dir, args)
            port = _free_port()
            env = {
                **os.environ,
                "UNMASK_DATABASE_URL": url,
                "UNMASK_TOKEN_HMAC_KEY": HMAC_KEY,
                "UNMASK_DATA_DIR": data_dir,
                "UNMASK_BLOB_BACKEND": "local",
                "UNMASK_BLOB_DIR": str(blob_dir),
                "UNMASK_TRUSTED_HOSTS": '["127.0.0.1"]',
                "UNMASK_AUTH_MAX_FAILURES": "0",
            }
            server = subprocess.Popen(
                [sys.executable, "-m", "api.server", "--host", "127.0.0.1",
                 "--port", str(port), "--log-level", "warning", "--no-access-log"],
                cwd=REPO_ROOT,
                env=env,
            )  # fmt: skip
            base = f"http://127.0.0.1:{port}"
            deadline = time.time() + 60
            while True:
                try:
                    if httpx.get(f"{base}/v1/health/live", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.time() > deadline or server.poll() is not None:
                    raise SystemExit("the API server did not start")
                time.sleep(0.2)
            load_before = os.getloadavg()
            kinds = asyncio.run(_load(base, token, protocol_id, submissions, args))
            load_after = os.getloadavg()
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                print("the API server did not stop within 30 s of SIGTERM; killed")
                server.kill()
                server.wait()
        with _admin() as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
            )
    compare = kinds[0]
    print(
        f"{args.clients} compare clients for {args.seconds:.0f} s on pairs not asked before "
        f"({args.submissions} submissions, {args.speakers} speakers x {args.utterances} trials), "
        f"leaderboard polled at {args.poll_rate:g}/s; one API process "
        f"(UNMASK_CPU_POOL_PROCESSES={os.environ.get('UNMASK_CPU_POOL_PROCESSES', '1')})"
    )
    print(
        f"load average (1, 5, 15 min) on {os.cpu_count()} CPUs: before the load "
        f"{', '.join(f'{x:.2f}' for x in load_before)}; after it "
        f"{', '.join(f'{x:.2f}' for x in load_after)}"
    )
    print(
        "| request | answered | server errors (5xx) | other non-200 | p50 ms | p90 ms | p99 ms"
        " | max ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in kinds:
        print(kind.row())
    print(f"compare answers with the paired interval: {compare.with_interval}")
    board = kinds[2]
    p99 = float(np.percentile(board.latencies_ms, 99)) if board.latencies_ms else float("inf")
    errors = sum(k.server_errors for k in kinds)
    print(f"server errors: {errors}; leaderboard p99: {p99:.0f} ms (wanted: 0 and < 1000 ms)")


if __name__ == "__main__":
    main()
