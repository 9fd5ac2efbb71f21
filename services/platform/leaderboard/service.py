"""Leaderboards' data: which job stands for each submission, and its metric values.

A submission is represented by its **latest succeeded job** under the protocol (latest
``finished_at``, then highest id: :func:`latest_succeeded_jobs`), and a metric's value is
``catalogue.aggregate_over_seeds`` of its result rows (the aggregate row, seed ``AGGREGATE_SEED``,
when present, else the mean over seeds). Public submissions are listed, plus the viewer team's
private ones (administrators: all; ``services.platform.access.visible_submissions_clause``).

:func:`leaderboard_table` reads many metrics per row. Aggregating them from the long-format
results at every view reads tens of thousands of rows for 1,000 submissions, so the leaderboard
metrics of a job are summarized once, when it succeeds (:func:`react_to_job_transition`, a listener
of the job's state change, calls :func:`refresh_job_summary`), into ``job_summaries`` (one JSON
per job holding every metric the job recorded, so no view reads the results table). Jobs without
a summary (succeeded before the table existed) are aggregated from the results on the fly, the
same way. What is shown and in which order is decided once, by the leaderboard view
(:mod:`services.platform.leaderboard.view`) with the ranking of
:mod:`services.platform.leaderboard.ranking`.

A job of an attacker zoo has results per ``attacker``: every view reads, per (scenario, back-end,
metric), the value worst for the maker over its attackers (``catalogue.worst_for_maker``:
:func:`worst_over_attackers`), each attacker's value aggregated over seeds first. A job without
a zoo has one attacker, so its values are as before.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, select
from sqlalchemy.orm import Session

from services.anonymizers.kinds.registry import kind_of
from services.metrics import catalogue
from services.platform.access import visible_submissions_clause
from services.platform.phases import revealed_jobs_clause
from services.platform.rows import get_row
from services.results.keys import ResultKey
from services.storage.errors import NotFoundError
from services.storage.models import AGGREGATE_SEED, Job, JobSummaryRecord, Result, Submission, Team
from services.vocab import RunState

MetricKey = tuple[str, str]  # (scenario, metric)


N_SEEDS_KEY = catalogue.N_SEEDS_KEY
"""The result row (seed ``AGGREGATE_SEED``) holding the number of training seeds averaged."""


# Job ids per IN list when aggregating results (bounded statement size).
_JOB_ID_CHUNK = 500


# --- the shared rule: which job, which value ----------------------------------------------------


# THE rule for which job stands for a submission: its latest succeeded job, by finished_at, then
# the highest id (a re-run that finishes later replaces the job it re-ran).
REPRESENTATIVE_ORDER = (Job.finished_at.desc(), Job.id.desc())


def latest_succeeded_jobs(
    protocol_id: int, *, viewer_team_id: int | None = None, include_all: bool = False
) -> Any:
    """Subquery ``latest(job_id, submission_id, finished_at, recency)`` of the succeeded jobs
    under ``protocol_id`` whose results the viewer may see (a hidden phase's: its team's and,
    ``include_all``, administrators'); ``recency == 1`` is each submission's representative job
    (:func:`representative_job` for one submission: the same order)."""
    return (
        select(
            Job.id.label("job_id"),
            Job.submission_id.label("submission_id"),
            Job.finished_at.label("finished_at"),
            func.row_number()
            .over(partition_by=Job.submission_id, order_by=REPRESENTATIVE_ORDER)
            .label("recency"),
        )
        .where(Job.protocol_id == protocol_id, Job.state == RunState.SUCCEEDED.value)
        .where(revealed_jobs_clause(viewer_team_id=viewer_team_id, include_all=include_all))
        .subquery("latest")
    )


def representative_job(
    session: Session,
    submission_id: int,
    protocol_id: int | None,
    *,
    viewer_team_id: int | None = None,
    include_all: bool = False,
) -> Job | None:
    """The job that stands for a submission under a protocol (None: under any protocol): its
    latest succeeded job (by ``finished_at``, then id) whose results the viewer may see; None
    when it has none. The leaderboard (:func:`latest_succeeded_jobs`, the same order), the
    submission page, the badge and the comparison all show this job."""
    query = select(Job).where(
        Job.submission_id == submission_id,
        Job.state == RunState.SUCCEEDED.value,
        revealed_jobs_clause(viewer_team_id=viewer_team_id, include_all=include_all),
    )
    if protocol_id is not None:
        query = query.where(Job.protocol_id == protocol_id)
    return session.scalars(query.order_by(*REPRESENTATIVE_ORDER).limit(1)).first()


def ranked_submission_counts(
    session: Session, *, viewer_team_id: int | None, include_all_private: bool = False
) -> dict[int, int]:
    """``{protocol_id: submissions}``: how many visible submissions have a succeeded job under
    each protocol (those its leaderboard lists: the rows' visibility rule, hidden phases
    included, so a count never discloses a row the viewer cannot see)."""
    query = (
        select(Job.protocol_id, func.count(func.distinct(Job.submission_id)))
        .join(Submission, Submission.id == Job.submission_id)
        .where(
            Job.state == RunState.SUCCEEDED.value,
            visible_submissions_clause(
                viewer_team_id=viewer_team_id, include_all_private=include_all_private
            ),
            revealed_jobs_clause(viewer_team_id=viewer_team_id, include_all=include_all_private),
        )
        .group_by(Job.protocol_id)
    )
    return {int(pid): int(n) for pid, n in session.execute(query) if pid is not None}


def aggregate_parts() -> tuple[Any, Any]:
    """SQL aggregates of one metric's result rows (group by job, attacker, scenario, back-end,
    metric): (mean of the seed ``AGGREGATE_SEED`` rows, mean of the per-seed rows), which
    ``catalogue.aggregate_over_seeds`` turns into the metric's value over seeds."""
    return (
        func.avg(case((Result.seed == AGGREGATE_SEED, Result.value))),
        func.avg(case((Result.seed != AGGREGATE_SEED, Result.value))),
    )


def summary_key(scenario: str, backend: str, metric: str) -> str:
    """The key of one value in ``JobSummaryRecord.metric_values`` (:class:`ResultKey`)."""
    return ResultKey(scenario, backend, metric).format()


def det_key(scenario: str, backend: str) -> str:
    """The key of one DET curve in ``JobSummaryRecord.det_curves`` (:class:`ResultKey`)."""
    return ResultKey(scenario, backend).format()


def _aggregated_values(
    session: Session,
    job_ids: Sequence[int],
    metrics: Sequence[str] | None,
    *,
    scenario: str | None = None,
    backend: str | None = None,
) -> dict[int, dict[str, float | None]]:
    """``{job_id: {summary_key: value}}`` aggregated from the results of ``job_ids``.

    ``metrics`` None = every metric; ``scenario``/``backend`` narrow the rows read.
    """
    out: dict[int, dict[str, float | None]] = {job_id: {} for job_id in job_ids}
    if not job_ids or (metrics is not None and not metrics):
        return out
    conditions: list[ColumnElement[bool]] = []
    if metrics is not None:
        conditions.append(Result.metric.in_(list(metrics)))
    if scenario is not None:
        conditions.append(Result.scenario == scenario)
    if backend is not None:
        conditions.append(Result.backend == backend)
    per_attacker: dict[tuple[int, str, str], dict[str, dict[str, float | None]]] = {}
    for offset in range(0, len(job_ids), _JOB_ID_CHUNK):
        chunk = list(job_ids[offset : offset + _JOB_ID_CHUNK])
        query = (
            select(
                Result.job_id,
                Result.attacker,
                Result.scenario,
                Result.backend,
                Result.metric,
                *aggregate_parts(),
            )
            .where(Result.job_id.in_(chunk), *conditions)
            .group_by(
                Result.job_id, Result.attacker, Result.scenario, Result.backend, Result.metric
            )
        )
        for job_id, attacker, scen, back, metric, aggregate, seed_mean in session.execute(query):
            value = catalogue.aggregate_over_seeds(
                None if aggregate is None else float(aggregate),
                [None if seed_mean is None else float(seed_mean)],
            )
            per_attacker.setdefault((job_id, scen, back), {}).setdefault(attacker, {})[metric] = (
                value
            )
    for (job_id, row_scenario, row_backend), by_attacker in per_attacker.items():
        for metric, value in worst_over_attackers(by_attacker).items():
            out[job_id][summary_key(row_scenario, row_backend, metric)] = value
    return out


def job_values(
    session: Session, job_id: int, metrics: Sequence[str]
) -> dict[tuple[str, str], dict[str, float | None]]:
    """``{(scenario, backend): {metric: value}}`` of one job's ``metrics``, by the leaderboard's
    rule (aggregated over seeds, worst over a zoo's attackers); what a webhook payload shows."""
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    for key, value in _aggregated_values(session, [job_id], metrics)[job_id].items():
        parsed = ResultKey.parse(key)
        out.setdefault((parsed.scenario, parsed.backend), {})[str(parsed.metric)] = value
    return out


def worst_over_attackers(
    by_attacker: Mapping[str, Mapping[str, float | None]],
) -> dict[str, float | None]:
    """One (scenario, back-end)'s metric values over a zoo's attackers: each catalogued metric's
    value worst for the maker (``catalogue.worst_for_maker``), its ``_std`` that of the same
    attacker; other values (``n_seeds``, uncatalogued metrics) those of the attacker with the
    worst EER. One attacker: its values unchanged."""
    if len(by_attacker) == 1:
        return dict(next(iter(by_attacker.values())))
    eer = catalogue.EER.key
    names = sorted(by_attacker)
    headline = catalogue.worst_for_maker(eer, {n: by_attacker[n].get(eer) for n in names})
    out: dict[str, float | None] = dict(by_attacker[headline or names[0]])
    chosen: dict[str, str] = {}
    for key in {k for values in by_attacker.values() for k in values}:
        if not catalogue.is_catalogued(key):
            continue
        pick = catalogue.worst_for_maker(key, {n: by_attacker[n].get(key) for n in names})
        if pick is None:
            continue
        out[key] = by_attacker[pick][key]
        chosen[key] = pick
    for key, pick in chosen.items():
        std = catalogue.metric(key).std_key
        if std in by_attacker[pick]:
            out[std] = by_attacker[pick][std]
    return out


def job_metric_values(
    session: Session, job_ids: Sequence[int], metrics: Sequence[str] | None = None
) -> dict[int, dict[str, float | None]]:
    """``{job_id: {summary_key: value}}`` of the jobs' results, aggregated like every
    leaderboard view (seeds, then the worst case over attackers); ``metrics`` None: all."""
    return _aggregated_values(session, job_ids, metrics)


# --- many metrics per row (the leaderboard view) ------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _parsed_key(text: str) -> ResultKey:
    """:meth:`ResultKey.parse`, cached: every row's summary repeats the same few hundred keys."""
    return ResultKey.parse(text)


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
    description: str | None = None
    paper_url: str | None = None
    code_url: str | None = None
    trustworthy: bool | None = None
    """The report's trust mark; None = unknown (no trust block in the report)."""
    trust_reasons: list[dict[str, Any]] = field(default_factory=list)
    worst_case: dict[str, Any] | None = None
    """The report's ``worst_case`` (an attacker zoo's, per scenario); None = one attacker."""
    evaluator: dict[str, Any] | None = None
    """The job's evaluator (``services.pipeline.stage_versions.current_evaluator``); None =
    recorded before evaluators were."""
    phase_id: int | None = None
    """The challenge phase the job ran in (None: the protocol has no phases)."""
    summary: Mapping[str, float | None] = field(default_factory=dict)
    """Every value of the job's summary, by :class:`ResultKey` (what :meth:`metrics_of`
    reads): stored when the job succeeded, never recomputed by a view."""

    def metrics_of(self, scenario: str, backend: str) -> dict[str, float | None]:
        """``{metric: value}``: every metric the job recorded for (``scenario``, ``backend``),
        aggregated over seeds and worst over a zoo's attackers, read from its summary."""
        out: dict[str, float | None] = {}
        for text, value in self.summary.items():
            key = _parsed_key(text)
            if key.scenario == scenario and key.backend == backend and key.metric is not None:
                out[str(key.metric)] = value
        return out

    @property
    def is_baseline(self) -> bool:
        """Built-in anonymizers are the platform's baselines."""
        return kind_of(self.kind).baseline


def _summary_row(session: Session, job_id: int) -> JobSummaryRecord:
    summary = session.get(JobSummaryRecord, job_id)
    if summary is None:
        job = get_row(session, Job, job_id)
        summary = JobSummaryRecord(job_id=job_id, protocol_id=job.protocol_id, metric_values={})
        session.add(summary)
    return summary


def record_report_summary(
    session: Session,
    job_id: int,
    *,
    trustworthy: bool | None,
    trust_reasons: Sequence[Mapping[str, Any]],
    det_curves: Mapping[str, Any],
    worst_case: Mapping[str, Any] | None = None,
    challenger: Mapping[str, Any] | None = None,
) -> JobSummaryRecord:
    """Keep the report's trust mark, DET points, zoo worst case and challenger block in the job's
    summary (created when missing; its metric values are filled by :func:`refresh_job_summary`
    when the job succeeds)."""
    summary = _summary_row(session, job_id)
    summary.worst_case = dict(worst_case) if worst_case else None
    summary.challenger = dict(challenger) if challenger else None
    summary.trustworthy = trustworthy
    summary.trust_reasons = [dict(r) for r in trust_reasons] if trustworthy is not None else None
    summary.det_curves = dict(det_curves) or None
    session.flush()
    return summary


def det_curves_of(session: Session, job_ids: Sequence[int], key: str) -> dict[int, dict[str, Any]]:
    """``{job_id: curve}`` of the DET curve ``key`` (:func:`det_key`) of the jobs that have it."""
    out: dict[int, dict[str, Any]] = {}
    if not job_ids:
        return out
    query = select(JobSummaryRecord.job_id, JobSummaryRecord.det_curves).where(
        JobSummaryRecord.job_id.in_(list(job_ids))
    )
    for job_id, curves in session.execute(query):
        if isinstance(curves, dict) and isinstance(curves.get(key), dict):
            out[job_id] = curves[key]
    return out


def react_to_job_transition(session: Session, job: Job, new_state: RunState) -> None:
    """A job's state changed: a succeeded job gets its leaderboard summary (the listener
    ``services.platform.jobs.reactions`` registers with ``records.on_job_transition``)."""
    if new_state == RunState.SUCCEEDED:
        refresh_job_summary(session, job.id)


def refresh_job_summary(session: Session, job_id: int) -> JobSummaryRecord:
    """(Re)compute the stored summary of a job from its results (call when it succeeded)."""
    return refresh_job_summaries(session, [job_id])[0]


def refresh_job_summaries(session: Session, job_ids: Sequence[int]) -> list[JobSummaryRecord]:
    """(Re)compute the summaries of ``job_ids`` (e.g. a backfill), in that order."""
    jobs = {job.id: job for job in session.scalars(select(Job).where(Job.id.in_(job_ids)))}
    missing = [job_id for job_id in job_ids if job_id not in jobs]
    if missing:
        raise NotFoundError(f"jobs: no row with id {missing[0]}")
    values = _aggregated_values(session, list(job_ids), None)  # every metric: views read these
    existing = {
        s.job_id: s
        for s in session.scalars(
            select(JobSummaryRecord).where(JobSummaryRecord.job_id.in_(job_ids))
        )
    }
    out = []
    for job_id in job_ids:
        summary = existing.get(job_id)
        if summary is None:
            summary = JobSummaryRecord(job_id=job_id)
            session.add(summary)
        summary.protocol_id = jobs[job_id].protocol_id
        summary.metric_values = values[job_id]
        out.append(summary)
    session.flush()
    return out


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
    latest = latest_succeeded_jobs(
        protocol_id, viewer_team_id=viewer_team_id, include_all=include_all_private
    )
    query = (
        select(
            Submission.id,
            Submission.name,
            Submission.kind,
            Submission.visibility,
            Submission.created_at,
            Submission.description,
            Submission.paper_url,
            Submission.code_url,
            Team.slug,
            latest.c.job_id,
            latest.c.finished_at,
            JobSummaryRecord.metric_values,
            JobSummaryRecord.trustworthy,
            JobSummaryRecord.trust_reasons,
            JobSummaryRecord.worst_case,
            Job.evaluator,
            Job.phase_id,
        )
        .join(latest, and_(latest.c.submission_id == Submission.id, latest.c.recency == 1))
        .join(Team, Team.id == Submission.team_id)
        .join(Job, Job.id == latest.c.job_id)
        .outerjoin(JobSummaryRecord, JobSummaryRecord.job_id == latest.c.job_id)
        .order_by(Submission.created_at, Submission.id)
    )
    if not include_all_private:
        query = query.where(visible_submissions_clause(viewer_team_id=viewer_team_id))
    records = session.execute(query).all()
    summaries: dict[int, dict[str, float | None]] = {
        r.job_id: r.metric_values for r in records if r.metric_values is not None
    }
    unsummarized = [r.job_id for r in records if r.metric_values is None]
    if unsummarized:  # succeeded before summaries existed: aggregated from the results
        summaries.update(_aggregated_values(session, unsummarized, None))
    keys = [
        (key, summary_key(key[0], catalogue.stored_backend(key[0], backend), key[1]))
        for key in dict.fromkeys(metrics)
    ]
    rows = []
    for r in records:
        values = summaries.get(r.job_id, {})
        rows.append(
            LeaderboardTableRow(
                submission_id=r.id,
                submission_name=r.name,
                kind=r.kind,
                visibility=r.visibility,
                team_slug=r.slug,
                job_id=r.job_id,
                submitted_at=r.created_at,
                evaluated_at=r.finished_at,
                values={key: values.get(stored) for key, stored in keys},
                description=r.description,
                paper_url=r.paper_url,
                code_url=r.code_url,
                trustworthy=r.trustworthy,
                trust_reasons=list(r.trust_reasons or []),
                worst_case=dict(r.worst_case) if r.worst_case else None,
                evaluator=dict(r.evaluator) if r.evaluator else None,
                phase_id=r.phase_id,
                summary=values,
            )
        )
    return rows
