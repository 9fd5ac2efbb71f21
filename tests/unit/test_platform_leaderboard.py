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
    rows = [results.ResultRow("lazy", "plda", 0, "cllr", 0.5)]
    if eer is not None:
        rows.append(results.ResultRow("lazy", "plda", 0, "eer", eer))
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
        board = leaderboard.leaderboard(
            session, pid, "eer", scenario="lazy", backend="plda", higher_is_better=higher_is_better
        )
    order = [entry.submission_id for entry in board]
    extremes = (
        [best, early_tie, late_tie, low] if higher_is_better else [low, early_tie, late_tie, best]
    )
    assert order == [*extremes, missing]
    assert [entry.rank for entry in board] == [1, 2, 3, 4, 5]
    assert board[-1].value is None and board[-1].metrics == {"cllr": 0.5}
    assert board[0].metrics["eer"] == board[0].value
    assert all(entry.submitted_at.tzinfo is not None for entry in board)


def test_empty_protocol_has_empty_board(database: Database) -> None:
    with database.session_scope() as session:
        protocol = protocols.create_protocol(session, "empty", body={})
        assert leaderboard.leaderboard(session, protocol.id, "eer", scenario="x", backend="y") == []


def test_protocol_versions(database: Database) -> None:
    with database.session_scope() as session:
        v1 = protocols.create_protocol(session, "vpc", body={"a": 1, "b": 2})
        same = protocols.create_protocol(session, "vpc", body={"b": 2, "a": 1})
        v2 = protocols.create_protocol(session, "vpc", body={"a": 1, "b": 3})
        assert (v1.version, same.id, v2.version) == (1, v1.id, 2)
        assert protocols.get_protocol(session, "vpc").id == v2.id
        assert protocols.get_protocol(session, "vpc", 1).id == v1.id
