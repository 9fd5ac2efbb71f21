"""A job's results (one metric value per scenario, back-end and seed) and artifacts (blobs)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from services.pipeline.zoo import BASELINE
from services.platform.hashing import SHA256_HEX_RE
from services.platform.leaderboard import record_report_summary, refresh_job_summary
from services.platform.rows import get_row
from services.storage.blob_interface import validate_key
from services.storage.errors import ConflictError, NotFoundError
from services.storage.models import Artifact, Job, JobSummaryRecord, Result, RunState, Stage


@dataclass(frozen=True)
class ResultRow:
    """One metric value. ``seed`` = ``AGGREGATE_SEED`` for a value aggregated over seeds;
    ``value`` None or NaN = not computed; ``attacker``: the zoo attacker (``baseline`` without a
    zoo)."""

    scenario: str
    backend: str
    seed: int
    metric: str
    value: float | None
    attacker: str = BASELINE


@dataclass(frozen=True)
class ReportSummary:
    """What a job summary keeps from the report besides metric values.

    ``trustworthy`` None = the report carries no (readable) ``trust`` block: unknown.
    ``reasons``: the block's reasons, each ``{"code", "message", "value", "threshold"}``.
    ``det_curves``: ``{"<scenario>|<backend>": {"seed", "pfa", "pmiss", "eer"}}`` from
    the first seed's row of each (scenario, back-end) that carries DET points.
    """

    trustworthy: bool | None = None
    reasons: list[dict[str, Any]] = field(default_factory=list)
    det_curves: dict[str, Any] = field(default_factory=dict)
    worst_case: dict[str, Any] | None = None
    """The report's ``worst_case`` (an attacker zoo's); None = one attacker."""
    challenger: dict[str, Any] | None = None
    """The report's ``challenger`` block; None = the report has none."""


@dataclass(frozen=True)
class ArtifactRecord:
    """A blob produced by a job: key, size (bytes), sha256 (hex) and media type."""

    key: str
    size_bytes: int
    sha256: str
    media_type: str = "application/octet-stream"


def record_results_and_artifacts(
    session: Session,
    job_id: int,
    *,
    results: Sequence[ResultRow] = (),
    artifacts: Sequence[ArtifactRecord] = (),
    stage_id: int | None = None,
) -> None:
    """Store a job's results and artifacts all-or-nothing (one SAVEPOINT).

    A result row already present (same job, attacker, scenario, back-end, seed, metric) is
    overwritten, so a
    retried stage can record again. Invalid input raises before anything is written.
    """
    job = get_row(session, Job, job_id)
    if stage_id is not None:
        stage = get_row(session, Stage, stage_id)
        if stage.job_id != job_id:
            raise ConflictError(f"stage {stage_id} belongs to job {stage.job_id}, not {job_id}")
    for artifact in artifacts:
        validate_key(artifact.key)
        if artifact.size_bytes < 0 or not SHA256_HEX_RE.match(artifact.sha256):
            raise ConflictError(
                f"artifact {artifact.key!r}: size must be >= 0 and sha256 64 lowercase hex digits"
            )
    with session.begin_nested():
        existing = {
            (r.attacker, r.scenario, r.backend, r.seed, r.metric): r
            for r in session.scalars(select(Result).where(Result.job_id == job_id))
        }
        for row in results:
            value = None if row.value is None or math.isnan(row.value) else float(row.value)
            identity = (row.attacker, row.scenario, row.backend, row.seed, row.metric)
            found = existing.get(identity)
            if found is not None:
                found.value = value
                continue
            result = Result(
                job_id=job_id,
                protocol_id=job.protocol_id,
                submission_id=job.submission_id,
                attacker=row.attacker,
                scenario=row.scenario,
                backend=row.backend,
                seed=row.seed,
                metric=row.metric,
                value=value,
            )
            session.add(result)
            existing[identity] = result
        for artifact in artifacts:
            session.add(
                Artifact(
                    job_id=job_id,
                    stage_id=stage_id,
                    key=artifact.key,
                    size_bytes=artifact.size_bytes,
                    sha256=artifact.sha256,
                    media_type=artifact.media_type,
                )
            )
        session.flush()
        if job.state == RunState.SUCCEEDED.value:
            # Results recorded after success: keep the leaderboard summary current.
            refresh_job_summary(session, job_id)


def replace_job_results(
    session: Session,
    job_id: int,
    *,
    results: Sequence[ResultRow] = (),
    artifacts: Sequence[ArtifactRecord] = (),
    stage_id: int | None = None,
    report: ReportSummary | None = None,
) -> None:
    """Replace every result and artifact row of a job with these (one SAVEPOINT).

    A report recorded twice (a task delivered twice, a re-run after a lost worker) leaves exactly
    the last set; call it in the transaction that marks the job succeeded. ``report``: the trust
    mark and DET points of the report (``document.report_summary_from_document``), kept in the
    job's summary for the leaderboard.
    """
    get_row(session, Job, job_id)
    with session.begin_nested():
        session.execute(delete(Result).where(Result.job_id == job_id))
        session.execute(delete(Artifact).where(Artifact.job_id == job_id))
        session.flush()
        record_results_and_artifacts(
            session, job_id, results=results, artifacts=artifacts, stage_id=stage_id
        )
        if report is not None:
            record_report_summary(
                session,
                job_id,
                trustworthy=report.trustworthy,
                trust_reasons=report.reasons,
                det_curves=report.det_curves,
                worst_case=report.worst_case,
                challenger=report.challenger,
            )


def list_results(session: Session, job_id: int) -> list[Result]:
    """A job's result rows ordered by scenario, attacker, back-end, metric, seed."""
    return list(
        session.scalars(
            select(Result)
            .where(Result.job_id == job_id)
            .order_by(Result.scenario, Result.attacker, Result.backend, Result.metric, Result.seed)
        )
    )


def job_worst_case(session: Session, job_id: int) -> dict[str, Any] | None:
    """The ``worst_case`` block of a job's report as its summary keeps it (None: one attacker
    or no summary yet)."""
    summary = session.get(JobSummaryRecord, job_id)
    return None if summary is None or summary.worst_case is None else dict(summary.worst_case)


def job_challenger(session: Session, job_id: int) -> dict[str, Any] | None:
    """The ``challenger`` block of a job's report as its summary keeps it (None: none, or no
    summary yet)."""
    summary = session.get(JobSummaryRecord, job_id)
    return None if summary is None or summary.challenger is None else dict(summary.challenger)


def job_trust(session: Session, job_id: int) -> tuple[bool | None, list[dict[str, Any]]]:
    """The trust check of a job's report as its summary keeps it: (trustworthy, reasons);
    (None, []) when unknown (no summary yet, or a report without a trust block)."""
    summary = session.get(JobSummaryRecord, job_id)
    if summary is None or summary.trustworthy is None:
        return None, []
    return summary.trustworthy, [dict(r) for r in summary.trust_reasons or []]


def list_artifacts(session: Session, job_id: int) -> list[Artifact]:
    """A job's artifacts in the order they were recorded."""
    return list(
        session.scalars(select(Artifact).where(Artifact.job_id == job_id).order_by(Artifact.id))
    )


def get_artifact(session: Session, job_id: int, artifact_id: int) -> Artifact:
    """Artifact ``artifact_id`` of job ``job_id`` or :class:`NotFoundError`."""
    artifact = session.get(Artifact, artifact_id)
    if artifact is None or artifact.job_id != job_id:
        raise NotFoundError(f"job {job_id} has no artifact {artifact_id}")
    return artifact
