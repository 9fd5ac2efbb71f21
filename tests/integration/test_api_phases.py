"""Challenge phases over HTTP (windows, limits, results hidden until the reveal, held-back
webhook events) and the administrators' uncharged re-run of results of an older evaluator.
Real PostgreSQL; workers replaced by a recording dispatcher, jobs finished in the database."""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Any

import pytest
from sqlalchemy import func, select

from services.pipeline import stage_versions
from services.platform import results
from services.platform.jobs import records as job_records
from services.platform.webhooks import release_held_events
from services.storage.db import Database
from services.storage.models import Job, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.integration

HOUR = dt.timedelta(hours=1)


def _iso(value: dt.datetime) -> str:
    return value.isoformat()


class Env:
    def __init__(self, client: Any, world: Any, protocol_body: dict[str, Any]) -> None:
        self.client = client
        self.world = world
        self.a = world.auth(world.a)
        self.b = world.auth(world.b)
        self.admin = world.auth(world.admin)
        response = client.post("/v1/admin/protocols", json=protocol_body, headers=self.admin)
        assert response.status_code == 201, response.text
        self.protocol_id: int = response.json()["id"]

    def phase(self, **body: Any) -> Any:
        return self.client.post(
            f"/v1/protocols/{self.protocol_id}/phases", json=body, headers=self.admin
        )

    def patch(self, name: str, **body: Any) -> Any:
        return self.client.patch(
            f"/v1/protocols/{self.protocol_id}/phases/{name}", json=body, headers=self.admin
        )

    def submission(self, headers: dict[str, str], name: str) -> int:
        response = self.client.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": name,
                "visibility": "public",
                "builtin": {"name": "pitch", "params": {"semitones": 2}},
            },
            headers=headers,
        )
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def job(self, submission_id: int, headers: dict[str, str], **extra: Any) -> Any:
        body = {"submission_id": submission_id, "protocol_id": self.protocol_id, **extra}
        return self.client.post("/v1/jobs", json=body, headers=headers)

    def board_names(self, headers: dict[str, str] | None) -> set[str]:
        board = self.client.get(
            f"/v1/protocols/{self.protocol_id}/leaderboard", headers=headers or {}
        )
        assert board.status_code == 200, board.text
        return {e["submission_name"] for e in board.json()["entries"]}

    def page(self, headers: dict[str, str] | None = None) -> str:
        response = self.client.get(f"/protocols/{self.protocol_id}", headers=headers or {})
        assert response.status_code == 200, response.text
        return response.text

    def csv(self) -> str:
        response = self.client.get(f"/protocols/{self.protocol_id}/leaderboard.csv")
        assert response.status_code == 200, response.text
        return response.text


@pytest.fixture()
def env(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Env:
    return Env(make_api_client(), api_world, api_protocol_body)


def _succeed(database: Database, job_id: int, eer: float) -> None:
    with database.session_scope() as session:
        job_records.transition_job(session, job_id, "running")
        results.record_results_and_artifacts(
            session,
            job_id,
            results=[results.ResultRow("semi-informed", "cosine", -1, "eer_percent", eer)],
            artifacts=[],
            stage_id=job_records.get_stage(session, job_id, "report").id,
        )
        job_records.transition_job(session, job_id, "succeeded")


def _problem(response: Any, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return str(response.json()["detail"])


def test_phase_definitions_refuse_bad_windows_and_name_the_problem(env: Env) -> None:
    now = dt.datetime.now(dt.UTC)
    dev = env.phase(name="development", starts_at=_iso(now - HOUR), ends_at=_iso(now + HOUR))
    assert dev.status_code == 201, dev.text
    assert dev.json()["open"] is True and dev.json()["hidden"] is False
    for ends in (now + 4 * HOUR, now + 5 * HOUR):  # before or at its start
        late = env.phase(name="late", starts_at=_iso(now + 5 * HOUR), ends_at=_iso(ends))
        detail = _problem(late, 422)
        assert detail.startswith("body.ends_at") and "after starts_at" in detail
        assert late.json()["errors"][0]["field"] == "body.ends_at"
    detail = _problem(env.phase(name="evaluation", starts_at=_iso(now)), 409)
    assert "overlaps phase 'development'" in detail
    # A hidden phase whose reveal time has passed shows its results at once.
    revealed = env.phase(
        name="revealed",
        starts_at=_iso(now + 10 * HOUR),
        visibility="hidden",
        reveal_at=_iso(now - HOUR),
    )
    assert revealed.status_code == 201, revealed.text
    assert revealed.json()["hidden"] is False
    phases = f"/v1/protocols/{env.protocol_id}/phases"
    assert env.client.delete(f"{phases}/revealed", headers=env.admin).status_code == 204
    # The document's rules: a hidden phase needs reveal_at, a public one has none.
    detail = _problem(
        env.phase(name="evaluation", starts_at=_iso(now + HOUR), visibility="hidden"), 422
    )
    assert "reveal_at" in detail
    detail = _problem(
        env.phase(name="evaluation", starts_at=_iso(now + HOUR), reveal_at=_iso(now + HOUR)), 422
    )
    assert "reveal_at" in detail
    assert (
        env.client.post(
            f"/v1/protocols/{env.protocol_id}/phases",
            json={"name": "x", "starts_at": _iso(now + 9 * HOUR)},
            headers=env.a,
        ).status_code
        == 403
    )
    evaluation = env.phase(
        name="evaluation",
        starts_at=_iso(now + HOUR),
        ends_at=_iso(now + 3 * HOUR),
        visibility="hidden",
        reveal_at=_iso(now + 4 * HOUR),
        submission_limit=2,
    )
    assert evaluation.status_code == 201, evaluation.text
    listed = env.client.get(f"/v1/protocols/{env.protocol_id}/phases", headers=env.b).json()
    assert [(p["name"], p["position"]) for p in listed] == [("development", 0), ("evaluation", 1)]
    # The protocol page shows them.
    page = env.page()
    assert "development" in page and "evaluation" in page and "hidden until" in page


def test_jobs_go_to_the_open_phase_refused_after_its_end_and_limited_per_team(
    env: Env, pg_database: Database
) -> None:
    now = dt.datetime.now(dt.UTC)
    assert (
        env.phase(
            name="development",
            starts_at=_iso(now - 2 * HOUR),
            ends_at=_iso(now + HOUR),
            submission_limit=2,
        ).status_code
        == 201
    )
    assert env.phase(name="evaluation", starts_at=_iso(now + HOUR)).status_code == 201
    sub = env.submission(env.a, "a")
    first = env.client.post(
        "/v1/jobs",
        json={"submission_id": sub, "protocol_id": env.protocol_id},
        headers={**env.a, "Idempotency-Key": "first"},
    )
    assert first.status_code == 201, first.text
    second = env.job(sub, env.a, phase="development")
    assert second.status_code == 201, second.text
    assert first.json()["phase_id"] == second.json()["phase_id"] is not None
    assert "allows 2 jobs per team" in _problem(env.job(sub, env.a), 409)
    # A failed job is not charged: the team may submit again.
    with pg_database.session_scope() as session:
        job_records.transition_job(session, second.json()["id"], "failed", error_message="x")
    assert env.job(sub, env.a).status_code == 201
    assert "opens at" in _problem(env.job(sub, env.a, phase="evaluation"), 409)
    assert "no phase 'test'" in _problem(env.job(sub, env.a, phase="test"), 404)
    # The phase ends: later submissions are refused with 409 naming it.
    assert env.patch("development", ends_at=_iso(now - HOUR)).status_code == 200
    detail = _problem(env.job(sub, env.a, phase="development"), 409)
    assert "phase 'development' ended at" in detail
    # An idempotent replay still answers the job created while the phase was open.
    replay = env.client.post(
        "/v1/jobs",
        json={"submission_id": sub, "protocol_id": env.protocol_id},
        headers={**env.a, "Idempotency-Key": "first"},
    )
    assert replay.status_code == 200 and replay.json()["id"] == first.json()["id"]
    detail = _problem(env.job(sub, env.a), 409)  # no phase named: the one that ended is
    assert "no phase of protocol" in detail and "phase 'development' ended at" in detail
    assert "phase 'evaluation' opens at" in detail


def test_hidden_phase_results_and_events_appear_at_the_reveal(
    env: Env, pg_database: Database
) -> None:
    now = dt.datetime.now(dt.UTC)
    created = env.phase(
        name="evaluation",
        starts_at=_iso(now - HOUR),
        visibility="hidden",
        reveal_at=_iso(now + HOUR),
    )
    assert created.status_code == 201, created.text
    sub = env.submission(env.a, "hidden-anonymizer")
    job = env.job(sub, env.a).json()
    with pg_database.session_scope() as session:
        team_a = session.get(Job, job["id"]).team_id  # type: ignore[union-attr]
        session.add(
            WebhookEndpoint(
                team_id=team_a,
                url="https://hooks.example/unmask",
                secret="whsec_test",
                event_types=["job.succeeded"],
            )
        )
    _succeed(pg_database, job["id"], 31.0)
    with pg_database.session_scope() as session:
        assert session.scalar(select(func.count(WebhookDelivery.id))) == 0  # held back
        assert release_held_events(session) == {}  # not revealed yet
    # Hidden from others (JSON, page, CSV, the job itself), shown to its team and admins.
    assert "hidden-anonymizer" not in env.board_names(env.b)
    assert "hidden-anonymizer" in env.board_names(env.a)
    assert "hidden-anonymizer" not in env.page() and "hidden-anonymizer" not in env.csv()
    assert env.client.get(f"/v1/jobs/{job['id']}/results", headers=env.admin).status_code == 200
    assert env.client.get(f"/v1/jobs/{job['id']}/results", headers=env.b).status_code == 404
    assert env.client.get(f"/v1/jobs/{job['id']}/results", headers=env.a).status_code == 200
    # The reveal (moved to now): every view shows it, without a restart, and the event goes out.
    assert env.patch("evaluation", reveal_at=_iso(dt.datetime.now(dt.UTC))).status_code == 200
    assert "hidden-anonymizer" in env.board_names(env.b)
    assert "hidden-anonymizer" in env.page() and "hidden-anonymizer" in env.csv()
    assert env.client.get(f"/v1/jobs/{job['id']}/results", headers=env.b).status_code == 200
    with pg_database.session_scope() as session:
        released = release_held_events(session)
        assert list(released.values()) == [1]
        delivery = session.scalars(select(WebhookDelivery)).one()
        assert delivery.job_id == job["id"] and delivery.event_type == "job.succeeded"
        assert release_held_events(session) == {}  # once only
    detail = _problem(env.patch("evaluation", reveal_at=_iso(now + 5 * HOUR)), 409)
    assert "can no longer change" in detail


def test_rerun_outdated_queues_uncharged_reruns_and_keeps_old_rows(
    env: Env, pg_database: Database, api_dispatcher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = env.submission(env.a, "old-scorer")
    job = env.job(sub, env.a).json()
    assert job["evaluator"]["scorer"] == stage_versions.current_scorer()
    assert job["evaluator"]["config_hash"] == job["config_hash"]
    assert job["charged"] is True
    _succeed(pg_database, job["id"], 30.0)
    rerun_url = f"/v1/protocols/{env.protocol_id}/rerun-outdated"
    # Nothing outdated yet.
    nothing = env.client.post(rerun_url, headers=env.admin)
    assert nothing.status_code == 200 and nothing.json()["queued"] == {}
    assert env.client.post(rerun_url, headers=env.a).status_code == 403
    # Every row names its evaluator in the JSON and the CSV ...
    [entry] = env.client.get(f"/v1/protocols/{env.protocol_id}/leaderboard", headers=env.a).json()[
        "entries"
    ]
    assert entry["evaluator"]["scorer"] == job["evaluator"]["scorer"]
    assert entry["evaluator_outdated"] is False

    def csv_evaluator() -> dict[str, str]:
        [row] = list(csv.DictReader(io.StringIO(env.csv())))
        return {k: row[k] for k in ("unmask version", "scorer", "evaluator outdated")}

    version = job["evaluator"]["unmask_version"]
    assert csv_evaluator() == {
        "unmask version": version,
        "scorer": job["evaluator"]["scorer"],
        "evaluator outdated": "no",
    }
    # The scorer changes (a stage version is bumped): the row is outdated on the page, in the
    # JSON and in the CSV.
    monkeypatch.setitem(stage_versions.STAGE_VERSIONS, "score", 2)
    assert "older scorer" in env.page()
    [entry] = env.client.get(f"/v1/protocols/{env.protocol_id}/leaderboard", headers=env.a).json()[
        "entries"
    ]
    assert entry["evaluator_outdated"] is True
    assert csv_evaluator()["evaluator outdated"] == "yes"
    plan = env.client.post(rerun_url, headers=env.admin)
    assert plan.status_code == 200, plan.text
    [(old_id, new_id)] = plan.json()["queued"].items()
    assert int(old_id) == job["id"]
    again = env.client.post(rerun_url, headers=env.admin).json()
    assert again["queued"] == {} and again["already_running"] == [sub]
    rerun = env.client.get(f"/v1/jobs/{new_id}", headers=env.a).json()
    assert rerun["charged"] is False and rerun["rerun_of_job_id"] == job["id"]
    assert rerun["config_hash"] == job["config_hash"]
    assert rerun["evaluator"]["stage_versions"]["score"] == 2
    # Not charged: the team's quota usage is unchanged.
    me = env.client.get("/v1/me", headers=env.a).json()
    assert me["quotas"]["jobs_per_day"]["used"] == 1
    assert me["quotas"]["concurrent_jobs"]["used"] == 0
    # The old row stays until the re-run succeeds, then the new one stands, no longer marked.
    board = env.client.get(f"/v1/protocols/{env.protocol_id}/leaderboard", headers=env.a)
    assert [e["job_id"] for e in board.json()["entries"]] == [job["id"]]
    _succeed(pg_database, new_id, 20.0)
    board = env.client.get(f"/v1/protocols/{env.protocol_id}/leaderboard", headers=env.a)
    assert [e["job_id"] for e in board.json()["entries"]] == [new_id]
    assert "older scorer" not in env.page()


def test_a_phase_may_accept_some_submission_kinds_only(env: Env) -> None:
    now = dt.datetime.now(dt.UTC)
    refused = env.phase(name="official", starts_at=_iso(now - HOUR), allowed_kinds=["nope"])
    assert refused.status_code == 422
    created = env.phase(
        name="official", starts_at=_iso(now - HOUR), allowed_kinds=["container", "service"]
    )
    assert created.status_code == 201, created.text
    assert created.json()["allowed_kinds"] == ["container", "service"]
    builtin = env.submission(env.a, "pitch in the official phase")
    answer = env.job(builtin, env.a)
    assert answer.status_code == 409
    assert "accepts container and service submissions only" in answer.json()["detail"]
    assert "builtin" in answer.json()["detail"]
    # Lifted: every kind again.
    patched = env.patch("official", allowed_kinds=None)
    assert patched.status_code == 200 and patched.json()["allowed_kinds"] is None
    assert env.job(builtin, env.a).status_code == 201


def test_a_change_without_a_time_zone_is_malformed_not_a_conflict(env: Env) -> None:
    now = dt.datetime.now(dt.UTC)
    created = env.phase(name="development", starts_at=_iso(now - HOUR))
    assert created.status_code == 201, created.text
    naive = (now + HOUR).replace(tzinfo=None).isoformat()
    for field in ("starts_at", "ends_at"):
        detail = _problem(env.patch("development", **{field: naive}), 422)
        assert "time zone" in detail
    assert _problem(env.phase(name="later", starts_at=naive), 422)


def test_a_time_outside_the_utc_calendar_is_malformed_not_a_server_error(env: Env) -> None:
    now = dt.datetime.now(dt.UTC)
    created = env.phase(
        name="development",
        starts_at=_iso(now - HOUR),
        ends_at=_iso(now),
        visibility="hidden",
        reveal_at=_iso(now + HOUR),
    )
    assert created.status_code == 201, created.text
    # Valid RFC 3339 times whose UTC instant falls before year 1 or after year 9999.
    for when in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"):
        assert "UTC" in _problem(env.phase(name="later", starts_at=when), 422)
        hidden = env.phase(
            name="later", starts_at=_iso(now + HOUR), visibility="hidden", reveal_at=when
        )
        assert "UTC" in _problem(hidden, 422)
        assert "UTC" in _problem(env.patch("development", reveal_at=when), 422)


def test_a_hidden_phase_made_public_sends_its_held_events(env: Env, pg_database: Database) -> None:
    now = dt.datetime.now(dt.UTC)
    created = env.phase(
        name="evaluation",
        starts_at=_iso(now - HOUR),
        visibility="hidden",
        reveal_at=_iso(now + HOUR),
    )
    assert created.status_code == 201, created.text
    job = env.job(env.submission(env.a, "hidden-anonymizer"), env.a).json()
    with pg_database.session_scope() as session:
        team_a = session.get(Job, job["id"]).team_id  # type: ignore[union-attr]
        session.add(
            WebhookEndpoint(
                team_id=team_a,
                url="https://hooks.example/unmask",
                secret="whsec_test",
                event_types=["job.succeeded"],
            )
        )
    _succeed(pg_database, job["id"], 31.0)
    with pg_database.session_scope() as session:
        assert session.scalar(select(func.count(WebhookDelivery.id))) == 0  # held back
    # Made public: its results show at once, and so do its held-back events.
    made_public = env.patch("evaluation", visibility="public")
    assert made_public.status_code == 200, made_public.text
    assert "hidden-anonymizer" in env.board_names(env.b)
    with pg_database.session_scope() as session:
        release_held_events(session)
        delivery = session.scalars(select(WebhookDelivery)).one()
        assert delivery.job_id == job["id"] and delivery.event_type == "job.succeeded"


def test_a_public_phase_made_hidden_sends_no_event_twice(env: Env, pg_database: Database) -> None:
    now = dt.datetime.now(dt.UTC)
    assert env.phase(name="evaluation", starts_at=_iso(now - HOUR)).status_code == 201
    job = env.job(env.submission(env.a, "public-anonymizer"), env.a).json()
    with pg_database.session_scope() as session:
        team_a = session.get(Job, job["id"]).team_id  # type: ignore[union-attr]
        session.add(
            WebhookEndpoint(
                team_id=team_a,
                url="https://hooks.example/unmask",
                secret="whsec_test",
                event_types=["job.succeeded"],
            )
        )
    _succeed(pg_database, job["id"], 31.0)  # public: its event is recorded at once
    with pg_database.session_scope() as session:
        assert session.scalar(select(func.count(WebhookDelivery.id))) == 1
    hidden = env.patch("evaluation", visibility="hidden", reveal_at=_iso(now + HOUR))
    assert hidden.status_code == 200, hidden.text
    assert env.patch("evaluation", reveal_at=_iso(dt.datetime.now(dt.UTC))).status_code == 200
    with pg_database.session_scope() as session:
        release_held_events(session)
        assert session.scalar(select(func.count(WebhookDelivery.id))) == 1
