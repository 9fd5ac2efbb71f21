"""Leaderboard ordering: metric direction, tie-break by submission time, missing values last."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy.orm import Session

from services.platform import identity, leaderboard, protocols, results, submissions
from services.storage.db import Database
from support.seeding import record_finished_job

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


def _submit(session: Session, team_id: int, name: str, minute: int) -> int:
    sub = submissions.create_submission(
        session, team_id, name, "builtin", builtin_name="pitch", visibility="public"
    )
    sub.created_at = T0 + dt.timedelta(minutes=minute)
    return sub.id


def _evaluate(
    session: Session, team_id: int, submission_id: int, protocol_id: int, eer: float | None
) -> None:
    rows = [results.ResultRow("lazy", "cosine", 0, "cllr", 0.5)]
    if eer is not None:
        rows.append(results.ResultRow("lazy", "cosine", 0, "eer", eer))
    record_finished_job(
        session,
        team_id=team_id,
        submission_id=submission_id,
        protocol_id=protocol_id,
        rows=rows,
    )


@pytest.mark.parametrize("higher_is_better", [True, False])
def test_order_direction_ties_and_missing(database: Database, higher_is_better: bool) -> None:
    with database.session_scope() as session:
        team = identity.create_team(session, "t")
        protocol = protocols.create_protocol(session, "vpc", body={"v": 1})
        # Created first (lowest id) but submitted last: the tie-break must use time, not id.
        late_tie = _submit(session, team.id, "late-tie", minute=30)
        missing = _submit(session, team.id, "missing", minute=0)
        early_tie = _submit(session, team.id, "early-tie", minute=10)
        best = _submit(session, team.id, "high", minute=20)
        low = _submit(session, team.id, "low", minute=25)
        values = {late_tie: 0.3, missing: None, early_tie: 0.3, best: 0.45, low: 0.05}
        for submission_id, eer in values.items():
            _evaluate(session, team.id, submission_id, protocol.id, eer)
        pid = protocol.id
    with database.session_scope() as session:
        view = leaderboard.build_view(
            session,
            protocols.get_protocol_by_id(session, pid),
            None,
            metric="eer",
            scenario="lazy",
            higher_is_better=higher_is_better,
        )
        board = view.ranked
        metrics = {r.job_id: r.metrics_of("lazy", "cosine") for r in board}
    order = [row.submission_id for row in board]
    extremes = (
        [best, early_tie, late_tie, low] if higher_is_better else [low, early_tie, late_tie, best]
    )
    assert order == [*extremes, missing]
    assert [view.ranks[row.submission_id] for row in board] == [1, 2, 3, 4, 5]
    assert board[-1].values[view.ranking_key] is None
    assert metrics[board[-1].job_id] == {"cllr": 0.5}
    assert metrics[board[0].job_id]["eer"] == board[0].values[view.ranking_key]
    assert all(row.submitted_at.tzinfo is not None for row in board)


def test_empty_protocol_has_empty_board(database: Database) -> None:
    with database.session_scope() as session:
        protocol = protocols.create_protocol(session, "empty", body={})
        view = leaderboard.build_view(session, protocol, None, metric="eer", scenario="x")
        assert view.ranked == [] and view.display == []


def test_protocol_versions(database: Database) -> None:
    with database.session_scope() as session:
        v1 = protocols.create_protocol(session, "vpc", body={"a": 1, "b": 2})
        same = protocols.create_protocol(session, "vpc", body={"b": 2, "a": 1})
        v2 = protocols.create_protocol(session, "vpc", body={"a": 1, "b": 3})
        assert (v1.version, same.id, v2.version) == (1, v1.id, 2)
        assert protocols.get_protocol(session, "vpc").id == v2.id
        assert protocols.get_protocol(session, "vpc", 1).id == v1.id
