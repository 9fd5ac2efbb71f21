"""The wide leaderboard of a protocol: one row per visible submission, many metric columns.

``repository.leaderboard`` ranks by one metric; the leaderboard *page* shows several (EER of two
scenarios with its interval, SRD, min Cllr, linkability, ...). This reads them all in two
queries straight from the stored long-format results (no recomputation):

1. the visible submissions with their latest succeeded job under the protocol (a window function
   over ``jobs``), with team and submission fields;
2. the requested (scenario, metric) values of those jobs for one back-end, aggregated like the
   leaderboard (the seed ``AGGREGATE_SEED`` row when present, else the mean over seeds), read from
   the ``ix_results_leaderboard`` index range of the protocol.

Sorting (:func:`sort_rows`) puts missing values last whatever the direction.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from services.storage.models import (
    AGGREGATE_SEED,
    Job,
    Result,
    RunState,
    Submission,
    SubmissionKind,
    Team,
    Visibility,
)

MetricKey = tuple[str, str]  # (scenario, metric)


@dataclass
class LeaderboardTableRow:
    """One submission on the page. ``values[(scenario, metric)]`` None = missing."""

    submission_id: int
    submission_name: str
    kind: str
    visibility: str
    team_slug: str
    job_id: int
    submitted_at: dt.datetime
    evaluated_at: dt.datetime | None
    values: dict[MetricKey, float | None] = field(default_factory=dict)

    @property
    def is_baseline(self) -> bool:
        """Built-in anonymizers are the platform's baselines."""
        return self.kind == SubmissionKind.BUILTIN.value


def leaderboard_table(
    session: Session,
    protocol_id: int,
    *,
    backend: str,
    metrics: Sequence[MetricKey],
    viewer_team_id: int | None = None,
    include_all_private: bool = False,
) -> list[LeaderboardTableRow]:
    """Rows of every public submission (plus the viewer team's private ones) with a succeeded job
    under ``protocol_id``, in submission order; ``metrics`` are read for ``backend``.

    ``include_all_private`` (administrators) lists every team's private submissions too.
    """
    latest = (
        select(
            Job.id.label("job_id"),
            Job.submission_id.label("submission_id"),
            Job.finished_at.label("finished_at"),
            func.row_number()
            .over(
                partition_by=Job.submission_id,
                order_by=(Job.finished_at.desc(), Job.id.desc()),
            )
            .label("recency"),
        )
        .where(Job.protocol_id == protocol_id, Job.state == RunState.SUCCEEDED.value)
        .subquery("latest")
    )
    query = (
        select(
            Submission.id,
            Submission.name,
            Submission.kind,
            Submission.visibility,
            Submission.created_at,
            Team.slug,
            latest.c.job_id,
            latest.c.finished_at,
        )
        .join(latest, and_(latest.c.submission_id == Submission.id, latest.c.recency == 1))
        .join(Team, Team.id == Submission.team_id)
        .order_by(Submission.created_at, Submission.id)
    )
    if not include_all_private:
        visible = Submission.visibility == Visibility.PUBLIC.value
        if viewer_team_id is not None:
            visible = visible | (Submission.team_id == viewer_team_id)
        query = query.where(visible)
    rows = {
        r.job_id: LeaderboardTableRow(
            submission_id=r.id,
            submission_name=r.name,
            kind=r.kind,
            visibility=r.visibility,
            team_slug=r.slug,
            job_id=r.job_id,
            submitted_at=r.created_at,
            evaluated_at=r.finished_at,
        )
        for r in session.execute(query)
    }
    if not rows or not metrics:
        return list(rows.values())
    scenarios = sorted({scenario for scenario, _ in metrics})
    names = sorted({metric for _, metric in metrics})
    wanted = set(metrics)
    aggregated = func.coalesce(
        func.avg(case((Result.seed == AGGREGATE_SEED, Result.value))),
        func.avg(case((Result.seed != AGGREGATE_SEED, Result.value))),
    )
    values = (
        select(Result.job_id, Result.scenario, Result.metric, aggregated)
        .join(latest, and_(latest.c.job_id == Result.job_id, latest.c.recency == 1))
        .where(
            Result.protocol_id == protocol_id,
            Result.metric.in_(names),
            Result.scenario.in_(scenarios),
            Result.backend == backend,
        )
        .group_by(Result.job_id, Result.scenario, Result.metric)
    )
    for job_id, scenario, metric, value in session.execute(values):
        row = rows.get(job_id)
        if row is not None and (scenario, metric) in wanted:
            row.values[(scenario, metric)] = None if value is None else float(value)
    return list(rows.values())


def sort_rows(
    rows: Sequence[LeaderboardTableRow],
    *,
    key: MetricKey | None = None,
    attribute: str | None = None,
    descending: bool = False,
) -> list[LeaderboardTableRow]:
    """Rows sorted by a metric (``key``) or a row attribute; missing values last either way.

    Ties keep submission order (earlier first), so equal values rank the earlier submission first.
    """

    def value_of(row: LeaderboardTableRow) -> object:
        if key is not None:
            return row.values.get(key)
        value = getattr(row, attribute or "submitted_at")
        return value.lower() if isinstance(value, str) else value

    def is_missing(value: object) -> bool:
        return value is None or (isinstance(value, float) and math.isnan(value))

    base = sorted(rows, key=lambda r: (r.submitted_at, r.submission_id))
    present = [r for r in base if not is_missing(value_of(r))]
    missing = [r for r in base if is_missing(value_of(r))]
    # sorted() is stable, so reverse=True still keeps ties in submission order.
    present.sort(key=lambda r: value_of(r), reverse=descending)  # type: ignore[arg-type,return-value]
    return present + missing
