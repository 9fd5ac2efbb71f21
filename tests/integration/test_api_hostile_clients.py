"""What a hostile client tries: ids beyond the database column, counts and messages that would
disclose a hidden phase's result, a forged ``Host`` header in absolute links, concurrent
administrator operations, booleans spelled as numbers.
Real PostgreSQL; workers replaced by a recording dispatcher, jobs finished in the database."""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import select

from services.platform import results
from services.platform.jobs import records as job_records
from services.storage.db import Database
from services.storage.models import ApiToken, Job

pytestmark = pytest.mark.integration

HOUR = dt.timedelta(hours=1)
TOO_BIG = 2**31  # one past PostgreSQL's INTEGER


class Env:
    def __init__(self, client: Any, world: Any, protocol_body: dict[str, Any]) -> None:
        self.client = client
        self.a = world.auth(world.a)
        self.b = world.auth(world.b)
        self.admin = world.auth(world.admin)
        self.protocol_body = protocol_body
        self.protocol_id = self.protocol("first")

    def protocol(self, name: str) -> int:
        body = {**self.protocol_body, "name": name}
        response = self.client.post("/v1/admin/protocols", json=body, headers=self.admin)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def hidden_phase(self, protocol_id: int) -> None:
        now = dt.datetime.now(dt.UTC)
        body = {
            "name": "evaluation",
            "starts_at": (now - HOUR).isoformat(),
            "visibility": "hidden",
            "reveal_at": (now + HOUR).isoformat(),
        }
        response = self.client.post(
            f"/v1/protocols/{protocol_id}/phases", json=body, headers=self.admin
        )
        assert response.status_code == 201, response.text

    def submission(self, headers: dict[str, str], name: str) -> int:
        body = {
            "kind": "builtin",
            "name": name,
            "visibility": "public",
            "builtin": {"name": "pitch", "params": {"semitones": 2}},
        }
        response = self.client.post("/v1/submissions", json=body, headers=headers)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def job(self, submission_id: int, protocol_id: int, headers: dict[str, str]) -> int:
        body = {"submission_id": submission_id, "protocol_id": protocol_id}
        response = self.client.post("/v1/jobs", json=body, headers=headers)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])


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


@pytest.fixture()
def env(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Env:
    return Env(make_api_client(), api_world, api_protocol_body)


@pytest.mark.parametrize(
    "path",
    [
        "/v1/protocols/{p}/compare",
        "/protocols/{p}/compare",
        "/protocols/{p}/compare/det.png",
        "/protocols/{p}/compare/per_speaker.png",
    ],
)
@pytest.mark.parametrize("side", ["a", "b"])
def test_an_id_beyond_the_column_is_a_422_on_every_compare_route(
    env: Env, path: str, side: str
) -> None:
    params = {"a": 1, "b": 1, "curve": "semi-informed|cosine", side: TOO_BIG}
    response = env.client.get(path.format(p=env.protocol_id), params=params, headers=env.a)
    assert response.status_code == 422, response.text
    assert str(2**31 - 1) in response.text  # the bound is named


def test_counts_and_messages_follow_the_rows_visibility_rule(
    env: Env, pg_database: Database
) -> None:
    hidden_protocol = env.protocol("challenge")
    env.hidden_phase(hidden_protocol)
    secret = env.submission(env.a, "secret-anonymizer")
    _succeed(pg_database, env.job(secret, hidden_protocol, env.a), 30.0)
    # The protocol list: the hidden result is not counted for anonymous visitors ...
    listing = env.client.get("/").text
    assert "1 ranked submission" not in listing and "0 ranked submissions" in listing
    other = env.submission(env.b, "other")
    _succeed(pg_database, env.job(other, env.protocol_id, env.b), 20.0)
    # ... and the compare message does not name the protocol it was evaluated under.
    url = f"/protocols/{env.protocol_id}/compare?a={secret}&b={other}"
    for response in (env.client.get(url), env.client.get(f"/v1{url}", headers=env.b)):
        assert response.status_code == 409, response.text
        assert "no succeeded job under protocol" in response.text
        assert f"evaluated under protocol {hidden_protocol}" not in response.text
    # Its own team sees both.
    own = env.client.get(f"/v1{url}", headers=env.a)
    assert f"evaluated under protocol {hidden_protocol}" in own.json()["detail"]


def test_absolute_links_come_from_the_public_url_never_the_host_header(
    make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any], pg_database: Database
) -> None:
    env = Env(
        make_api_client(public_url="https://unmask.example.org"), api_world, api_protocol_body
    )
    public = env.submission(env.a, "badge-me")
    _succeed(pg_database, env.job(public, env.protocol_id, env.a), 30.0)
    page = env.client.get(f"/submissions/{public}", headers={"Host": "attacker.example"})
    assert page.status_code == 200, page.text
    assert f"(https://unmask.example.org/submissions/{public})" in page.text
    assert "attacker.example" not in page.text


def test_a_server_database_without_public_url_or_trusted_hosts_refuses_to_start(
    make_api_client: Any,
) -> None:
    with pytest.raises(RuntimeError, match="UNMASK_PUBLIC_URL"):
        make_api_client(public_url="")
    # Either one is enough.
    assert (
        make_api_client(public_url="", trusted_hosts=["testserver"])
        .get("/v1/health/live")
        .is_success
    )


def test_concurrent_rerun_outdated_queues_each_rerun_once(
    env: Env, pg_database: Database, api_dispatcher: Any
) -> None:
    submissions = [env.submission(env.a, f"s{i}") for i in range(3)]
    for i, submission in enumerate(submissions):
        _succeed(pg_database, env.job(submission, env.protocol_id, env.a), 20.0 + i)
    url = f"/v1/protocols/{env.protocol_id}/rerun-outdated"
    barrier = threading.Barrier(5)

    def rerun(_: int) -> Any:
        barrier.wait()
        return env.client.post(url, json={"include_current": True}, headers=env.admin)

    with ThreadPoolExecutor(5) as pool:
        answers = list(pool.map(rerun, range(5)))
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    queued = [new for a in answers for new in a.json()["queued"].values()]
    assert len(queued) == len(set(queued)) == 3
    with pg_database.session_scope() as session:
        reruns = session.scalars(select(Job.id).where(Job.charged.is_(False))).all()
    assert sorted(reruns) == sorted(queued)


def test_booleans_are_strict(env: Env) -> None:
    url = f"/v1/protocols/{env.protocol_id}/rerun-outdated"
    for value in (0, 1, "true", "yes"):
        answer = env.client.post(url, json={"include_current": value}, headers=env.admin)
        assert answer.status_code == 422, answer.text
        assert answer.json()["errors"][0]["field"] == "body.include_current"


@pytest.mark.parametrize("crop", [2.5, 5e-324, 3600])
def test_every_cost_bound_accepted_is_read_back(env: Env, crop: float) -> None:
    body = {
        **env.protocol_body,
        "name": "bounded",
        "limits": {"crop_seconds": crop, "training_work": 0.5, "epochs": 3},
    }
    created = env.client.post("/v1/admin/protocols", json=body, headers=env.admin)
    assert created.status_code == 201, created.text
    assert created.json()["limits"] == {"crop_seconds": crop, "training_work": 0.5, "epochs": 3}
    read = env.client.get(f"/v1/protocols/{created.json()['id']}", headers=env.a)
    assert read.status_code == 200 and read.json()["limits"]["crop_seconds"] == crop


def test_a_container_image_longer_than_its_column_is_a_422(env: Env) -> None:
    image = "ghcr.io/lab/" + "a" * 600 + "@sha256:" + "0" * 64
    body = {"kind": "container", "name": "long", "container": {"image": image}}
    answer = env.client.post("/v1/submissions", json=body, headers=env.a)
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["field"] == "body.container.image"


def test_an_admin_token_cannot_revoke_itself(
    env: Env, api_world: Any, pg_database: Database
) -> None:
    with pg_database.session_scope() as session:
        admins = [t.id for t in session.scalars(select(ApiToken)) if "admin" in t.scopes]
    [own] = admins

    def team(slug: str, headers: dict[str, str]) -> int:
        body = {"slug": slug}
        return int(env.client.post("/v1/admin/teams", json=body, headers=headers).status_code)

    refused = env.client.post(f"/v1/admin/tokens/{own}/revoke", headers=env.admin)
    assert refused.status_code == 409, refused.text
    assert "making this request" in refused.json()["detail"]
    assert team("still-admin", env.admin) == 201
    # Another admin may revoke it.
    second = api_world.auth(api_world.token("ops", ["admin"]))
    assert env.client.post(f"/v1/admin/tokens/{own}/revoke", headers=second).status_code == 200
    assert team("locked-out", env.admin) == 401


def test_error_details_quote_a_short_prefix_only(env: Env) -> None:
    submission = env.submission(env.a, "echo")
    counts = list(range(2, 100_000))
    body = {
        "submission_id": submission,
        "protocol_id": env.protocol_id,
        "config_overrides": {"metrics": {"legal": {"speaker_counts": counts}}},
    }
    answer = env.client.post("/v1/jobs", json=body, headers=env.a)
    assert answer.status_code == 422, answer.text[:300]
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert len(answer.content) < 5_000, len(answer.content)
    assert "characters in all" in answer.text or "speaker_counts" in answer.text
