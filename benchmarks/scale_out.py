"""Scale-out: N independent jobs on 1, 2 and 4 Celery worker processes ("hosts").

    .venv/bin/python benchmarks/scale_out.py [--jobs 4] [--workers 1,2,4] [--quick]

Each worker is a real ``celery -A workers.app worker -Q gpu,cpu --pool solo`` process with its
own ``UNMASK_DATA_DIR`` (its own stage cache: nothing on disk is shared); the workers share only
PostgreSQL (a fresh database per row), the Redis broker (a fresh key prefix per row) and a moto
S3 server on loopback (a fresh bucket per row). The jobs use distinct synthetic-corpus seeds, so
no stage is shared between them: the speed-up is that of independent work. Every worker runs
torch on one thread (``UNMASK_NUM_THREADS=1``).

Printed per row: workers, wall time from the first job's start to the last job's end (workers
already up), the speed-up against the 1-worker row, the CPU seconds the workers used (from
``/proc``), and the 1-minute load average before the row (other processes on the machine).
The CPU seconds per job say what one more host would add: with H hosts of one worker each the
wall time tends to ``jobs / H * (CPU s per job)`` as long as H <= jobs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
import redis  # noqa: E402
from psycopg import sql  # noqa: E402

from services.platform import identity, submissions  # noqa: E402
from services.platform.jobs import job_config, job_stage_names, start_job  # noqa: E402
from services.platform.jobs import records as job_records  # noqa: E402
from services.settings import Settings  # noqa: E402
from services.storage.db import Database  # noqa: E402
from services.storage.migrate import upgrade_database  # noqa: E402

TERMINAL = {"succeeded", "failed", "cancelled"}


def job_protocol(seed: int, epochs: int) -> dict[str, Any]:
    """A small protocol (8 synthetic speakers, the tiny recognizer); ``seed``: its corpus."""
    return {
        "synthetic": {
            "n_speakers": 8,
            "utts_per_speaker": 4,
            "n_attacker_train_speakers": 4,
            "n_eval_speakers": 2,
            "n_target_speakers": 2,
            "enrollments_per_speaker": 2,
            "trials_per_speaker": 2,
            "min_duration_s": 2.0,
            "max_duration_s": 2.5,
            "seed": seed,
        },
        "scenarios": ["original", "ignorant", "semi-informed"],
        "backends": ["cosine"],
        "metrics": {"bootstrap_resamples": 10},
        "training": {"preset": "tiny", "epochs": epochs},
    }


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_row(args: argparse.Namespace, workers: int, moto_endpoint: str, root: Path) -> dict:
    """Start ``workers`` worker processes, run ``args.jobs`` jobs, return the row."""
    from services.storage.blob_s3 import S3BlobStore
    from workers.app import app, configure_app, install_outbox_senders

    dbname = f"unmask_scale_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(args.pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    base = args.pg_admin_url.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    url = f"{base}/{dbname}"
    upgrade_database(url)
    bucket = f"scale-{uuid.uuid4().hex[:8]}"
    import boto3
    from botocore.config import Config

    client = boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    S3BlobStore(bucket, client=client)  # creates the bucket
    prefix = f"unmask-scale-{uuid.uuid4().hex[:8]}:"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "UNMASK_DATABASE_URL": url,
        "UNMASK_BROKER_URL": args.redis_url,
        "UNMASK_BROKER_KEY_PREFIX": prefix,
        "UNMASK_RESULT_BACKEND": "",
        "UNMASK_CELERY_EAGER": "0",
        "UNMASK_BLOB_BACKEND": "s3",
        "UNMASK_S3_ENDPOINT_URL": moto_endpoint,
        "UNMASK_S3_BUCKET": bucket,
        "UNMASK_S3_ACCESS_KEY_ID": "testing",
        "UNMASK_S3_SECRET_ACCESS_KEY": "testing",
        "UNMASK_NUM_THREADS": "1",
        "UNMASK_DEVICE": "cpu",
    }
    settings = Settings(database_url=url, broker_url=args.redis_url, broker_key_prefix=prefix)
    configure_app(app, settings)
    install_outbox_senders(app, settings)
    database = Database(url)
    processes = []
    try:
        for i in range(workers):
            log = root / f"w{workers}-{i}.log"
            command = [sys.executable, "-m", "celery", "-A", "workers.app", "worker"]
            command += ["-Q", "gpu,cpu", "--pool", "solo", "-n", f"w{i}@%h", "-l", "INFO"]
            worker_env = {**env, "UNMASK_DATA_DIR": str(root / f"w{workers}-{i}")}
            with open(log, "ab") as handle:
                processes.append(
                    subprocess.Popen(command, env=worker_env, stdout=handle, stderr=handle)
                )
        for i, process in enumerate(processes):
            log = root / f"w{workers}-{i}.log"
            deadline = time.monotonic() + 180
            while "ready" not in log.read_text(errors="replace"):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"worker did not start:\n{log.read_text()[-2000:]}")
                time.sleep(0.2)
        cpu_before = sum(cpu_seconds(p.pid) for p in processes)
        load = os.getloadavg()[0]
        job_ids = []
        with database.session_scope() as session:
            team = identity.create_team(session, f"scale-{uuid.uuid4().hex[:6]}")
            submission = submissions.create_submission(
                session, team.id, "pitch", "builtin", builtin_name="pitch", builtin_params={}
            )
            for j in range(args.jobs):
                config = job_config(job_protocol(1000 + j, args.epochs), submission)
                job = job_records.create_job(
                    session,
                    team_id=team.id,
                    submission_id=submission.id,
                    config=config,
                    stage_names=job_stage_names(),
                ).job
                job_ids.append(job.id)
        started = time.perf_counter()
        for job_id in job_ids:
            with database.session_scope() as session:
                start_job(session, job_id=job_id)  # sent to the broker after the commit
        deadline = time.monotonic() + args.timeout_s
        while True:
            with database.session_scope() as session:
                states = [job_records.get_job(session, j).state for j in job_ids]
            if all(s in TERMINAL for s in states):
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"jobs did not finish in {args.timeout_s} s: {states}")
            time.sleep(0.25)
        wall_s = time.perf_counter() - started
        cpu_s = sum(cpu_seconds(p.pid) for p in processes) - cpu_before
        if any(s != "succeeded" for s in states):
            raise SystemExit(f"jobs failed: {states}; see {root}")
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        database.dispose()
        keys = list(redis.Redis.from_url(args.redis_url).scan_iter(f"{prefix}*"))
        if keys:
            redis.Redis.from_url(args.redis_url).delete(*keys)
        with psycopg.connect(args.pg_admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname))
            )
    return {"workers": workers, "wall_s": wall_s, "cpu_s": cpu_s, "load": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=4, help="independent jobs per row")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--epochs", type=int, default=2, help="training epochs per job")
    parser.add_argument("--quick", action="store_true", help="2 jobs on 1 and 2 workers, 1 epoch")
    parser.add_argument("--timeout-s", type=float, default=1800.0)
    parser.add_argument("--pg-admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",")]
    if args.quick:
        args.jobs, args.epochs, counts = 2, 1, [1, 2]

    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's request log

    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    host, port = moto.get_host_and_port()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="unmask-scale-") as tmp:
            for workers in counts:
                rows.append(run_row(args, workers, f"http://{host}:{port}", Path(tmp)))
                print(f"... {workers} worker(s): {rows[-1]['wall_s']:.1f} s", flush=True)
    finally:
        moto.stop()
    first = rows[0]["wall_s"]
    print(f"\n{args.jobs} independent jobs ({args.epochs} epoch(s) each), {os.cpu_count()} CPUs")
    print(
        "| workers | wall time (s) | speed-up vs 1 | worker CPU (s) | CPU s / job | load before |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['workers']} | {row['wall_s']:.1f} | {first / row['wall_s']:.2f}x "
            f"| {row['cpu_s']:.1f} | {row['cpu_s'] / args.jobs:.1f} | {row['load']:.1f} |"
        )


if __name__ == "__main__":
    main()
