"""End to end with real worker processes: a hidden phase's result stays invisible (leaderboard
JSON, page, CSV, webhook event) until its reveal time, moved by the test, then appears; a job
after the phase's end gets 409; after a scorer version bump (a new deployment of API and worker
whose ``score`` stage is at version 2), "re-run outdated" re-runs only the score stage onward,
charges no quota, and the page marks the old row until the re-run lands.

Runs on the session's platform (tests/e2e/conftest.py); the bumped deployment replaces its API
and worker for the last test and the original ones are started again afterwards.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from services.storage.models import Stage, WebhookDelivery, WebhookEndpoint
from support.configs import tiny_protocol_config
from support.s3 import moto_s3_client
from support.workers import stop_process

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

JOB_TIMEOUT_S = 900.0
HOUR = dt.timedelta(hours=1)
NAME = "hidden pitch"


def _ok(response: httpx.Response, *codes: int) -> Any:
    assert response.status_code in codes, f"{response.status_code}: {response.text[:800]}"
    return response.json() if response.content else None


def _wait_job(platform: Any, client: httpx.Client, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job: dict[str, Any] = _ok(client.get(f"/v1/jobs/{job_id}"), 200)
        if job["state"] in ("succeeded", "failed", "cancelled"):
            assert job["state"] == "succeeded", job
            return job
        time.sleep(0.5)
    logs = "\n".join(platform.log_tail(name) for name in platform.workers)
    raise AssertionError(f"job {job_id} stuck\n{logs}")


@pytest.fixture(scope="module")
def challenge(e2e_platform: Any) -> dict[str, Any]:
    """Two teams, a protocol with a hidden phase open now, team A's public submission."""
    admin = e2e_platform.client(e2e_platform.admin_token)
    tokens = {}
    for slug in ("org-a", "org-b"):
        _ok(admin.post("/v1/admin/teams", json={"slug": slug}), 201)
        issued = admin.post("/v1/admin/tokens", json={"team": slug, "scopes": ["submit", "read"]})
        tokens[slug] = _ok(issued, 201)["token"]
    protocol = _ok(
        admin.post(
            "/v1/admin/protocols",
            json={"name": "tiny-challenge", "config": tiny_protocol_config()},
        ),
        201,
    )
    now = dt.datetime.now(dt.UTC)
    phase = {
        "name": "evaluation",
        "starts_at": (now - HOUR).isoformat(),
        "ends_at": (now + 2 * HOUR).isoformat(),
        "visibility": "hidden",
        "reveal_at": (now + HOUR).isoformat(),
        "submission_limit": 3,
    }
    _ok(admin.post(f"/v1/protocols/{protocol['id']}/phases", json=phase), 201)
    a = e2e_platform.client(tokens["org-a"])
    submission = _ok(
        a.post(
            "/v1/submissions",
            json={
                "kind": "builtin",
                "name": NAME,
                "visibility": "public",
                "builtin": {"name": "pitch", "params": {}},
            },
        ),
        201,
    )
    anonymous = httpx.Client(base_url=e2e_platform.api_url, timeout=60)
    return {
        "admin": admin,
        "a": a,
        "b": e2e_platform.client(tokens["org-b"]),
        "anonymous": anonymous,
        "protocol": protocol,
        "submission": submission,
    }


def _names(client: httpx.Client, protocol_id: int) -> set[str]:
    board = _ok(client.get(f"/v1/protocols/{protocol_id}/leaderboard"), 200)
    return {e["submission_name"] for e in board["entries"]}


def _page(world: dict[str, Any]) -> str:
    response = world["anonymous"].get(f"/protocols/{world['protocol']['id']}")
    assert response.status_code == 200, response.text
    return response.text


def _csv(world: dict[str, Any]) -> str:
    response = world["anonymous"].get(f"/protocols/{world['protocol']['id']}/leaderboard.csv")
    assert response.status_code == 200, response.text
    return response.text


def _deliveries(platform: Any, job_id: int) -> list[str]:
    with platform.database.session_scope() as session:
        return list(
            session.scalars(
                select(WebhookDelivery.event_type).where(WebhookDelivery.job_id == job_id)
            )
        )


def test_hidden_phase_result_appears_at_the_reveal_and_the_phase_closes(
    e2e_platform: Any, challenge: dict[str, Any]
) -> None:
    world = challenge
    protocol_id = world["protocol"]["id"]
    me = _ok(world["a"].get("/v1/me"), 200)
    with e2e_platform.database.session_scope() as session:
        session.add(
            WebhookEndpoint(
                team_id=me["team_id"],
                url="https://hooks.invalid/unmask",
                secret="whsec_e2e",
                event_types=["job.succeeded"],
            )
        )
    body = {"submission_id": world["submission"]["id"], "protocol_id": protocol_id}
    job = _ok(world["a"].post("/v1/jobs", json=body), 201)
    assert job["phase_id"] is not None and job["evaluator"]["scorer"]
    job = _wait_job(e2e_platform, world["a"], job["id"])
    world["job"] = job
    # Hidden: not on the JSON of another team, the public page, the CSV; no webhook event yet.
    time.sleep(5)  # several relay and reaper passes
    assert NAME not in _names(world["b"], protocol_id)
    assert NAME not in _page(world) and NAME not in _csv(world)
    assert world["b"].get(f"/v1/jobs/{job['id']}/results").status_code == 404
    assert _deliveries(e2e_platform, job["id"]) == []
    # Its team sees it.
    assert NAME in _names(world["a"], protocol_id)
    # The reveal, moved to now by the organizer: every view shows it without a restart, and the
    # held-back event is recorded by the next relay/reaper pass.
    now = dt.datetime.now(dt.UTC)
    patch = {"reveal_at": now.isoformat()}
    _ok(world["admin"].patch(f"/v1/protocols/{protocol_id}/phases/evaluation", json=patch), 200)
    assert NAME in _names(world["b"], protocol_id)
    assert NAME in _page(world) and NAME in _csv(world)
    deadline = time.monotonic() + 60
    while not _deliveries(e2e_platform, job["id"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _deliveries(e2e_platform, job["id"]) == ["job.succeeded"]
    # The phase ends: a later job is refused with 409 naming the phase.
    patch = {"ends_at": (now - dt.timedelta(minutes=1)).isoformat()}
    _ok(world["admin"].patch(f"/v1/protocols/{protocol_id}/phases/evaluation", json=patch), 200)
    refused = world["a"].post("/v1/jobs", json=body)
    assert refused.status_code == 409, refused.text
    assert "phase 'evaluation' ended at" in refused.json()["detail"]


def _bumped_environment(root: Path) -> str:
    """A folder whose ``sitecustomize`` sets the ``score`` stage to version 2 at start-up (the
    code of a new release, without changing the checkout under the other tests)."""
    folder = root / "bumped-release"
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "from services.pipeline import stage_versions\nstage_versions.STAGE_VERSIONS['score'] = 2\n"
    )
    return str(folder)


def _api_command(platform: Any) -> list[str]:
    port = platform.api_url.rsplit(":", 1)[1]
    return [sys.executable, "-m", "uvicorn", "api.app:app", "--host", "127.0.0.1", "--port", port]


def _wait_live(platform: Any) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{platform.api_url}/v1/health/live", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"API did not start:\n{platform.log_tail('api-bumped')}")


@pytest.fixture()
def bumped_release(e2e_platform: Any) -> Iterator[None]:
    """The session's API and worker replaced by a release whose score stage is at version 2;
    the originals are started again afterwards."""
    platform = e2e_platform
    api = platform.processes[0]
    stop_process(api)
    stopped = list(platform.workers)  # whichever the session's earlier tests left running
    for name in stopped:
        stop_process(platform.workers[name])
    repo = str(Path(__file__).resolve().parents[2])
    saved = dict(platform.env)
    platform.env["PYTHONPATH"] = f"{_bumped_environment(platform.root)}:{repo}"
    try:
        bumped_api = platform.spawn("api-bumped", _api_command(platform))
        platform.start_worker("worker-bumped")
        _wait_live(platform)
        yield
    finally:
        platform.env.clear()
        platform.env.update(saved)
        stop_process(bumped_api)
        stop_process(platform.workers.pop("worker-bumped"))
        platform.processes[0] = platform.spawn("api", _api_command(platform))
        for name in stopped:
            platform.start_worker(name)
        _wait_live(platform)


def _phase_stages(platform: Any, job_id: int) -> dict[str, dict[str, str]]:
    with platform.database.session_scope() as session:
        return {
            s.name: dict(s.artifact_keys or {})
            for s in session.scalars(select(Stage).where(Stage.job_id == job_id))
        }


def test_rerun_outdated_after_a_scorer_bump_reuses_unchanged_stages(
    e2e_platform: Any, challenge: dict[str, Any], bumped_release: None
) -> None:
    world = challenge
    protocol_id = world["protocol"]["id"]
    old = world["job"]
    used_before = _ok(world["a"].get("/v1/me"), 200)["quotas"]["jobs_per_day"]["used"]
    # The new release marks the old row.
    assert "older scorer" in _page(world)
    plan = _ok(world["admin"].post(f"/v1/protocols/{protocol_id}/rerun-outdated"), 200)
    assert list(plan["queued"]) == [str(old["id"])]
    rerun_id = plan["queued"][str(old["id"])]
    # Until the re-run lands, the old row stays (marked).
    board = _ok(world["b"].get(f"/v1/protocols/{protocol_id}/leaderboard"), 200)
    assert [e["job_id"] for e in board["entries"]] == [old["id"]]
    rerun = _wait_job(e2e_platform, world["a"], rerun_id)
    assert rerun["charged"] is False and rerun["rerun_of_job_id"] == old["id"]
    assert rerun["evaluator"]["stage_versions"]["score"] == 2
    assert old["evaluator"]["stage_versions"]["score"] == 1
    # Not charged (and the phase had ended: administrators' re-runs pass it).
    used_after = _ok(world["a"].get("/v1/me"), 200)["quotas"]["jobs_per_day"]["used"]
    assert used_after == used_before
    # Only the score stage changed: the earlier phases point at the same stage folders, and
    # each of those was uploaded once (reused, not recomputed).
    before, after = _phase_stages(e2e_platform, old["id"]), _phase_stages(e2e_platform, rerun_id)
    for phase in ("corpus", "anonymize", "train", "embed"):
        assert after[phase] == before[phase], phase
    assert after["score"] != before["score"]
    s3 = moto_s3_client(e2e_platform.s3_endpoint)
    for key in before["train"].values():
        prefix = key.rsplit("/", 1)[0] + "/attempts/"
        listed = s3.list_objects_v2(Bucket="unmask-e2e", Prefix=prefix, Delimiter="/")
        assert len(listed.get("CommonPrefixes", [])) == 1, (key, listed)
    # The re-run scored again and kept its trials (what the compare page pairs jobs on), one
    # artifact per result row.
    artifacts = _ok(world["a"].get(f"/v1/jobs/{rerun_id}/artifacts"), 200)["artifacts"]
    kept = [a["key"] for a in artifacts if a["key"].startswith(f"jobs/{rerun_id}/trials/")]
    results = _ok(world["a"].get(f"/v1/jobs/{rerun_id}/results"), 200)["results"]
    scored = {
        (r["scenario"], r["backend"], r["seed"])
        for r in results
        if r["metric"] == "eer_percent" and r["seed"] >= 0
    }
    assert kept and all(k.endswith(".npz") and "/baseline/" in k for k in kept)
    assert len(kept) == len(scored)
    # The new row stands, no longer marked.
    board = _ok(world["b"].get(f"/v1/protocols/{protocol_id}/leaderboard"), 200)
    assert [e["job_id"] for e in board["entries"]] == [rerun_id]
    assert "older scorer" not in _page(world)
