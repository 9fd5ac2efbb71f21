"""Leaderboard page render time for many submissions (goal: < 100 ms for 1,000).

Seeds N submissions of M teams (public and private, built-in baselines and containers), each with
a succeeded job and its long-format results (2 scenarios x 2 seeds + the aggregate rows, the
metrics a report stores), into a fresh SQLite file or PostgreSQL database; then requests
``GET /protocols/{id}`` through the ASGI app in-process (``TestClient``: the time includes
routing, two SQL queries, sorting and the Jinja2 render, no network) and reports median and p95.
The seeding stores each job's summary the way ``jobs.records.transition_job`` does when a job
succeeds. References, same data: the page's metric values aggregated from the result rows at
request time (what the page would cost without ``job_summaries``), and the naive page: one
results query per submission (N + 1 queries), as a template loop over
``results.list_results`` would do.

    .venv/bin/python benchmarks/leaderboard_page.py                 # SQLite, 1,000 submissions
    .venv/bin/python benchmarks/leaderboard_page.py --db postgresql # needs 127.0.0.1:5432
    .venv/bin/python benchmarks/leaderboard_page.py --quick
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import delete  # noqa: E402

from services.platform.hashing import canonical_json_hash  # noqa: E402
from services.platform.identity import create_team  # noqa: E402
from services.platform.leaderboard import leaderboard_table, refresh_job_summaries  # noqa: E402
from services.platform.protocols import create_protocol  # noqa: E402
from services.platform.results import list_results  # noqa: E402
from services.storage.db import Database  # noqa: E402
from services.storage.migrate import upgrade_database  # noqa: E402
from services.storage.models import (  # noqa: E402
    AGGREGATE_SEED,
    Job,
    JobSummaryRecord,
    Result,
    Submission,
)

PROTOCOL_BODY: dict[str, Any] = {
    "config": {"scenarios": ["ignorant", "semi-informed"], "backends": ["cosine"]},
    "leaderboard": {"metric": "eer_percent"},
}
SEED_METRICS = (
    "eer_percent",
    "eer_ci95_percent_low",
    "eer_ci95_percent_high",
    "min_cllr_bits",
    "linkability",
    "srd_empirical_mean_disclosure_bits",
    "srd_empirical_identification_rate_percent",
    "zebra_expected_disclosure_bits",
    "n_target",
    "n_nontarget",
)
AGGREGATE_METRICS = (
    "eer_percent",
    "min_cllr_bits",
    "linkability",
    "srd_mean_disclosure_bits",
    "srd_identification_rate_percent",
)


def seed_leaderboard(
    database: Database, n_submissions: int, *, n_teams: int = 20, seed: int = 0
) -> int:
    """Fill ``database`` with one protocol and ``n_submissions`` evaluated submissions.

    One in ten is private, one in five a built-in baseline, one in twenty lacks the SRD values
    (missing values). Returns the protocol id.
    """
    rng = random.Random(seed)
    now = dt.datetime.now(dt.UTC)
    with database.session_scope() as session:
        teams = [create_team(session, f"team-{i:03d}") for i in range(n_teams)]
        protocol = create_protocol(session, "bench-protocol", body=PROTOCOL_BODY)
        protocol_id = protocol.id
        submissions = []
        for i in range(n_submissions):
            builtin = i % 5 == 0
            content = {"kind": "builtin" if builtin else "container", "i": i}
            submissions.append(
                Submission(
                    team_id=teams[i % n_teams].id,
                    name=f"anonymizer {i:04d}",
                    kind="builtin" if builtin else "container",
                    visibility="private" if i % 10 == 3 else "public",
                    status="accepted",
                    content_hash=canonical_json_hash(content),
                    builtin_name="pitch" if builtin else None,
                    builtin_params={"semitones": i % 7} if builtin else None,
                    container_image=None if builtin else f"ghcr.io/lab/anon-{i}",
                    container_digest=None if builtin else "sha256:" + f"{i:064x}",
                    accepted_at=now,
                    created_at=now - dt.timedelta(minutes=n_submissions - i),
                )
            )
        session.add_all(submissions)
        session.flush()
        jobs = [
            Job(
                team_id=s.team_id,
                submission_id=s.id,
                protocol_id=protocol_id,
                state="succeeded",
                config={"i": s.id},
                config_hash=uuid.uuid4().hex * 2,
                request_hash=uuid.uuid4().hex * 2,
                created_at=s.created_at,
                started_at=s.created_at,
                finished_at=s.created_at + dt.timedelta(minutes=1),
            )
            for s in submissions
        ]
        session.add_all(jobs)
        session.flush()
        results = []
        for index, job in enumerate(jobs):
            for scenario in ("ignorant", "semi-informed"):
                base = rng.uniform(5, 48)
                values: dict[str, float] = {}
                for seed_value in (0, 1):
                    eer = base + rng.uniform(-1, 1)
                    row = {
                        "eer_percent": eer,
                        "eer_ci95_percent_low": eer - 2.0,
                        "eer_ci95_percent_high": eer + 2.0,
                        "min_cllr_bits": rng.uniform(0.2, 1.0),
                        "linkability": rng.uniform(0.0, 0.8),
                        "srd_empirical_mean_disclosure_bits": rng.uniform(0, 0.5),
                        "srd_empirical_identification_rate_percent": rng.uniform(5, 60),
                        "zebra_expected_disclosure_bits": rng.uniform(0, 0.3),
                        "n_target": 120.0,
                        "n_nontarget": 1800.0,
                    }
                    for metric in SEED_METRICS:
                        if index % 20 == 7 and metric.startswith("srd"):
                            continue
                        results.append(
                            Result(
                                job_id=job.id,
                                protocol_id=protocol_id,
                                submission_id=job.submission_id,
                                scenario=scenario,
                                backend="cosine",
                                seed=seed_value,
                                metric=metric,
                                value=row[metric],
                            )
                        )
                    values = row
                for metric in AGGREGATE_METRICS:
                    source = {
                        "srd_mean_disclosure_bits": "srd_empirical_mean_disclosure_bits",
                        "srd_identification_rate_percent": (
                            "srd_empirical_identification_rate_percent"
                        ),
                    }.get(metric, metric)
                    missing = index % 20 == 7 and metric.startswith("srd")
                    results.append(
                        Result(
                            job_id=job.id,
                            protocol_id=protocol_id,
                            submission_id=job.submission_id,
                            scenario=scenario,
                            backend="cosine",
                            seed=AGGREGATE_SEED,
                            metric=metric,
                            value=None if missing else values[source],
                        )
                    )
        session.add_all(results)
        session.flush()
        # What jobs.records.transition_job does when each job succeeds.
        refresh_job_summaries(session, [job.id for job in jobs])
    return protocol_id


def naive_page_rows(database: Database, protocol_id: int) -> int:
    """The reference: the visible rows, then one results query per submission (N + 1)."""

    with database.session_scope() as session:
        rows = leaderboard_table(session, protocol_id, backend="cosine", metrics=[])
        cells = 0
        for row in rows:
            for result in list_results(session, row.job_id):
                if result.backend == "cosine":
                    cells += 1
        return cells


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _time(fn: Any, repeats: int) -> list[float]:
    fn()  # warm-up: imports, template compilation, connection pool
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def _postgres_url() -> tuple[str, Any]:
    import psycopg

    name = f"unmask_bench_{uuid.uuid4().hex[:8]}"
    admin = psycopg.connect("host=127.0.0.1 port=5432 user=postgres dbname=postgres")
    admin.autocommit = True
    admin.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

    return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}", drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="Submissions seeded.")
    parser.add_argument("--repeats", type=int, default=40, help="Timed requests per variant.")
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--quick", action="store_true", help="200 submissions, 10 repeats.")
    args = parser.parse_args()
    if args.quick:
        args.n, args.repeats = 200, 10

    from fastapi.testclient import TestClient

    from api.app import create_app
    from services.settings import Settings

    folder = Path(tempfile.mkdtemp(prefix="unmask-bench-"))
    cleanup = None
    if args.db == "postgresql":
        url, cleanup = _postgres_url()
    else:
        url = f"sqlite:///{folder / 'bench.db'}"
    try:
        upgrade_database(url)
        database = Database(url)
        started = time.perf_counter()
        protocol_id = seed_leaderboard(database, args.n)
        seed_s = time.perf_counter() - started
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=url,
            blob_dir=folder / "blobs",
            token_hmac_key="bench",
            trusted_hosts=["testserver"],
        )
        app = create_app(settings, database=database)
        with TestClient(app) as client:
            page = client.get(f"/protocols/{protocol_id}")
            assert page.status_code == 200, page.text[:500]
            shown = page.text.count("<tr data-submission=")
            page_ms = _time(lambda: client.get(f"/protocols/{protocol_id}"), args.repeats)
            sorted_ms = _time(
                lambda: client.get(
                    f"/protocols/{protocol_id}?sort=srd_mean_disclosure_bits&order=asc"
                ),
                args.repeats,
            )
        naive_ms = _time(lambda: naive_page_rows(database, protocol_id), max(3, args.repeats // 4))
        with database.session_scope() as session:
            session.execute(delete(JobSummaryRecord))
        with TestClient(app) as client:
            unsummarized_ms = _time(lambda: client.get(f"/protocols/{protocol_id}"), args.repeats)
        database.dispose()
    finally:
        if cleanup is not None:
            cleanup()
    print(
        f"{args.db}: {args.n} submissions seeded in {seed_s:.1f} s; {shown} rows shown "
        f"(private ones hidden); {args.repeats} requests per variant"
    )
    print()
    print("| variant | median ms | p95 ms |")
    print("|---|---|---|")
    for name, samples in (
        ("page, default ranking (2 queries + render)", page_ms),
        ("page, sorted by SRD MeanD", sorted_ms),
        ("page without job_summaries (aggregating result rows per view)", unsummarized_ms),
        ("naive: rows + 1 results query per submission (no render)", naive_ms),
    ):
        print(f"| {name} | {statistics.median(samples):.1f} | {_percentile(samples, 0.95):.1f} |")
    print()
    page = statistics.median(page_ms)
    print(
        f"medians: without summaries / page = {statistics.median(unsummarized_ms) / page:.1f}x; "
        f"naive (data only) / page (data + render) = {statistics.median(naive_ms) / page:.1f}x"
    )


if __name__ == "__main__":
    main()
