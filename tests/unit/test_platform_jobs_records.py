"""Job creation with idempotency keys, stage transitions, atomic results, pagination."""

from __future__ import annotations

import math
from typing import Any

import pytest
from sqlalchemy import func, select

from services.platform import identity, results, submissions
from services.platform.jobs import records as job_records
from services.storage.db import Database
from services.storage.errors import (
    ConflictError,
    IdempotencyConflictError,
    ImmutableSubmissionError,
)
from services.storage.models import Artifact, Result, Submission

CONFIG: dict[str, Any] = {"scenarios": ["ignorant", "lazy"], "seeds": [0, 1], "epochs": 3}


@pytest.fixture()
def ids(database: Database) -> dict[str, int]:
    with database.session_scope() as session:
        team = identity.create_team(session, "team-a")
        other = identity.create_team(session, "team-b")
        sub = submissions.create_submission(
            session, team.id, "pitch", "builtin", builtin_name="pitch"
        )
        return {"team": team.id, "other": other.id, "submission": sub.id}


def test_same_key_same_body_returns_same_job(database: Database, ids: dict[str, int]) -> None:
    with database.session_scope() as session:
        first = job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=CONFIG,
            idempotency_key="k1",
            stage_names=["anonymize", "train"],
        )
    # Key order in the config must not matter: the body is compared as canonical JSON.
    reordered = dict(reversed(list(CONFIG.items())))
    with database.session_scope() as session:
        again = job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=reordered,
            idempotency_key="k1",
        )
        assert [s.name for s in again.job.stages] == ["anonymize", "train"]
    assert first.created and not again.created
    assert again.job.id == first.job.id


def test_same_key_different_body_is_a_conflict(database: Database, ids: dict[str, int]) -> None:
    with database.session_scope() as session:
        job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=CONFIG,
            idempotency_key="k1",
        )
    with database.session_scope() as session, pytest.raises(IdempotencyConflictError, match="k1"):
        job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config={**CONFIG, "epochs": 4},
            idempotency_key="k1",
        )


def test_keys_are_scoped_per_team_and_optional(database: Database, ids: dict[str, int]) -> None:
    with database.session_scope() as session:
        a = job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=CONFIG,
            idempotency_key="k1",
        )
        b = job_records.create_job(
            session,
            team_id=ids["other"],
            submission_id=ids["submission"],
            config=CONFIG,
            idempotency_key="k1",
        )
        c = job_records.create_job(
            session, team_id=ids["team"], submission_id=ids["submission"], config=CONFIG
        )
        d = job_records.create_job(
            session, team_id=ids["team"], submission_id=ids["submission"], config=CONFIG
        )
    assert len({a.job.id, b.job.id, c.job.id, d.job.id}) == 4
    assert a.job.config_hash == c.job.config_hash


def test_race_on_the_unique_key_falls_back_to_the_winner(
    database: Database, ids: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    with database.session_scope() as session:
        winner = job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=CONFIG,
            idempotency_key="race",
        )
    # Pretend the lookup ran before the winner committed: the insert then hits the constraint.
    real_lookup = job_records.find_job_by_idempotency_key
    calls = {"n": 0}

    def late_lookup(*args: Any) -> Any:
        calls["n"] += 1
        return None if calls["n"] == 1 else real_lookup(*args)

    monkeypatch.setattr(job_records, "find_job_by_idempotency_key", late_lookup)
    with database.session_scope() as session:
        loser = job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=CONFIG,
            idempotency_key="race",
        )
        assert not loser.created and loser.job.id == winner.job.id
        with pytest.raises(IdempotencyConflictError):
            calls["n"] = 0
            job_records.create_job(
                session,
                team_id=ids["team"],
                submission_id=ids["submission"],
                config={"other": True},
                idempotency_key="race",
            )


def test_stage_and_job_transitions(database: Database, ids: dict[str, int]) -> None:
    with database.session_scope() as session:
        job = job_records.create_job(
            session,
            team_id=ids["team"],
            submission_id=ids["submission"],
            config=CONFIG,
            stage_names=["train"],
        ).job
        stage = job.stages[0]
        job_records.transition_job(session, job.id, "running")
        job_records.transition_stage(session, stage.id, "running", worker_host="gpu-1")
        job_records.heartbeat_stage(session, stage.id, progress=0.5, log="x" * 10_000)
        assert len(stage.log_tail) == job_records.LOG_TAIL_MAX_CHARS
        with pytest.raises(ConflictError, match=r"not in \[0, 1\]"):
            job_records.heartbeat_stage(session, stage.id, progress=1.5)
        job_records.transition_stage(session, stage.id, "failed", error="CUDA OOM")
        job_records.transition_stage(session, stage.id, "queued")  # retry
        job_records.transition_stage(session, stage.id, "running", worker_host="gpu-2")
        job_records.transition_stage(
            session, stage.id, "succeeded", artifact_keys={"ckpt": "a/b.pt"}
        )
        assert (stage.attempts, stage.worker_host, stage.progress) == (2, "gpu-2", 1.0)
        assert stage.error is None and stage.artifact_keys == {"ckpt": "a/b.pt"}
        assert stage.finished_at is not None and stage.finished_at.tzinfo is not None
        with pytest.raises(ConflictError, match="succeeded -> running"):
            job_records.transition_stage(session, stage.id, "running")
        job_records.transition_job(session, job.id, "succeeded")
        assert job.finished_at is not None and job.started_at is not None
        with pytest.raises(ConflictError, match="illegal"):
            job_records.transition_job(session, job.id, "cancelled")


def test_results_and_artifacts_are_all_or_nothing(database: Database, ids: dict[str, int]) -> None:
    rows = [
        results.ResultRow("ignorant", "cosine", 0, "eer", 0.3),
        results.ResultRow("ignorant", "cosine", 1, "eer", math.nan),
    ]
    good = results.ArtifactRecord("jobs/1/scores.npz", 10, "a" * 64)
    with database.session_scope() as session:
        job = job_records.create_job(
            session, team_id=ids["team"], submission_id=ids["submission"], config=CONFIG
        ).job
        # Same artifact key twice violates (job_id, key) uniqueness after the results were added.
        with pytest.raises(Exception, match=r"(?i)unique"):
            results.record_results_and_artifacts(
                session, job.id, results=rows, artifacts=[good, good]
            )
        assert session.scalar(select(func.count()).select_from(Result)) == 0
        assert session.scalar(select(func.count()).select_from(Artifact)) == 0
        with pytest.raises(ConflictError, match="sha256"):
            results.record_results_and_artifacts(
                session, job.id, results=rows, artifacts=[results.ArtifactRecord("k", 1, "bad")]
            )
        results.record_results_and_artifacts(session, job.id, results=rows, artifacts=[good])
        # A retried stage may record again: values are overwritten, not duplicated.
        results.record_results_and_artifacts(
            session, job.id, results=[results.ResultRow("ignorant", "cosine", 0, "eer", 0.25)]
        )
    with database.session_scope() as session:
        values = dict(session.execute(select(Result.seed, Result.value)).all())
        assert values == {0: 0.25, 1: None}  # NaN is stored as missing
    # The savepoint is nested in the caller's transaction: rolling that back discards it too.
    with pytest.raises(RuntimeError), database.session_scope() as session:
        results.record_results_and_artifacts(
            session, job.id, results=[results.ResultRow("lazy", "cosine", 0, "eer", 0.1)]
        )
        raise RuntimeError("caller fails after recording")
    with database.session_scope() as session:
        assert session.scalar(select(func.count()).select_from(Result)) == 2


def test_accepted_submission_is_immutable(database: Database, ids: dict[str, int]) -> None:
    with database.session_scope() as session:
        sub = session.get(Submission, ids["submission"])
        assert sub is not None and sub.accepted_at is not None
        sub.name = "renaming is fine"
        session.flush()
        sub.builtin_name = "vtln"
        with pytest.raises(ImmutableSubmissionError, match="builtin_name"):
            session.flush()
        session.rollback()
    with database.session_scope() as session:
        pending = submissions.create_submission(
            session,
            ids["team"],
            "ctr",
            "container",
            container_image="ghcr.io/x/y:1",
            container_digest="sha256:" + "b" * 64,
            accept=False,
        )
        pending.container_image = "ghcr.io/x/y:2"  # still pending: allowed
        session.flush()
        submissions.accept_submission(session, pending.id)
        with pytest.raises(ConflictError, match="container_digest"):
            submissions.create_submission(
                session,
                ids["team"],
                "bad",
                "container",
                container_image="x",
                container_digest="latest",
            )


def test_list_jobs_keyset_pages(database: Database, ids: dict[str, int]) -> None:
    with database.session_scope() as session:
        created = [
            job_records.create_job(
                session, team_id=ids["team"], submission_id=ids["submission"], config={"i": i}
            ).job.id
            for i in range(7)
        ]
        job_records.create_job(
            session, team_id=ids["other"], submission_id=ids["submission"], config={}
        )
    seen: list[int] = []
    cursor = None
    with database.session_scope() as session:
        while True:
            page = job_records.list_jobs(session, team_id=ids["team"], limit=3, cursor=cursor)
            seen.extend(job.id for job in page.items)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    assert seen == sorted(created, reverse=True)
