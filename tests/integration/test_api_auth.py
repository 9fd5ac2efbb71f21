"""HTTP gateway: bearer tokens, scopes, team isolation, problem details, OpenAPI, health.

Real PostgreSQL (fixtures in conftest.py); workers are replaced by a recording dispatcher.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import update

from services.platform import results
from services.storage.models import ApiToken

pytestmark = pytest.mark.integration

PROBLEM_KEYS = {"type", "title", "status", "detail", "instance"}
EXPECTED_ROUTES = {
    ("get", "/v1/health/live"),
    ("get", "/v1/health/ready"),
    ("get", "/v1/me"),
    ("post", "/v1/admin/teams"),
    ("post", "/v1/admin/tokens"),
    ("post", "/v1/admin/tokens/{token_id}/revoke"),
    # OpenID Connect trusted submitters; the exchange is public (the ID token is the credential).
    ("post", "/v1/admin/trusted-submitters"),
    ("get", "/v1/admin/trusted-submitters"),
    ("delete", "/v1/admin/trusted-submitters/{submitter_id}"),
    ("post", "/v1/tokens/oidc"),
    ("post", "/v1/admin/protocols"),
    ("get", "/v1/protocols"),
    ("get", "/v1/protocols/{protocol_id}"),
    ("get", "/v1/protocols/{protocol_id}/leaderboard"),
    # Outgoing webhooks (api/routes/webhooks.py).
    ("post", "/v1/webhooks"),
    ("get", "/v1/webhooks"),
    ("delete", "/v1/webhooks/{webhook_id}"),
    ("get", "/v1/webhooks/{webhook_id}/deliveries"),
    ("post", "/v1/submissions"),
    ("get", "/v1/submissions"),
    ("get", "/v1/submissions/{submission_id}"),
    ("post", "/v1/submissions/archive"),
    ("post", "/v1/submissions/uploads"),
    ("post", "/v1/submissions/uploads/{upload_id}/complete"),
    ("post", "/v1/submissions/{submission_id}/cancel-jobs"),
    ("post", "/v1/jobs"),
    ("get", "/v1/jobs"),
    ("get", "/v1/jobs/{job_id}"),
    ("post", "/v1/jobs/{job_id}/cancel"),
    ("post", "/v1/jobs/{job_id}/rerun"),
    ("get", "/v1/jobs/{job_id}/results"),
    ("get", "/v1/jobs/{job_id}/artifacts"),
    ("get", "/v1/jobs/{job_id}/artifacts/{artifact_id}/download"),
    ("get", "/v1/blobs/{key}"),
    ("put", "/v1/blobs/{key}"),
    # Challenge phases, re-runs with the current evaluator, comparisons.
    ("get", "/v1/protocols/{protocol_id}/phases"),
    ("post", "/v1/protocols/{protocol_id}/phases"),
    ("patch", "/v1/protocols/{protocol_id}/phases/{name}"),
    ("delete", "/v1/protocols/{protocol_id}/phases/{name}"),
    ("post", "/v1/protocols/{protocol_id}/rerun-outdated"),
    ("get", "/v1/protocols/{protocol_id}/compare"),
}


def assert_problem(response: Any, status: int, *fragments: str) -> dict[str, Any]:
    """The response is an RFC 9457 problem with ``status`` whose detail names ``fragments``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert PROBLEM_KEYS <= set(body), body
    assert body["status"] == status
    assert body["type"].startswith("urn:unmask:problem:")
    assert body["instance"] == response.request.url.path
    for fragment in fragments:
        assert fragment in body["detail"], (fragment, body["detail"])
    assert "Traceback" not in response.text
    return body


def _register_protocol(client: Any, world: Any, body: dict[str, Any]) -> int:
    response = client.post("/v1/admin/protocols", json=body, headers=world.auth(world.admin))
    assert response.status_code == 201, response.text
    protocol_id: int = response.json()["id"]
    return protocol_id


def _submit_builtin(client: Any, token: str, world: Any, visibility: str = "private") -> int:
    response = client.post(
        "/v1/submissions",
        json={
            "kind": "builtin",
            "name": f"pitch {visibility}",
            "visibility": visibility,
            "builtin": {"name": "pitch", "params": {"semitones": 3}},
        },
        headers=world.auth(token),
    )
    assert response.status_code == 201, response.text
    submission_id: int = response.json()["id"]
    return submission_id


def test_missing_invalid_expired_revoked_tokens_get_401(
    make_api_client: Any, api_world: Any, pg_database: Any
) -> None:
    client = make_api_client()
    assert_problem(client.get("/v1/me"), 401, "missing bearer token")
    response = client.get("/v1/me", headers={"Authorization": "Bearer unm_not-a-real-token"})
    body = assert_problem(response, 401, "unknown API token")
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert body["type"] == "urn:unmask:problem:unauthorized"

    expired = api_world.token("team-a", ["read"], expires_in_s=3600)
    with pg_database.session_scope() as session:
        session.execute(
            update(ApiToken)
            .where(ApiToken.prefix == expired[:12])
            .values(expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
        )
    assert_problem(client.get("/v1/me", headers=api_world.auth(expired)), 401, "expired")

    revoked = api_world.token("team-a", ["read"])
    assert client.get("/v1/me", headers=api_world.auth(revoked)).status_code == 200
    with pg_database.session_scope() as session:
        token_id = session.query(ApiToken.id).filter(ApiToken.prefix == revoked[:12]).scalar()
    response = client.post(
        f"/v1/admin/tokens/{token_id}/revoke", headers=api_world.auth(api_world.admin)
    )
    assert response.status_code == 200 and response.json()["revoked_at"] is not None
    assert_problem(client.get("/v1/me", headers=api_world.auth(revoked)), 401, "revoked")


def test_wrong_scope_gets_403_and_last_used_at_is_recorded(
    make_api_client: Any, api_world: Any, pg_database: Any, api_protocol_body: dict[str, Any]
) -> None:
    client = make_api_client()
    reader = api_world.auth(api_world.a_read)
    me = client.get("/v1/me", headers=reader)
    assert me.status_code == 200
    assert me.json()["team_slug"] == "team-a" and me.json()["scopes"] == ["read"]
    response = client.post(
        "/v1/submissions",
        json={"kind": "builtin", "name": "x", "builtin": {"name": "pitch"}},
        headers=reader,
    )
    assert_problem(response, 403, "lacks scope 'submit'")
    # Team tokens cannot use the admin routes.
    response = client.post(
        "/v1/admin/teams", json={"slug": "evil"}, headers=api_world.auth(api_world.a)
    )
    assert_problem(response, 403, "lacks scope 'admin'")
    response = client.post(
        "/v1/admin/protocols", json=api_protocol_body, headers=api_world.auth(api_world.a)
    )
    assert_problem(response, 403, "admin")
    with pg_database.session_scope() as session:
        token = session.query(ApiToken).filter(ApiToken.prefix == api_world.a_read[:12]).one()
        assert token.last_used_at is not None


def test_admin_routes_create_team_and_token(make_api_client: Any, api_world: Any) -> None:
    client = make_api_client()
    admin = api_world.auth(api_world.admin)
    response = client.post("/v1/admin/teams", json={"slug": "new-lab"}, headers=admin)
    assert response.status_code == 201 and response.json()["slug"] == "new-lab"
    assert_problem(
        client.post("/v1/admin/teams", json={"slug": "new-lab"}, headers=admin), 409, "taken"
    )
    body = assert_problem(
        client.post("/v1/admin/teams", json={"slug": "Bad Slug"}, headers=admin), 422, "body.slug"
    )
    assert body["errors"][0]["field"] == "body.slug"
    response = client.post(
        "/v1/admin/tokens",
        json={"team": "new-lab", "scopes": ["read"], "expires_days": 1, "name": "ci"},
        headers=admin,
    )
    assert response.status_code == 201, response.text
    issued = response.json()
    assert issued["token"].startswith("unm_") and issued["expires_at"] is not None
    me = client.get("/v1/me", headers=api_world.auth(issued["token"]))
    assert me.json()["team_slug"] == "new-lab"
    assert_problem(
        client.post("/v1/admin/tokens", json={"team": "nope", "scopes": ["read"]}, headers=admin),
        404,
        "nope",
    )
    assert_problem(
        client.post(
            "/v1/admin/tokens", json={"team": "new-lab", "scopes": ["root"]}, headers=admin
        ),
        422,
        "body.scopes",
    )


def test_team_isolation_private_404_public_readable(
    make_api_client: Any,
    api_world: Any,
    pg_database: Any,
    api_protocol_body: dict[str, Any],
) -> None:
    client = make_api_client()
    a, b = api_world.auth(api_world.a), api_world.auth(api_world.b)
    protocol_id = _register_protocol(client, api_world, api_protocol_body)
    private_sub = _submit_builtin(client, api_world.a, api_world, "private")
    public_sub = _submit_builtin(client, api_world.a, api_world, "public")
    jobs = {}
    for name, sub in (("private", private_sub), ("public", public_sub)):
        response = client.post(
            "/v1/jobs", json={"submission_id": sub, "protocol_id": protocol_id}, headers=a
        )
        assert response.status_code == 201, response.text
        jobs[name] = response.json()["id"]
    # Give the private job an artifact so the artifact route has something to hide.
    with pg_database.session_scope() as session:
        results.record_results_and_artifacts(
            session,
            jobs["private"],
            results=[results.ResultRow("semi-informed", "cosine", 0, "eer_percent", 31.0)],
            artifacts=[
                results.ArtifactRecord("jobs/1/report.json", 2, "0" * 64, "application/json")
            ],
        )
        artifact_id = results.list_artifacts(session, jobs["private"])[0].id

    private_paths = [
        ("/v1/submissions/{}", private_sub, "submission"),
        ("/v1/jobs/{}", jobs["private"], "job"),
        ("/v1/jobs/{}/results", jobs["private"], "job"),
        ("/v1/jobs/{}/artifacts", jobs["private"], "job"),
        (f"/v1/jobs/{{}}/artifacts/{artifact_id}/download", jobs["private"], "job"),
    ]
    for template, object_id, noun in private_paths:
        path = template.format(object_id)
        assert client.get(path, headers=a, follow_redirects=False).status_code in {200, 307}
        assert_problem(client.get(path, headers=b), 404, f"{noun} {object_id} not found")
        # Same answer as for an id that does not exist: existence is not disclosed.
        missing = client.get(template.format(999999), headers=b)
        assert_problem(missing, 404, f"{noun} 999999 not found")
    assert_problem(client.post(f"/v1/jobs/{jobs['private']}/cancel", headers=b), 404, "not found")
    assert_problem(client.post(f"/v1/jobs/{jobs['private']}/rerun", headers=b), 404, "not found")
    response = client.post(
        "/v1/jobs", json={"submission_id": private_sub, "protocol_id": protocol_id}, headers=b
    )
    assert_problem(response, 404, f"submission {private_sub} not found")

    # Public objects of team a: readable by b, but not changeable.
    assert client.get(f"/v1/submissions/{public_sub}", headers=b).status_code == 200
    assert client.get(f"/v1/jobs/{jobs['public']}", headers=b).status_code == 200
    assert client.get(f"/v1/jobs/{jobs['public']}/results", headers=b).status_code == 200
    assert client.get(f"/v1/jobs/{jobs['public']}", headers=b).json()["idempotency_key"] is None
    assert_problem(client.post(f"/v1/jobs/{jobs['public']}/cancel", headers=b), 403, "team-a")
    # Lists show the caller's own team only.
    assert client.get("/v1/jobs", headers=b).json()["items"] == []
    assert client.get("/v1/submissions", headers=b).json()["items"] == []


def test_validation_and_unknown_routes_are_problems(make_api_client: Any, api_world: Any) -> None:
    client = make_api_client()
    a = api_world.auth(api_world.a)
    body = assert_problem(client.get("/v1/jobs?limit=0", headers=a), 422, "query.limit")
    assert body["errors"][0]["field"] == "query.limit"
    assert_problem(client.get("/v1/jobs?cursor=abc", headers=a), 422, "query.cursor")
    assert_problem(client.get("/v1/jobs/not-a-number", headers=a), 422, "path.job_id")
    assert_problem(client.get("/v1/nowhere", headers=a), 404, "no route GET /v1/nowhere")
    assert_problem(client.delete("/v1/me", headers=a), 405, "DELETE")
    response = client.post(
        "/v1/jobs", content=b"{not json", headers={**a, "Content-Type": "application/json"}
    )
    assert_problem(response, 422, "body")


def test_unexpected_errors_are_500_problems_without_trace(
    make_api_client: Any, api_world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import api.routes.admin as admin_routes

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("secret internal state")

    monkeypatch.setattr(admin_routes.quotas, "team_quotas", broken)
    client = make_api_client()
    response = client.get("/v1/me", headers=api_world.auth(api_world.a))
    body = assert_problem(response, 500, "GET /v1/me")
    assert "secret internal state" not in response.text and "RuntimeError" not in body["detail"]


def test_openapi_documents_every_route_with_security_and_problems(make_api_client: Any) -> None:
    client = make_api_client()
    schema = client.get("/v1/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "unm_<43 URL-safe characters>",
        "description": schema["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    problem = schema["components"]["schemas"]["Problem"]
    assert {"type", "title", "status", "detail", "instance"} <= set(problem["required"])
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    documented = {(m, p) for p, item in schema["paths"].items() for m in item}
    assert documented == EXPECTED_ROUTES
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            where = f"{method.upper()} {path}"
            public = path.startswith(("/v1/health", "/v1/blobs", "/v1/tokens/oidc"))
            if public:
                assert not operation.get("security"), where
            else:
                assert operation["security"] == [{"bearerAuth": []}], where
                assert "x-required-scope" in operation, where
                assert {"401", "403", "422"} <= set(operation["responses"]), where
            error_codes = [c for c in operation["responses"] if c[0] in "45"]
            assert error_codes, where
            for code in error_codes:
                content = operation["responses"][code]["content"]
                assert list(content) == ["application/problem+json"], (where, code)
                assert content["application/problem+json"]["schema"] == {
                    "$ref": "#/components/schemas/Problem"
                }, (where, code)
            if "{" in path and not public:
                assert "404" in operation["responses"], where


def test_health_and_readiness(make_api_client: Any, s3_store: Any, api_world: Any) -> None:
    client = make_api_client()
    assert client.get("/v1/health/live").json() == {"status": "ok"}
    ready = client.get("/v1/health/ready")
    assert ready.status_code == 200, ready.text
    checks = ready.json()["checks"]
    assert checks["database"]["status"] == "ok"
    assert checks["blob_store"]["status"] == "ok"
    assert checks["broker"]["status"] == "skipped"
    admin = api_world.auth(api_world.admin)
    s3_client = make_api_client(blob_store=s3_store)
    s3_checks = s3_client.get("/v1/health/ready", headers=admin).json()["checks"]
    assert s3_checks["blob_store"] == {**s3_checks["blob_store"], "status": "ok"}
    assert s3_store.bucket in s3_checks["blob_store"]["detail"]  # internals: admins only
    anonymous = s3_client.get("/v1/health/ready").json()["checks"]
    assert all(check["detail"] == "" for check in anonymous.values())
    # Redis broker: the local Redis answers a PING.
    redis_client = make_api_client(broker_url="redis://127.0.0.1:6379/0")
    assert redis_client.get("/v1/health/ready").json()["checks"]["broker"]["status"] == "ok"
    # A broker nobody listens on: not ready, 503 problem that names the failing check.
    down = make_api_client(broker_url="redis://127.0.0.1:1/0")
    body = assert_problem(down.get("/v1/health/ready"), 503, "broker")
    assert body["checks"]["broker"]["status"] == "failed"
    assert "127.0.0.1" not in str(body) and "sqlalche.me" not in str(body)
    full = down.get("/v1/health/ready", headers=admin).json()
    assert "Error" in full["checks"]["broker"]["detail"]
    assert body["checks"]["database"]["status"] == "ok"


def test_every_authenticated_route_refuses_a_missing_or_unknown_token(
    make_api_client: Any,
) -> None:
    # Dozens of unknown tokens from one address: off the failed-authentication limit here
    # (tests/unit/test_pages_visibility.py checks that limit).
    client = make_api_client(auth_max_failures=0)
    for method, template in sorted(EXPECTED_ROUTES):
        if template.startswith(("/v1/health", "/v1/blobs", "/v1/tokens/oidc")):
            continue
        path = template.format(
            token_id=1,
            submitter_id=1,
            protocol_id=1,
            submission_id=1,
            upload_id="x.y",
            job_id=1,
            artifact_id=1,
            webhook_id=1,
            name="development",
        )
        if template.endswith("/compare"):
            path += "?a=1&b=2"  # its required query (checked before the token is verified)
        for headers in ({}, {"Authorization": "Bearer unm_unknown"}):
            response = client.request(method.upper(), path, headers=headers, json={})
            assert_problem(response, 401)
