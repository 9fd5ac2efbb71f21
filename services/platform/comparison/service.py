"""Two submissions of one protocol side by side: every catalogued metric of their leaderboard
jobs (per scenario and back-end, aggregated like the leaderboard), the difference b - a and
which side is better for the maker, their DET curves and their utility.

Each side is the submission's leaderboard job under the protocol (its latest succeeded job
whose results the viewer may see). A submission without one there, e.g. an archive made for
another protocol or one evaluated under another protocol only, is refused
(:class:`ComparisonError`, 4xx naming it).

Paired intervals of a difference need the per-trial scores of both jobs on shared trials; jobs
store summaries and DET points, not scores, so ``paired_interval`` is None for every row today
(``paired_interval_note`` says so) rather than an interval computed on unpaired data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, select
from sqlalchemy.orm import Session

from services.metrics import catalogue
from services.platform.leaderboard import (
    det_curves_of,
    det_key,
    job_metric_values,
    latest_succeeded_jobs,
)
from services.storage.errors import ConflictError
from services.storage.models import Job, Protocol, Submission

PAIRED_INTERVAL_NOTE = (
    "No paired interval: the jobs keep summaries and DET points, not per-trial scores"
)


class ComparisonError(ConflictError):
    """The two submissions cannot be compared under this protocol (409 naming why)."""


@dataclass(frozen=True)
class Side:
    """One compared submission and the job that stands for it."""

    submission_id: int
    submission_name: str
    team_slug: str
    job_id: int


@dataclass(frozen=True)
class MetricComparison:
    """One metric in one (scenario, back-end): both values, ``difference`` = b - a, and
    ``better`` ("a", "b", "equal" or None when a value is missing), from the maker's side."""

    metric: str
    label: str
    unit: str
    scenario: str
    backend: str
    a: float | None
    b: float | None
    difference: float | None
    better: str | None
    higher_is_better: bool
    digits: int
    paired_interval: tuple[float, float] | None = None


@dataclass
class Comparison:
    """Everything the compare page and its JSON twin show."""

    protocol_id: int
    a: Side
    b: Side
    metrics: list[MetricComparison] = field(default_factory=list)
    det_curves: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``{"<scenario>|<backend>": {"a": curve, "b": curve}}`` (curve: pfa, pmiss, eer, seed)."""
    paired_interval_note: str = PAIRED_INTERVAL_NOTE

    @property
    def privacy(self) -> list[MetricComparison]:
        """The attacker metrics (every scenario but utility)."""
        return [m for m in self.metrics if m.scenario != catalogue.UTILITY_SCENARIO]

    @property
    def utility(self) -> list[MetricComparison]:
        """The utility metrics (ASR WER, usable speech, ...)."""
        return [m for m in self.metrics if m.scenario == catalogue.UTILITY_SCENARIO]


def _side(
    session: Session,
    protocol: Protocol,
    submission: Submission,
    *,
    viewer_team_id: int | None,
    include_all: bool,
) -> Side:
    if submission.protocol_id is not None and submission.protocol_id != protocol.id:
        raise ComparisonError(
            f"submission {submission.id} belongs to protocol {submission.protocol_id}, not "
            f"{protocol.id}; compare submissions of one protocol"
        )
    latest = latest_succeeded_jobs(
        protocol.id, viewer_team_id=viewer_team_id, include_all=include_all
    )
    job_id = session.scalar(
        select(latest.c.job_id).where(
            and_(latest.c.submission_id == submission.id, latest.c.recency == 1)
        )
    )
    if job_id is None:
        other = session.scalar(
            select(Job.protocol_id).where(
                Job.submission_id == submission.id, Job.protocol_id != protocol.id
            )
        )
        where = f"; it was evaluated under protocol {other}" if other is not None else ""
        raise ComparisonError(
            f"submission {submission.id} has no succeeded job under protocol {protocol.id}"
            f"{where}; compare submissions of one protocol"
        )
    return Side(submission.id, submission.name, submission.team.slug, int(job_id))


def _better(metric: catalogue.Metric, a: float | None, b: float | None) -> str | None:
    if a is None or b is None:
        return None
    if round(a, metric.digits) == round(b, metric.digits):
        return "equal"
    return "b" if (b > a) == metric.higher_is_better else "a"


def compare_submissions(
    session: Session,
    *,
    protocol: Protocol,
    a: Submission,
    b: Submission,
    viewer_team_id: int | None = None,
    include_all: bool = False,
) -> Comparison:
    """Submissions ``a`` and ``b`` (both visible to the caller) under ``protocol``."""
    if a.id == b.id:
        raise ComparisonError(f"a and b are the same submission ({a.id}); pick two")
    sides = [
        _side(session, protocol, s, viewer_team_id=viewer_team_id, include_all=include_all)
        for s in (a, b)
    ]
    side_a, side_b = sides
    values = job_metric_values(session, [side_a.job_id, side_b.job_id])
    va, vb = values[side_a.job_id], values[side_b.job_id]
    triples = sorted({tuple(k.split("|")) for k in (*va, *vb) if k.count("|") == 2})
    comparison = Comparison(protocol_id=protocol.id, a=side_a, b=side_b)
    order = {m.key: i for i, m in enumerate(catalogue.all_metrics())}
    for scenario, backend, key in sorted(triples, key=lambda t: (t[0], t[1], order.get(t[2], 0))):
        if not catalogue.is_catalogued(key):
            continue  # *_std, n_seeds, interval bounds: shown through their metric
        metric = catalogue.metric(key)
        stored = f"{scenario}|{backend}|{key}"
        x, y = va.get(stored), vb.get(stored)
        comparison.metrics.append(
            MetricComparison(
                metric=key,
                label=metric.label,
                unit=metric.unit,
                scenario=scenario,
                backend=backend,
                a=x,
                b=y,
                difference=None if x is None or y is None else y - x,
                better=_better(metric, x, y),
                higher_is_better=metric.higher_is_better,
                digits=metric.digits,
            )
        )
    keys = {f"{m.scenario}|{m.backend}" for m in comparison.privacy}
    for key in sorted(keys):
        scenario, backend = key.split("|")
        curves = det_curves_of(session, [side_a.job_id, side_b.job_id], det_key(scenario, backend))
        if curves:
            comparison.det_curves[key] = {
                name: curves[side.job_id]
                for name, side in (("a", side_a), ("b", side_b))
                if side.job_id in curves
            }
    return comparison
