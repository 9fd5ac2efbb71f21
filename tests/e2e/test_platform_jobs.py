"""End to end over HTTP with real worker processes: submit, run, results, leaderboard, cancel,
another team's token, idempotency, and a worker killed mid-training.

The tests of this module share one platform (tests/e2e/conftest.py) and run in file order: the
first job fills the stage store that later jobs partly reuse.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from services.pipeline.phases import PHASES
from services.platform import results as result_records
from services.platform.jobs import records as job_records
from services.storage.models import StageClaim
from support.configs import tiny_protocol_config
from support.s3 import moto_s3_client

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# With utility (a 2-epoch ASR: the phase's plumbing, not its numbers, is under test here).
TINY_PROTOCOL: dict[str, Any] = tiny_protocol_config(
    utility={"asr": {"epochs": 2}, "bootstrap_resamples": 10}
)
JOB_TIMEOUT_S = 900.0


def _ok(response: httpx.Response, *codes: int) -> dict[str, Any]:
    assert response.status_code in codes, f"{response.status_code}: {response.text[:800]}"
    body: dict[str, Any] = response.json()
    return body


def _wait(
    platform: Any,
    client: httpx.Client,
    job_id: int,
    done: Callable[[dict[str, Any]], bool],
    timeout_s: float = JOB_TIMEOUT_S,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = _ok(client.get(f"/v1/jobs/{job_id}"), 200)
        if done(job):
            return job
        time.sleep(0.5)
    logs = "\n".join(platform.log_tail(name) for name in platform.workers)
    raise AssertionError(f"job {job_id} stuck: {job['state']} {job['stages']}\n{logs}")


def _finished(job: dict[str, Any]) -> bool:
    return job["state"] in ("succeeded", "failed", "cancelled")


@pytest.fixture(scope="module")
def world(e2e_platform: Any) -> dict[str, Any]:
    """Two teams with tokens, the tiny protocol, and team A's built-in submission (over HTTP)."""
    admin = e2e_platform.client(e2e_platform.admin_token)
    tokens = {}
    for slug in ("team-a", "team-b"):
        _ok(admin.post("/v1/admin/teams", json={"slug": slug}), 201)
        issued = admin.post("/v1/admin/tokens", json={"team": slug, "scopes": ["submit", "read"]})
        tokens[slug] = _ok(issued, 201)["token"]
    protocol = _ok(
        admin.post("/v1/admin/protocols", json={"name": "tiny-e2e", "config": TINY_PROTOCOL}),
        201,
    )
    a = e2e_platform.client(tokens["team-a"])
    submission = _ok(
        a.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": "pitch e2e",
                "visibility": "private",  # only team A (and admins) may see it and its jobs
                "builtin": {"name": "pitch", "params": {}},
            },
        ),
        201,
    )
    return {
        "a": a,
        "b": e2e_platform.client(tokens["team-b"]),
        "protocol": protocol,
        "submission": submission,
    }


def _submit(world: dict[str, Any], key: str, overrides: dict[str, Any] | None = None) -> Any:
    body = {"submission_id": world["submission"]["id"], "protocol_id": world["protocol"]["id"]}
    if overrides:
        body["config_overrides"] = overrides
    return world["a"].post("/v1/jobs", json=body, headers={"Idempotency-Key": key})


def _db_results(platform: Any, job_id: int) -> list[tuple[str, str, int, str]]:
    with platform.database.session_scope() as session:
        return [
            (r.scenario, r.backend, r.seed, r.metric)
            for r in result_records.list_results(session, job_id)
        ]


def test_builtin_submission_runs_to_the_leaderboard(
    e2e_platform: Any, world: dict[str, Any]
) -> None:
    a = world["a"]
    created = _submit(world, "e2e-first")
    job = _ok(created, 201)
    # Same key, same request: the same job, marked as a replay; another body: 409.
    replay = _submit(world, "e2e-first")
    assert _ok(replay, 200)["id"] == job["id"]
    assert replay.headers.get("Idempotent-Replayed") == "true"
    assert _submit(world, "e2e-first", {"seeds": [3]}).status_code == 409

    job = _wait(e2e_platform, a, job["id"], _finished)
    assert job["state"] == "succeeded", job
    assert {s["state"] for s in job["stages"]} == {"succeeded"}
    assert [s["name"] for s in job["stages"]] == list(PHASES)
    assert all("worker1@" in s["worker_host"] for s in job["stages"])

    results = _ok(a.get(f"/v1/jobs/{job['id']}/results"), 200)["results"]
    rows = _db_results(e2e_platform, job["id"])
    assert len(rows) == len(results) == len(set(rows)) > 0
    eer = {(r["scenario"], r["seed"]): r["value"] for r in results if r["metric"] == "eer_percent"}
    assert set(eer) >= {("original", 0), ("semi-informed", 0), ("semi-informed", -1)}
    # The utility phase ran (its own task, on the gpu queue) and its values are result rows.
    utility = {r["metric"]: r["value"] for r in results if r["scenario"] == "utility"}
    assert {"wer_increase_percent", "pitch_correlation", "usable_speech"} <= set(utility)
    assert utility["usable_speech"] in (0.0, 1.0)
    # Its ASR was trained once, by the protocol's registration (queued before the job, on the
    # same worker): the job's utility phase downloaded it instead of training.
    assert world["protocol"]["asr"]["state"] == "queued"
    protocol = _ok(a.get(f"/v1/protocols/{world['protocol']['id']}"), 200)
    assert protocol["asr"]["state"] == "ready", protocol["asr"]
    with e2e_platform.database.session_scope() as session:
        asr_claims = session.scalars(
            select(StageClaim.computations).where(StageClaim.stage == "utility-asr")
        ).all()
        utility_log = job_records.get_stage(session, job["id"], "utility").log_tail or ""
    assert list(asr_claims) == [1]
    assert "ASR training" not in utility_log

    # Artifacts: rows in PostgreSQL, objects in S3 with the recorded sha256 and size.
    artifacts = _ok(a.get(f"/v1/jobs/{job['id']}/artifacts"), 200)
    items = artifacts["artifacts"]
    s3 = moto_s3_client(e2e_platform.s3_endpoint)
    keys = set()
    for item in items:
        head = s3.head_object(Bucket="unmask-e2e", Key=item["key"])
        assert head["ContentLength"] == item["size_bytes"]
        assert head["Metadata"]["sha256"] == item["sha256"]
        keys.add(item["key"])
    assert f"jobs/{job['id']}/results.json" in keys
    assert any(k.endswith(".png") for k in keys)

    board = _ok(a.get(f"/v1/protocols/{world['protocol']['id']}/leaderboard"), 200)
    assert board["scenario"] == "semi-informed" and board["metric"] == "eer_percent"
    top = board["entries"][0]
    assert top["submission_id"] == world["submission"]["id"] and top["job_id"] == job["id"]
    assert top["value"] == pytest.approx(eer[("semi-informed", -1)])
    world["first_job"] = job["id"]


def test_another_team_cannot_see_or_cancel_the_job(world: dict[str, Any]) -> None:
    job_id = world["first_job"]
    board = _ok(world["b"].get(f"/v1/protocols/{world['protocol']['id']}/leaderboard"), 200)
    assert all(e["job_id"] != job_id for e in board["entries"])
    assert world["b"].get(f"/v1/jobs/{job_id}").status_code == 404
    assert world["b"].get(f"/v1/jobs/{job_id}/results").status_code == 404
    assert world["b"].post(f"/v1/jobs/{job_id}/cancel").status_code == 404
    assert world["a"].get(f"/v1/jobs/{job_id}").status_code == 200


def test_cancel_stops_the_job_and_no_stage_runs_after(
    e2e_platform: Any, world: dict[str, Any]
) -> None:
    a = world["a"]
    job = _ok(_submit(world, "e2e-cancel", {"seeds": [11], "training": {"epochs": 20}}), 201)
    _wait(e2e_platform, a, job["id"], lambda j: any(s["state"] == "running" for s in j["stages"]))
    _ok(a.post(f"/v1/jobs/{job['id']}/cancel"), 200, 202)
    time.sleep(3)  # time for the worker to notice (heartbeat 1 s) and stop
    job = _ok(a.get(f"/v1/jobs/{job['id']}"), 200)
    assert job["state"] == "cancelled"
    assert all(s["state"] in ("succeeded", "cancelled") for s in job["stages"]), job["stages"]
    assert _db_results(e2e_platform, job["id"]) == []
    # The worker is free again: it picks up new work (the next test depends on that too).
    assert e2e_platform.workers["worker1"].poll() is None


def test_worker_killed_mid_training_is_replaced_and_the_job_finishes_once(
    e2e_platform: Any, world: dict[str, Any]
) -> None:
    a = world["a"]
    # Long enough to be caught mid-training on an idle machine too (2 epochs of the tiny model
    # take about 1 s there, which the 0.5 s status polls can miss entirely).
    overrides = {"seeds": [5], "training": {"epochs": 20}}
    job = _ok(_submit(world, "e2e-kill", overrides), 201)

    def training_or_finished(j: dict[str, Any]) -> bool:
        train = next(s for s in j["stages"] if s["name"] == "train")
        return _finished(j) or (train["state"] == "running" and train["progress"] > 0)

    seen = _wait(e2e_platform, a, job["id"], training_or_finished)
    assert not _finished(seen), "the job finished before its training could be interrupted"
    killed = e2e_platform.workers.pop("worker1")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    # A fresh host (empty stage cache) takes over once the reaper (beat, every 2 s) finds the
    # stage silent for 8 s; it downloads the finished stages from S3 and retrains.
    e2e_platform.start_worker("worker2")
    job = _wait(e2e_platform, a, job["id"], _finished)
    assert job["state"] == "succeeded", job
    train = next(s for s in job["stages"] if s["name"] == "train")
    assert train["attempts"] == 2 and train["worker_host"] and "worker2" in train["worker_host"]
    rows = _db_results(e2e_platform, job["id"])
    assert len(rows) == len(set(rows)) == len(_db_results(e2e_platform, world["first_job"]))
