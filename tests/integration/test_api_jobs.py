"""HTTP gateway: jobs (config validation, idempotency, pagination, cancel, re-run, quotas),
results, artifacts and leaderboards. Real PostgreSQL; workers replaced by a recording dispatcher.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.platform import results
from services.platform.jobs import records as job_records

pytestmark = pytest.mark.integration


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    return body


class Env:
    """A client, the world's tokens, one protocol and helpers."""

    def __init__(self, client: Any, world: Any, protocol_body: dict[str, Any]) -> None:
        self.client = client
        self.world = world
        self.a = world.auth(world.a)
        self.b = world.auth(world.b)
        response = client.post(
            "/v1/admin/protocols", json=protocol_body, headers=world.auth(world.admin)
        )
        assert response.status_code == 201, response.text
        self.protocol_id: int = response.json()["id"]

    def submission(
        self, headers: dict[str, str] | None = None, visibility: str = "private", name: str = "s"
    ) -> int:
        response = self.client.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": name,
                "visibility": visibility,
                "builtin": {"name": "pitch", "params": {"semitones": 2}},
            },
            headers=headers or self.a,
        )
        assert response.status_code == 201, response.text
        submission_id: int = response.json()["id"]
        return submission_id

    def job(self, submission_id: int, headers: dict[str, str] | None = None, **extra: Any) -> Any:
        body = {"submission_id": submission_id, "protocol_id": self.protocol_id, **extra}
        return self.client.post("/v1/jobs", json=body, headers=headers or self.a)


@pytest.fixture()
def env(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Env:
    return Env(make_api_client(), api_world, api_protocol_body)


def test_job_config_merges_protocol_overrides_and_submission(env: Env, api_dispatcher: Any) -> None:
    sub = env.submission()
    response = env.job(sub, config_overrides={"seeds": [0, 1], "training": {"epochs": 3}})
    assert response.status_code == 201, response.text
    job = response.json()
    assert response.headers["Location"] == f"/v1/jobs/{job['id']}"
    config = job["config"]
    # The builtin kind's section only (services/anonymizers/kinds/builtin.py).
    assert config["anonymizer"] == {"kind": "builtin", "name": "pitch", "params": {"semitones": 2}}
    assert config["synthetic"]["n_speakers"] == 12  # from the protocol
    assert config["seeds"] == [0, 1] and config["training"]["epochs"] == 3  # overrides
    assert job["state"] == "queued" and job["progress"] == 0.0
    assert job["stages"][0]["name"] == "corpus"
    assert all(s["state"] == "queued" for s in job["stages"])
    assert api_dispatcher.enqueued == [job["id"]]

    from services.pipeline.config import parse_config

    assert job["config_hash"] == parse_config(config).content_hash()

    body = _problem(env.job(sub, config_overrides={"seeds": "many"}), 422)
    assert "seeds" in body["detail"]
    body = _problem(env.job(sub, config_overrides={"trianing": {}}), 422)
    assert "trianing" in body["detail"]
    # Legal metrics asked for a population the protocol's evaluation set does not have.
    body = _problem(
        env.job(sub, config_overrides={"metrics": {"legal": {"speaker_counts": [2, 50]}}}), 422
    )
    assert "metrics.legal.speaker_counts: [50]" in body["detail"]
    assert "speakers with enrollment and trial utterances" in body["detail"]
    body = _problem(env.job(sub, config_overrides={"anonymizer": {"name": "vtln"}}), 422)
    assert "config_overrides.anonymizer" in body["detail"]
    _problem(env.job(sub, config_overrides=None), 422)
    assert (
        "protocol 999 not found"
        in _problem(
            env.client.post(
                "/v1/jobs", json={"submission_id": sub, "protocol_id": 999}, headers=env.a
            ),
            404,
        )["detail"]
    )
    assert api_dispatcher.enqueued == [job["id"]]


def test_protocol_registration_validates_and_versions(env: Env, api_protocol_body: Any) -> None:
    admin = env.world.auth(env.world.admin)
    same = env.client.post("/v1/admin/protocols", json=api_protocol_body, headers=admin)
    assert same.status_code == 200 and same.json()["id"] == env.protocol_id
    changed = {**api_protocol_body, "config": {**api_protocol_body["config"], "seeds": [0, 1]}}
    second = env.client.post("/v1/admin/protocols", json=changed, headers=admin)
    assert second.status_code == 201 and second.json()["version"] == 2
    bad = {**api_protocol_body, "config": {"scenarios": ["nope"]}}
    assert (
        "body.config"
        in _problem(env.client.post("/v1/admin/protocols", json=bad, headers=admin), 422)["detail"]
    )
    with_anonymizer = {**api_protocol_body, "config": {"anonymizer": {"name": "pitch"}}}
    assert (
        "anonymizer"
        in _problem(
            env.client.post("/v1/admin/protocols", json=with_anonymizer, headers=admin), 422
        )["detail"]
    )
    listed = env.client.get("/v1/protocols?name=synthetic-small", headers=env.a).json()
    assert [p["version"] for p in listed] == [1, 2]
    got = env.client.get(f"/v1/protocols/{env.protocol_id}", headers=env.a).json()
    assert got["leaderboard"]["metric"] == "eer_percent"


def test_idempotency_key(env: Env, api_dispatcher: Any) -> None:
    sub = env.submission()
    key = {"Idempotency-Key": "ci-run-42"}
    first = env.job(sub, headers={**env.a, **key}, config_overrides={"seeds": [3]})
    assert first.status_code == 201, first.text
    again = env.job(sub, headers={**env.a, **key}, config_overrides={"seeds": [3]})
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["idempotency_key"] == "ci-run-42"
    assert api_dispatcher.enqueued == [first.json()["id"]]  # queued once
    conflict = env.job(sub, headers={**env.a, **key}, config_overrides={"seeds": [4]})
    body = _problem(conflict, 409)
    assert "ci-run-42" in body["detail"] and body["type"].endswith("idempotency-key-reused")
    # Keys are per team: team b's same key is a different job.
    sub_b = env.submission(env.b)
    other = env.job(sub_b, headers={**env.b, **key})
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]
    _problem(env.job(sub, headers={**env.a, "Idempotency-Key": "x" * 256}), 422)


def test_pagination_and_filters(
    make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]
) -> None:
    env = Env(make_api_client(quota_concurrent_jobs=100), api_world, api_protocol_body)
    sub1, sub2 = env.submission(name="one"), env.submission(name="two")
    client = env.client
    ids = []
    for index in range(7):
        response = env.job(sub1 if index % 2 == 0 else sub2)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
        if index % 2 == 1:
            assert client.post(f"/v1/jobs/{ids[-1]}/cancel", headers=env.a).status_code == 200
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        url = "/v1/jobs?limit=3" + (f"&cursor={cursor}" if cursor else "")
        response = client.get(url, headers=env.a)
        assert response.status_code == 200
        page = response.json()
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            assert "Link" not in response.headers
            break
        assert (
            response.headers["Link"].endswith('rel="next"')
            and f"cursor={cursor}" in (response.headers["Link"])
        )
        # A job created while paging does not shift the next pages (keyset, not offset).
        if pages == 1:
            assert client.post(f"/v1/jobs/{ids[0]}/rerun", headers=env.a).status_code == 201
    assert seen == sorted(ids, reverse=True) and pages == 3
    only_two = client.get(f"/v1/jobs?submission_id={sub2}", headers=env.a).json()["items"]
    assert {j["submission_id"] for j in only_two} == {sub2} and len(only_two) == 3
    cancelled = client.get("/v1/jobs?state=cancelled", headers=env.a).json()["items"]
    assert {j["state"] for j in cancelled} == {"cancelled"} and len(cancelled) == 3
    by_protocol = client.get(f"/v1/jobs?protocol_id={env.protocol_id}&limit=500", headers=env.a)
    assert len(by_protocol.json()["items"]) == 8
    assert client.get("/v1/jobs?protocol_id=999", headers=env.a).json()["items"] == []
    _problem(client.get("/v1/jobs?state=paused", headers=env.a), 422)


def test_cancel_and_rerun(env: Env, api_dispatcher: Any, pg_database: Any) -> None:
    sub = env.submission()
    job = env.job(sub, config_overrides={"seeds": [7]}).json()
    with pg_database.session_scope() as session:
        stage = job_records.get_stage(session, job["id"], "corpus")
        job_records.transition_job(session, job["id"], "running")
        job_records.transition_stage(session, stage.id, "running", worker_host="gpu-1")
        job_records.heartbeat_stage(session, stage.id, progress=0.5, log="x" * 3000 + "tail-marker")
    got = env.client.get(f"/v1/jobs/{job['id']}?log_chars=20", headers=env.a).json()
    corpus = got["stages"][0]
    assert corpus["state"] == "running" and corpus["progress"] == 0.5
    assert corpus["log_tail"].endswith("tail-marker") and len(corpus["log_tail"]) == 20
    assert got["progress"] == pytest.approx(0.5 / len(got["stages"]))

    cancelled = env.client.post(f"/v1/jobs/{job['id']}/cancel", headers=env.a)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["state"] == "cancelled"
    assert {s["state"] for s in cancelled.json()["stages"]} == {"cancelled"}
    assert api_dispatcher.cancelled == [job["id"]]
    again = _problem(env.client.post(f"/v1/jobs/{job['id']}/cancel", headers=env.a), 409)
    assert "already cancelled" in again["detail"]

    rerun = env.client.post(f"/v1/jobs/{job['id']}/rerun", headers=env.a)
    assert rerun.status_code == 201, rerun.text
    new = rerun.json()
    assert new["id"] != job["id"] and new["state"] == "queued"
    assert new["config"] == job["config"] and new["config_hash"] == job["config_hash"]
    assert (new["submission_id"], new["protocol_id"]) == (sub, env.protocol_id)
    assert api_dispatcher.enqueued[-1] == new["id"]
    # Read-only tokens cannot cancel or re-run.
    reader = env.world.auth(env.world.a_read)
    _problem(env.client.post(f"/v1/jobs/{new['id']}/cancel", headers=reader), 403)


def test_cancel_every_job_of_a_submission(env: Env, api_dispatcher: Any, pg_database: Any) -> None:
    sub, other = env.submission(name="a"), env.submission(name="b")
    queued = env.job(sub, config_overrides={"seeds": [1]}).json()["id"]
    running = env.job(sub, config_overrides={"seeds": [2]}).json()["id"]
    finished = env.job(sub, config_overrides={"seeds": [3]}).json()["id"]
    untouched = env.job(other).json()["id"]
    with pg_database.session_scope() as session:
        job_records.transition_job(session, running, "running")
        job_records.transition_job(session, finished, "running")
        job_records.transition_job(session, finished, "succeeded")
    # Another team's submission (private): not found; a read-only token: forbidden.
    _problem(env.client.post(f"/v1/submissions/{sub}/cancel-jobs", headers=env.b), 404)
    reader = env.world.auth(env.world.a_read)
    _problem(env.client.post(f"/v1/submissions/{sub}/cancel-jobs", headers=reader), 403)
    assert api_dispatcher.cancelled == []

    response = env.client.post(f"/v1/submissions/{sub}/cancel-jobs", headers=env.a)
    assert response.status_code == 200, response.text
    assert response.json() == {"submission_id": sub, "cancelled_job_ids": [queued, running]}
    # Each cancelled job's tasks are revoked after the commit (one outbox message per job).
    assert sorted(api_dispatcher.cancelled) == [queued, running]
    states = {
        job_id: env.client.get(f"/v1/jobs/{job_id}", headers=env.a).json()
        for job_id in (queued, running, finished, untouched)
    }
    assert states[queued]["state"] == states[running]["state"] == "cancelled"
    assert {s["state"] for s in states[running]["stages"]} == {"cancelled"}
    assert states[queued]["error_message"] == "cancelled by team-a"
    assert states[finished]["state"] == "succeeded" and states[untouched]["state"] == "queued"
    # Nothing left to cancel: an empty list, not an error.
    again = env.client.post(f"/v1/submissions/{sub}/cancel-jobs", headers=env.a)
    assert again.status_code == 200 and again.json()["cancelled_job_ids"] == []
    _problem(env.client.post("/v1/submissions/99999/cancel-jobs", headers=env.a), 404)


def test_enqueue_failure_marks_the_job_failed(env: Env, api_dispatcher: Any) -> None:
    sub = env.submission()
    api_dispatcher.fail_enqueue = True
    body = _problem(env.job(sub), 503)
    assert "marked failed" in body["detail"]
    job = env.client.get(f"/v1/jobs/{body['job_id']}", headers=env.a).json()
    assert job["state"] == "failed" and "ConnectionError" in job["error_message"]


def test_job_quotas_do_not_charge_failed_or_cancelled(
    make_api_client: Any, api_world: Any, api_protocol_body: Any, pg_database: Any
) -> None:
    env = Env(
        make_api_client(quota_concurrent_jobs=2, quota_jobs_per_day=3),
        api_world,
        api_protocol_body,
    )
    sub = env.submission()
    first = env.job(sub).json()["id"]
    second = env.job(sub, headers={**env.a, "Idempotency-Key": "k2"}).json()["id"]
    response = env.job(sub)
    body = _problem(response, 429)
    assert "concurrent jobs" in body["detail"] and body["used"] == 2 and body["limit"] == 2
    assert response.headers["Retry-After"] == "30"
    # Idempotent replays are answered even at the limit.
    replay = env.job(sub, headers={**env.a, "Idempotency-Key": "k2"})
    assert replay.status_code == 200 and replay.json()["id"] == second
    # Cancelled: not charged -> one slot frees up.
    assert env.client.post(f"/v1/jobs/{first}/cancel", headers=env.a).status_code == 200
    third = env.job(sub, headers={**env.a, "Idempotency-Key": "k3"})
    assert third.status_code == 201
    replay = env.job(sub, headers={**env.a, "Idempotency-Key": "k3"})
    assert replay.status_code == 200
    # Finished successfully: no longer concurrent, but counts per day (second, third = 2 of 3).
    with pg_database.session_scope() as session:
        for job_id in (second, third.json()["id"]):
            job_records.transition_job(session, job_id, "running")
            job_records.transition_job(session, job_id, "succeeded")
    fourth = env.job(sub)
    assert fourth.status_code == 201
    body = _problem(env.job(sub), 429)
    assert "jobs per day" in body["detail"] and body["used"] == 3
    # Failed: not charged.
    with pg_database.session_scope() as session:
        job_records.transition_job(session, fourth.json()["id"], "failed", error_message="oom")
    assert env.job(sub).status_code == 201
    quotas = env.client.get("/v1/me", headers=env.a).json()["quotas"]
    assert quotas["jobs_per_day"] == {"limit": 3, "used": 3, "window": "rolling 24 h"}
    assert quotas["concurrent_jobs"]["used"] == 1


def test_results_artifacts_and_leaderboard(env: Env, pg_database: Any) -> None:
    # Four public submissions of two teams, one private of team b; EER: higher = better.
    subs = {
        "a-best": env.submission(visibility="public", name="a-best"),
        "b-tie-early": env.submission(env.b, visibility="public", name="b-tie-early"),
        "a-tie-late": env.submission(visibility="public", name="a-tie-late"),
        "a-missing": env.submission(visibility="public", name="a-missing"),
        "b-private": env.submission(env.b, visibility="private", name="b-private"),
    }
    values = {"a-best": 45.0, "b-tie-early": 30.0, "a-tie-late": 30.0, "a-missing": None}
    values["b-private"] = 50.0
    jobs = {}
    for name, sub in subs.items():
        headers = env.b if name.startswith("b-") else env.a
        jobs[name] = env.job(sub, headers=headers).json()["id"]
    with pg_database.session_scope() as session:
        for name, job_id in jobs.items():
            job_records.transition_job(session, job_id, "running")
            rows = [results.ResultRow("semi-informed", "cosine", 0, "min_cllr_bits", 0.9)]
            if values[name] is not None:
                rows += [
                    results.ResultRow(
                        "semi-informed", "cosine", 0, "eer_percent", values[name] - 1
                    ),
                    results.ResultRow(
                        "semi-informed", "cosine", 1, "eer_percent", values[name] + 1
                    ),
                ]
            results.record_results_and_artifacts(
                session,
                job_id,
                results=rows,
                artifacts=[
                    results.ArtifactRecord(
                        f"jobs/{job_id}/report.json", 2, "a" * 64, "application/json"
                    )
                ],
                stage_id=job_records.get_stage(session, job_id, "report").id,
            )
            job_records.transition_job(session, job_id, "succeeded")

    answer = env.client.get(f"/v1/jobs/{jobs['a-best']}/results", headers=env.a).json()
    assert answer["state"] == "succeeded"
    eer = [r for r in answer["results"] if r["metric"] == "eer_percent"]
    assert [(r["seed"], r["value"]) for r in eer] == [(0, 44.0), (1, 46.0)]

    artifacts = env.client.get(f"/v1/jobs/{jobs['a-best']}/artifacts", headers=env.a).json()
    [artifact] = artifacts["artifacts"]
    assert artifact["stage"] == "report" and artifact["key"].endswith("report.json")
    assert artifact["url"].startswith("http://testserver/v1/blobs/jobs/")
    download = env.client.get(
        f"/v1/jobs/{jobs['a-best']}/artifacts/{artifact['id']}/download",
        headers=env.a,
        follow_redirects=False,
    )
    assert download.status_code == 307 and "signature=" in download.headers["location"]

    board = env.client.get(f"/v1/protocols/{env.protocol_id}/leaderboard", headers=env.a).json()
    assert (board["metric"], board["scenario"], board["backend"]) == (
        "eer_percent",
        "semi-informed",
        "cosine",
    )
    assert board["higher_is_better"] is True and len(board["rules"]) >= 4
    # Team a does not see b's private submission; ties go to the earlier submission; missing last.
    assert [e["submission_name"] for e in board["entries"]] == [
        "a-best",
        "b-tie-early",
        "a-tie-late",
        "a-missing",
    ]
    assert [e["rank"] for e in board["entries"]] == [1, 2, 3, 4]
    assert board["entries"][0]["value"] == pytest.approx(45.0)
    assert board["entries"][3]["value"] is None
    assert board["entries"][0]["metrics"]["min_cllr_bits"] == pytest.approx(0.9)
    board_b = env.client.get(f"/v1/protocols/{env.protocol_id}/leaderboard", headers=env.b).json()
    assert board_b["entries"][0]["submission_name"] == "b-private"
    lower = env.client.get(
        f"/v1/protocols/{env.protocol_id}/leaderboard?higher_is_better=false", headers=env.a
    ).json()
    assert [e["submission_name"] for e in lower["entries"]] == [
        "b-tie-early",
        "a-tie-late",
        "a-best",
        "a-missing",
    ]
    _problem(env.client.get("/v1/protocols/999/leaderboard", headers=env.a), 404)
