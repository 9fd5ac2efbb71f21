"""The platform wing (services/platform): its shape, archive protocols, access, quotas, and the
one leaderboard rule both leaderboard views share."""

from __future__ import annotations

import ast
import datetime as dt
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from services.platform import (
    access,
    identity,
    leaderboard,
    protocols,
    quotas,
    results,
    submissions,
)
from services.platform.jobs import records as job_records
from services.settings import Settings
from services.storage.db import Database
from services.storage.errors import ConflictError, ImmutableSubmissionError, NotFoundError
from services.storage.models import AGGREGATE_SEED
from support.seeding import record_finished_job

ROOT = Path(__file__).resolve().parents[2]
PLATFORM_DIR = ROOT / "services" / "platform"
AGGREGATES = ("identity", "access", "protocols", "submissions", "quotas", "results", "leaderboard")
FORBIDDEN_IMPORTS = ("fastapi", "starlette", "celery", "kombu", "redis")
SHA = "ab" * 32
T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)


# --- shape ---------------------------------------------------------------------------------------


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_wing_imports_no_web_or_queue_framework() -> None:
    offenders = {
        str(path.relative_to(PLATFORM_DIR)): sorted(
            name for name in _imported_modules(path) if name.split(".")[0] in FORBIDDEN_IMPORTS
        )
        for path in PLATFORM_DIR.rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


@pytest.mark.parametrize("name", AGGREGATES)
def test_each_aggregate_has_a_service_module_and_re_exports_it(name: str) -> None:
    package = importlib.import_module(f"services.platform.{name}")
    service = importlib.import_module(f"services.platform.{name}.service")
    exported = set(package.__all__)
    assert exported, name
    for public in exported:
        assert hasattr(package, public), f"{name}.{public}"
    defined_in_service = {
        attr
        for attr, value in vars(service).items()
        if not attr.startswith("_") and getattr(value, "__module__", None) == service.__name__
    }
    assert defined_in_service <= exported | {"WINDOW"}, name


def test_archive_submissions_store_their_protocol(database: Database) -> None:
    with database.session_scope() as session:
        team = identity.create_team(session, "lab")
        protocol = protocols.create_protocol(session, "p", body={"v": 1})
        # The key need not name the protocol: the column is the source of truth.
        archive = submissions.create_submission(
            session,
            team.id,
            "audio",
            "archive",
            archive_blob_key=f"uploads/team-{team.id}/{'0' * 32}",
            archive_sha256=SHA,
            protocol_id=protocol.id,
        )
        assert archive.protocol_id == protocol.id
        with pytest.raises(NotFoundError, match=f"protocol {protocol.id + 1} not found"):
            submissions.create_submission(
                session,
                team.id,
                "audio",
                "archive",
                archive_blob_key="archives/x",
                archive_sha256=SHA,
                protocol_id=protocol.id + 1,
            )
        with pytest.raises(ConflictError, match="kind builtin has no protocol_id"):
            submissions.create_submission(
                session, team.id, "b", "builtin", builtin_name="pitch", protocol_id=protocol.id
            )
        other = protocols.create_protocol(session, "p", body={"v": 2})
        archive.protocol_id = other.id  # accepted: content is frozen
        with pytest.raises(ImmutableSubmissionError, match="protocol_id"):
            session.flush()
        session.rollback()


def test_submission_out_reads_the_protocol_from_the_column(database: Database) -> None:
    from api.schemas import SubmissionOut

    with database.session_scope() as session:
        team = identity.create_team(session, "lab")
        protocol = protocols.create_protocol(session, "p", body={"v": 1})
        archive = submissions.create_submission(
            session,
            team.id,
            "audio",
            "archive",
            # A key naming another protocol id: only the column counts.
            archive_blob_key=f"archives/protocol-999/team-{team.id}/{'0' * 32}",
            archive_sha256=SHA,
            protocol_id=protocol.id,
            accept=False,
        )
        assert SubmissionOut.of(archive).archive_protocol_id == protocol.id


# --- access ----------------------------------------------------------------------------------


def _principal(session: Session, team_slug: str, scopes: list[str]) -> identity.Principal:
    issued = identity.issue_team_token(session, team_slug, hmac_key="k", scopes=scopes)
    return identity.authenticate(session, issued.plaintext, hmac_key="k")


def test_access_rules_for_team_other_team_admin_and_anonymous(database: Database) -> None:
    with database.session_scope() as session:
        for slug in ("lab", "other", "ops"):
            identity.create_team(session, slug)
        lab = _principal(session, "lab", ["read", "submit"])
        other = _principal(session, "other", ["read"])
        admin = _principal(session, "ops", ["admin"])
        public = submissions.create_submission(
            session, lab.team_id, "pub", "builtin", builtin_name="pitch", visibility="public"
        )
        private = submissions.create_submission(
            session, lab.team_id, "priv", "builtin", builtin_name="pitch"
        )
        job = job_records.create_job(
            session, team_id=lab.team_id, submission_id=public.id, config={}
        ).job
        private_job = job_records.create_job(
            session, team_id=lab.team_id, submission_id=private.id, config={}
        ).job

        for viewer in (lab, other, admin, None):
            assert access.visible_submission(session, viewer, public.id).id == public.id
            assert access.visible_job(session, viewer, job.id).id == job.id
        for viewer in (lab, admin):
            assert access.owned_submission(session, viewer, private.id).id == private.id
            assert access.owned_job(session, viewer, private_job.id).id == private_job.id
        # Another team's private objects do not exist for the caller (same message as missing).
        for viewer in (other, None):
            with pytest.raises(NotFoundError, match=f"^submission {private.id} not found$"):
                access.visible_submission(session, viewer, private.id)
            with pytest.raises(NotFoundError, match=f"^job {private_job.id} not found$"):
                access.visible_job(session, viewer, private_job.id)
        # Its public ones are read-only.
        with pytest.raises(access.AccessDeniedError, match="only its team can run jobs"):
            access.owned_submission(session, other, public.id)
        with pytest.raises(access.AccessDeniedError, match="read-only"):
            access.owned_job(session, other, job.id)


# --- quotas ----------------------------------------------------------------------------------


def test_quota_errors_carry_the_numbers_the_api_shows(database: Database) -> None:
    settings = Settings(quota_submissions_per_day=1, quota_jobs_per_day=5, quota_concurrent_jobs=1)
    with database.session_scope() as session:
        team = identity.create_team(session, "lab")
        sub = submissions.create_submission(session, team.id, "a", "builtin", builtin_name="x")
        with pytest.raises(quotas.QuotaExceededError) as raised:
            quotas.check_submission_quota(session, settings=settings, team_id=team.id)
        error = raised.value
        assert (error.quota, error.used, error.limit) == ("submissions per day", 1, 1)
        # The oldest counted submission leaves the 24 h window in (almost) 24 h.
        assert 24 * 3600 - 60 < error.retry_after_s <= 24 * 3600
        assert str(error).startswith("quota exceeded: submissions per day (1 used, limit 1); ")

        quotas.check_job_quota(session, settings=settings, team_id=team.id)
        job_records.create_job(session, team_id=team.id, submission_id=sub.id, config={})
        with pytest.raises(quotas.QuotaExceededError, match="concurrent jobs") as raised:
            quotas.check_job_quota(session, settings=settings, team_id=team.id)
        assert raised.value.retry_after_s == 30
        report = quotas.team_quotas(session, settings=settings, team_id=team.id)
        assert (report.submissions_per_day.used, report.jobs_per_day.used) == (1, 1)
        assert (report.concurrent_jobs.used, report.concurrent_jobs.window) == (1, "now")


# --- one leaderboard rule ------------------------------------------------------------------------


def _succeed(
    session: Session,
    team_id: int,
    submission_id: int,
    protocol_id: int,
    rows: list[results.ResultRow],
    finished_minute: int,
) -> int:
    return record_finished_job(
        session,
        team_id=team_id,
        submission_id=submission_id,
        protocol_id=protocol_id,
        rows=rows,
        finished_at=T0 + dt.timedelta(minutes=finished_minute),
    )


def test_both_leaderboard_views_pick_the_same_job_and_value(database: Database) -> None:
    def eer(seed: int, value: float) -> results.ResultRow:
        return results.ResultRow("semi-informed", "cosine", seed, "eer_percent", value)

    with database.session_scope() as session:
        team = identity.create_team(session, "lab")
        protocol = protocols.create_protocol(session, "p", body={})
        first = submissions.create_submission(
            session, team.id, "first", "builtin", builtin_name="pitch", visibility="public"
        )
        second = submissions.create_submission(
            session, team.id, "second", "builtin", builtin_name="pitch", visibility="public"
        )
        # first: an older job, then a newer one whose aggregate row wins over the seed mean.
        _succeed(session, team.id, first.id, protocol.id, [eer(0, 10.0)], finished_minute=1)
        newest = _succeed(
            session,
            team.id,
            first.id,
            protocol.id,
            [eer(0, 20.0), eer(1, 30.0), eer(AGGREGATE_SEED, 24.0)],
            finished_minute=5,
        )
        # second: no aggregate row, so the mean over seeds.
        only = _succeed(session, team.id, second.id, protocol.id, [eer(0, 40.0), eer(1, 44.0)], 2)

        view = leaderboard.build_view(session, protocol, None)
        ranked = view.ranked
        table = leaderboard.leaderboard_table(
            session,
            protocol.id,
            backend="cosine",
            metrics=[("semi-informed", "eer_percent")],
        )
        metrics = {r.job_id: r.metrics_of("semi-informed", "cosine") for r in ranked}
    by_ranked = {e.submission_id: (e.job_id, e.values[view.ranking_key]) for e in ranked}
    by_table = {
        r.submission_id: (r.job_id, r.values[("semi-informed", "eer_percent")]) for r in table
    }
    assert by_ranked == by_table == {first.id: (newest, 24.0), second.id: (only, 42.0)}
    assert [e.submission_id for e in ranked] == [second.id, first.id]  # higher EER first
    assert metrics[ranked[1].job_id] == {"eer_percent": 24.0}


def test_job_records_is_a_leaf_and_the_transition_reactions_are_installed() -> None:
    records_path = Path(job_records.__file__)
    imported = {
        node.module
        for node in ast.walk(ast.parse(records_path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    aggregates = ("leaderboard", "webhooks", "results", "submissions", "quotas", "archives")
    assert not [m for m in imported if any(f"platform.{a}" in m for a in aggregates)], imported
    from services.platform.jobs.reactions import register_job_reactions
    from services.platform.leaderboard.service import react_to_job_transition as summarize
    from services.platform.webhooks.payloads import react_to_job_transition as queue_event

    register_job_reactions()
    register_job_reactions()  # idempotent: each listener once
    assert job_records.job_transition_listeners() == (summarize, queue_event)


def test_importing_jobs_registers_nothing_and_the_api_and_workers_register_at_start() -> None:
    """The reactions are installed by one explicit call where a process starts, not as a side
    effect of an import (run in a fresh interpreter: this one already has them)."""
    code = """
from services.platform import jobs  # noqa: F401
from services.platform.jobs import records
from services.platform.jobs.reactions import JOB_REACTIONS
assert records.job_transition_listeners() == (), records.job_transition_listeners()
from api.app import create_app
create_app()
assert records.job_transition_listeners() == JOB_REACTIONS, 'api'
import workers.app
records._JOB_TRANSITION_LISTENERS.clear()
workers.app.create_app()
assert records.job_transition_listeners() == JOB_REACTIONS, 'workers'
print('ok')
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
