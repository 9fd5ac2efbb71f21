"""Teams, submissions and jobs written straight through ``services.platform`` (no API, no
worker): the rows that platform, page and worker tests start from."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from services.platform import identity, results, submissions
from services.platform.jobs import job_config, job_stage_names
from services.platform.jobs import records as job_records
from services.storage.db import Database


def record_finished_job(
    session: Session,
    *,
    team_id: int,
    submission_id: int,
    rows: Sequence[results.ResultRow],
    protocol_id: int | None = None,
    config: Mapping[str, Any] | None = None,
    stage_names: Sequence[str] = (),
    artifacts: Sequence[results.ArtifactRecord] = (),
    state: str = "succeeded",
    error_message: str | None = None,
    finished_at: dt.datetime | None = None,
) -> int:
    """A job that ran (``queued`` -> ``running`` -> ``state``, finished at ``finished_at``, now
    by default) and recorded ``rows`` and ``artifacts``; returns its id. ``config``: the stored
    job config, ``{}`` by default (nothing runs it)."""
    job = job_records.create_job(
        session,
        team_id=team_id,
        submission_id=submission_id,
        protocol_id=protocol_id,
        config=config if config is not None else {},
        stage_names=stage_names,
    ).job
    job_records.transition_job(session, job.id, "running")
    results.record_results_and_artifacts(session, job.id, results=rows, artifacts=artifacts)
    job_records.transition_job(session, job.id, state, error_message=error_message, now=finished_at)
    return job.id


def planned_builtin_job(
    database: Database,
    config: Mapping[str, Any],
    *,
    team_slug: str,
    submission_name: str = "pitch",
    builtin: str = "pitch",
) -> int:
    """A new team's built-in submission and a queued job on protocol config ``config`` with
    every stage planned (what the API creates before it starts the job); returns the job id."""
    with database.session_scope() as session:
        team = identity.create_team(session, team_slug)
        submission = submissions.create_submission(
            session, team.id, submission_name, "builtin", builtin_name=builtin, builtin_params={}
        )
        return job_records.create_job(
            session,
            team_id=team.id,
            submission_id=submission.id,
            config=job_config(config, submission),
            stage_names=job_stage_names(),
        ).job.id
