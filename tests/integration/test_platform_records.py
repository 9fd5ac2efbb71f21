"""The platform's records (services/platform) on migrated databases: SQLite and the real PostgreSQL
(leaderboard, cascades)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from services.platform import identity, leaderboard, protocols, results, submissions
from services.platform.identity.principal import Principal
from services.platform.jobs import records as job_records
from services.storage.db import Database
from services.storage.errors import IdempotencyConflictError
from services.storage.models import AGGREGATE_SEED, Artifact, Job, Result, Stage, Team

pytestmark = pytest.mark.integration

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def _submission(
    session: Session, team_id: int, name: str, minute: int, visibility: str = "public"
) -> int:
    sub = submissions.create_submission(
        session, team_id, name, "builtin", builtin_name="pitch", visibility=visibility
    )
    sub.created_at = T0 + dt.timedelta(minutes=minute)
    return sub.id


def _job(
    session: Session,
    team_id: int,
    submission_id: int,
    protocol_id: int,
    rows: list[results.ResultRow],
    *,
    finished_minute: int = 100,
    final_state: str = "succeeded",
) -> int:
    job = job_records.create_job(
        session,
        team_id=team_id,
        submission_id=submission_id,
        protocol_id=protocol_id,
        config={"n": len(rows), "minute": finished_minute},
    ).job
    job_records.transition_job(session, job.id, "running")
    results.record_results_and_artifacts(session, job.id, results=rows)
    job_records.transition_job(
        session, job.id, final_state, now=T0 + dt.timedelta(minutes=finished_minute)
    )
    return job.id


def eer(value: float | None, seed: int = 0, scenario: str = "lazy") -> results.ResultRow:
    return results.ResultRow(scenario, "cosine", seed, "eer", value)


def test_leaderboard(any_database: Database) -> None:
    with any_database.session_scope() as session:
        a = identity.create_team(session, "team-a").id
        b = identity.create_team(session, "team-b").id
        p = protocols.create_protocol(session, "vpc", body={"v": 1}).id
        q = protocols.create_protocol(session, "other", body={"v": 1}).id
        s = {
            "tie_late": _submission(session, a, "tie-late", 9),
            "top": _submission(session, a, "top", 1),
            "tie_early": _submission(session, a, "tie-early", 2),
            "no_value": _submission(session, a, "no-value", 3),
            "failed_only": _submission(session, a, "failed", 4),
            "private": _submission(session, b, "private", 5, visibility="private"),
            "rerun": _submission(session, a, "rerun", 6),
            "seeds": _submission(session, a, "seeds", 7),
            "aggregate": _submission(session, a, "aggregate", 8),
        }
        _job(session, a, s["tie_late"], p, [eer(0.375)])
        _job(session, a, s["top"], p, [eer(0.25, 0), eer(0.5, 1)])  # seed mean 0.375 (exact)
        _job(session, a, s["tie_early"], p, [eer(0.375), eer(0.99, scenario="ignorant")])
        _job(session, a, s["no_value"], p, [results.ResultRow("lazy", "cosine", 0, "cllr", 0.7)])
        _job(session, a, s["failed_only"], p, [eer(0.9)], final_state="failed")
        _job(session, b, s["private"], p, [eer(0.8)])
        _job(session, a, s["rerun"], p, [eer(0.95)], finished_minute=100)
        _job(session, a, s["rerun"], p, [eer(0.1)], finished_minute=200)  # latest wins
        _job(session, a, s["seeds"], p, [eer(0.4, 0), eer(0.45, 1)])
        _job(session, a, s["aggregate"], p, [eer(0.0, 0), eer(0.0, 1), eer(0.5, AGGREGATE_SEED)])
        _job(session, a, s["tie_early"], q, [eer(0.99)])  # another protocol: invisible here
    with any_database.session_scope() as session:
        protocol = protocols.get_protocol_by_id(session, p)
        viewer_b = Principal(0, "x", 0, b, "team-b", ("read",))

        def ranked(viewer: Principal | None, higher: bool = True) -> list[tuple[int, float | None]]:
            view = leaderboard.build_view(
                session, protocol, viewer, metric="eer", scenario="lazy", higher_is_better=higher
            )
            return [(r.submission_id, r.values[view.ranking_key]) for r in view.ranked]

        public, with_private, ascending = ranked(None), ranked(viewer_b), ranked(None, False)
        no_value_job = job_records.list_jobs(session, submission_id=s["no_value"]).items[0].id
        board = leaderboard.build_view(session, protocol, None, metric="eer", scenario="lazy")
        no_value_row = next(r for r in board.ranked if r.job_id == no_value_job)
        no_value_metrics = {no_value_job: no_value_row.metrics_of("lazy", "cosine")}
    names = {v: k for k, v in s.items()}
    got = [(names[i], None if v is None else round(v, 6)) for i, v in public]
    # top (seed mean), tie_early and tie_late tie at 0.375: the earliest submission wins.
    assert got == [
        ("aggregate", 0.5),
        ("seeds", 0.425),
        ("top", 0.375),
        ("tie_early", 0.375),
        ("tie_late", 0.375),
        ("rerun", 0.1),
        ("no_value", None),
    ]
    assert [names[i] for i, _ in with_private][:1] == ["private"]
    assert [names[i] for i, _ in ascending] == [
        "rerun",
        "top",
        "tie_early",
        "tie_late",
        "seeds",
        "aggregate",
        "no_value",
    ]
    assert no_value_metrics[no_value_job] == {"cllr": 0.7}


def test_idempotency_on_real_database(any_database: Database) -> None:
    with any_database.session_scope() as session:
        team = identity.create_team(session, "t").id
        sub = _submission(session, team, "s", 0)
        first = job_records.create_job(
            session, team_id=team, submission_id=sub, config={"x": 1}, idempotency_key="k"
        )
    with any_database.session_scope() as session:
        again = job_records.create_job(
            session, team_id=team, submission_id=sub, config={"x": 1}, idempotency_key="k"
        )
        assert again.job.id == first.job.id and not again.created
        with pytest.raises(IdempotencyConflictError):
            job_records.create_job(
                session, team_id=team, submission_id=sub, config={"x": 2}, idempotency_key="k"
            )
    with any_database.session_scope() as session:
        # The constraint itself holds even if the repository is bypassed.
        job = session.get(Job, first.job.id)
        assert job is not None
        session.add(
            Job(
                team_id=team,
                submission_id=sub,
                config={},
                config_hash="0" * 64,
                request_hash="0" * 64,
                idempotency_key="k",
            )
        )
        with pytest.raises(IntegrityError):
            session.flush()
        session.rollback()


def test_deleting_a_team_cascades(any_database: Database) -> None:
    with any_database.session_scope() as session:
        team = identity.create_team(session, "gone").id
        sub = _submission(session, team, "s", 0)
        protocol = protocols.create_protocol(session, "vpc", body={}).id
        job = job_records.create_job(
            session,
            team_id=team,
            submission_id=sub,
            protocol_id=protocol,
            config={},
            stage_names=["score"],
        ).job
        stage_id = job.stages[0].id
        results.record_results_and_artifacts(
            session,
            job.id,
            stage_id=stage_id,
            results=[eer(0.2)],
            artifacts=[results.ArtifactRecord("jobs/1/scores.npz", 3, "c" * 64)],
        )
    with any_database.session_scope() as session:
        session.delete(session.get(Team, team))
    with any_database.session_scope() as session:
        for model in (Job, Stage, Result, Artifact):
            assert session.scalar(select(func.count()).select_from(model)) == 0
        # The protocol survives (RESTRICT protects it only while results reference it).
        assert protocols.get_protocol(session, "vpc").id == protocol


def test_timestamps_are_timezone_aware_utc(any_database: Database) -> None:
    with any_database.session_scope() as session:
        team_id = identity.create_team(session, "tz").id
    with any_database.session_scope() as session:
        created = session.get(Team, team_id)
        assert created is not None
        assert created.created_at.utcoffset() == dt.timedelta(0)
        with pytest.raises(Exception, match="naive"):
            created.created_at = dt.datetime(2030, 1, 1)  # naive on purpose
            session.flush()
        session.rollback()
