"""HTTP gateway hardening: ids beyond the INTEGER columns, NUL
characters, body and cost limits, and an OpenAPI document that says what the server answers.
Real PostgreSQL; workers replaced by a recording dispatcher."""

from __future__ import annotations

from typing import Any

import pytest

from api.schemas import DB_ID_MAX

pytestmark = pytest.mark.integration

TOO_BIG = DB_ID_MAX + 1  # 2**31


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture()
def env(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Any:
    client = make_api_client()
    admin = api_world.auth(api_world.admin)
    response = client.post("/v1/admin/protocols", json=api_protocol_body, headers=admin)
    assert response.status_code == 201, response.text
    client.protocol_id = response.json()["id"]
    client.a = api_world.auth(api_world.a)
    client.admin = admin
    return client


def _submission(client: Any, name: str = "s") -> int:
    response = client.post(
        "/v1/submissions",
        json={"kind": "builtin", "name": name, "builtin": {"name": "pitch"}},
        headers=client.a,
    )
    assert response.status_code == 201, response.text
    submission_id: int = response.json()["id"]
    return submission_id


# --- item 4: ids and cursors beyond the INTEGER columns --------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("GET", f"/v1/jobs/{TOO_BIG}", "path.job_id"),
        ("GET", f"/v1/jobs/{TOO_BIG}/results", "path.job_id"),
        ("GET", f"/v1/jobs/1/artifacts/{TOO_BIG}/download", "path.artifact_id"),
        ("POST", f"/v1/jobs/{TOO_BIG}/cancel", "path.job_id"),
        ("GET", f"/v1/submissions/{TOO_BIG}", "path.submission_id"),
        ("POST", f"/v1/submissions/{TOO_BIG}/cancel-jobs", "path.submission_id"),
        ("GET", f"/v1/protocols/{TOO_BIG}", "path.protocol_id"),
        ("GET", f"/v1/protocols/{TOO_BIG}/leaderboard", "path.protocol_id"),
        ("GET", f"/v1/webhooks/{TOO_BIG}/deliveries", "path.webhook_id"),
        ("GET", f"/v1/jobs?cursor={TOO_BIG}", "query.cursor"),
        ("GET", f"/v1/submissions?cursor={TOO_BIG}", "query.cursor"),
        ("GET", f"/v1/jobs?submission_id={TOO_BIG}", "query.submission_id"),
        ("GET", f"/v1/protocols/{TOO_BIG}", "path.protocol_id"),
    ],
)
def test_ids_beyond_integer_columns_are_422_naming_the_field(
    env: Any, method: str, path: str, field: str
) -> None:
    body = _problem(env.request(method, path, headers=env.a), 422)
    assert body["errors"][0]["field"] == field, body
    assert str(DB_ID_MAX) in body["detail"], body


def test_body_ids_beyond_integer_columns_are_422(env: Any) -> None:
    for bad in (TOO_BIG, 2**70):
        body = _problem(
            env.post(
                "/v1/jobs",
                json={"submission_id": bad, "protocol_id": env.protocol_id},
                headers=env.a,
            ),
            422,
        )
        assert body["errors"][0]["field"] == "body.submission_id", body
    # The largest id is in range: the answer is "not found", not a server error.
    body = _problem(
        env.post(
            "/v1/jobs",
            json={"submission_id": DB_ID_MAX, "protocol_id": env.protocol_id},
            headers=env.a,
        ),
        404,
    )
    assert body["status"] == 404


def test_anonymous_pages_with_huge_ids_are_not_server_errors(env: Any) -> None:
    for path in (f"/protocols/{TOO_BIG}", f"/jobs/{TOO_BIG}", f"/submissions/{TOO_BIG}"):
        response = env.get(path)
        assert response.status_code == 422, (path, response.text)
    assert env.get(f"/protocols/{DB_ID_MAX}").status_code == 404


# --- item 5: NUL characters --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        (
            "POST",
            "/v1/submissions",
            {"kind": "builtin", "name": "a\x00b", "builtin": {"name": "pitch"}},
            "body.name",
        ),
        (
            "POST",
            "/v1/submissions",
            {"kind": "builtin", "name": "ok", "builtin": {"name": "pitch", "params": {"x\x00": 1}}},
            "body.builtin.params",
        ),
        (
            "POST",
            "/v1/webhooks",
            {"url": "https://example.org/hook", "description": "d\x00"},
            "body.description",
        ),
        (
            "POST",
            "/v1/admin/teams",
            {"slug": "nul-team", "display_name": "x\x00"},
            "body.display_name",
        ),
        (
            "POST",
            "/v1/admin/tokens",
            {"team": "team-a", "scopes": ["read"], "email": "a\x00@example.org"},
            "body.email",
        ),
        (
            "POST",
            "/v1/submissions/uploads",
            {"name": "n\x00", "protocol_id": 1, "size_bytes": 10, "sha256": "0" * 64},
            "body.name",
        ),
    ],
)
def test_nul_in_stored_text_is_422_naming_the_field(
    env: Any, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    problem = _problem(env.request(method, path, json=body, headers=env.admin), 422)
    assert problem["errors"][0]["field"] == field, problem
    assert "NUL" in problem["detail"], problem


def test_nul_in_config_overrides_and_filters_is_422(env: Any) -> None:
    submission_id = _submission(env)
    problem = _problem(
        env.post(
            "/v1/jobs",
            json={
                "submission_id": submission_id,
                "protocol_id": env.protocol_id,
                "config_overrides": {"name": "x\x00y"},
            },
            headers=env.a,
        ),
        422,
    )
    assert problem["errors"][0]["field"] == "body.config_overrides", problem
    assert "name" in problem["detail"] and "NUL" in problem["detail"]
    for path, field in (
        ("/v1/protocols?name=a%00b", "query.name"),
        (f"/v1/protocols/{env.protocol_id}/leaderboard?metric=a%00", "query.metric"),
        ("/v1/submissions/archive?name=a%00&protocol_id=1", "query.name"),
    ):
        method = "POST" if "archive" in path else "GET"
        problem = _problem(env.request(method, path, headers=env.a, content=b"x"), 422)
        assert problem["errors"][0]["field"] == field, problem


# --- item 7: body size, free-text length and cost bounds ---------------------------------------


def test_json_body_above_the_limit_is_413_before_parsing(
    make_api_client: Any, api_world: Any
) -> None:
    client = make_api_client(max_json_body_bytes=64 * 1024)
    headers = {**api_world.auth(api_world.a), "Content-Type": "application/json"}
    big = b'{"kind": "builtin", "name": "' + b"x" * (128 * 1024) + b'"}'
    problem = _problem(client.post("/v1/submissions", content=big, headers=headers), 413)
    assert problem["limit_bytes"] == 64 * 1024
    assert "UNMASK_MAX_JSON_BODY_BYTES" in problem["detail"]

    # Without a Content-Length (chunked): counted while received.
    def chunks() -> Any:
        for _ in range(4):
            yield b" " * (32 * 1024)

    problem = _problem(client.post("/v1/submissions", content=chunks(), headers=headers), 413)
    assert problem["limit_bytes"] == 64 * 1024


def test_long_job_name_is_refused(env: Any) -> None:
    submission_id = _submission(env)
    problem = _problem(
        env.post(
            "/v1/jobs",
            json={
                "submission_id": submission_id,
                "protocol_id": env.protocol_id,
                "config_overrides": {"name": "n" * 100_000},
            },
            headers=env.a,
        ),
        422,
    )
    assert problem["detail"].startswith("body.config_overrides.name"), problem


@pytest.mark.parametrize(
    ("overrides", "field", "setting"),
    [
        ({"training": {"epochs": 10**9}}, "training.epochs", "UNMASK_MAX_JOB_EPOCHS"),
        ({"seeds": list(range(5000))}, "seeds", "UNMASK_MAX_JOB_SEEDS"),
        (
            {"metrics": {"bootstrap_resamples": 10**9}},
            "metrics.bootstrap_resamples",
            "UNMASK_MAX_JOB_BOOTSTRAP_RESAMPLES",
        ),
    ],
)
def test_cost_knobs_above_the_bound_are_422(
    env: Any, api_dispatcher: Any, overrides: dict[str, Any], field: str, setting: str
) -> None:
    submission_id = _submission(env)
    body = {"submission_id": submission_id, "protocol_id": env.protocol_id}
    problem = _problem(
        env.post("/v1/jobs", json={**body, "config_overrides": overrides}, headers=env.a), 422
    )
    assert problem["detail"].startswith(f"body.config_overrides.{field}"), problem
    assert setting in problem["detail"]
    assert api_dispatcher.enqueued == []


def test_protocol_limits_override_the_default_bounds(
    env: Any, api_protocol_body: dict[str, Any], api_dispatcher: Any
) -> None:
    body = {**api_protocol_body, "name": "limited", "limits": {"epochs": 3}}
    response = env.post("/v1/admin/protocols", json=body, headers=env.admin)
    assert response.status_code == 201, response.text
    assert response.json()["limits"] == {"epochs": 3}
    protocol_id = response.json()["id"]
    submission_id = _submission(env)
    job = {"submission_id": submission_id, "protocol_id": protocol_id}
    over = env.post(
        "/v1/jobs", json={**job, "config_overrides": {"training": {"epochs": 4}}}, headers=env.a
    )
    assert "limit of 3" in _problem(over, 422)["detail"]
    ok = env.post(
        "/v1/jobs", json={**job, "config_overrides": {"training": {"epochs": 3}}}, headers=env.a
    )
    assert ok.status_code == 201, ok.text
    # A server default above the protocol's: the protocol's wins; without limits, the default.
    default_ok = env.post(
        "/v1/jobs",
        json={
            "submission_id": submission_id,
            "protocol_id": env.protocol_id,
            "config_overrides": {"training": {"epochs": 4}},
        },
        headers=env.a,
    )
    assert default_ok.status_code == 201, default_ok.text


# --- item 13: OpenAPI honesty ------------------------------------------------------------------


def test_booleans_are_strict(env: Any, api_protocol_body: dict[str, Any]) -> None:
    body = {**api_protocol_body, "name": "strict-bool"}
    body["leaderboard"] = {**body["leaderboard"], "higher_is_better": 0}
    problem = _problem(env.post("/v1/admin/protocols", json=body, headers=env.admin), 422)
    assert problem["errors"][0]["field"] == "body.leaderboard.higher_is_better", problem


def test_uploads_path_is_not_shadowed_by_submission_id(env: Any) -> None:
    problem = _problem(env.get("/v1/submissions/uploads", headers=env.a), 405)
    assert problem["status"] == 405


def test_openapi_documents_rules_and_body_answers(env: Any) -> None:
    document = env.get("/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    create_job = document["paths"]["/v1/jobs"]["post"]
    assert {"400", "413"} <= set(create_job["responses"])
    assert "413" not in document["paths"]["/v1/jobs/{job_id}"]["get"]["responses"]
    job_id = document["paths"]["/v1/jobs/{job_id}"]["get"]["parameters"][0]["schema"]
    assert job_id["maximum"] == DB_ID_MAX
    assert schemas["BuiltinSpec"]["properties"]["name"]["enum"] == ["pitch", "vtln", "mcadams"]
    assert "pattern" in schemas["ArchiveUploadCreate"]["properties"]["sha256"]
    assert "pattern" in schemas["ContainerSpec"]["properties"]["image"]
    overrides = schemas["JobCreate"]["properties"]["config_overrides"]
    # Every overridable field is stated, none else (the submission brings the anonymizer).
    assert "anonymizer" not in overrides["properties"]
    assert "training" in overrides["properties"]
    assert overrides["additionalProperties"] is False
    higher = schemas["LeaderboardSpec"]["properties"]["higher_is_better"]
    assert higher["type"] == "boolean"
