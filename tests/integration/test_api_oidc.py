"""OpenID Connect trusted submitters: a local issuer on loopback (keys generated here, a discovery
document and a JWKS endpoint, tokens shaped like GitHub Actions'), the exchange at
`POST /v1/tokens/oidc`, and every refusal with the claim it names."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey
from sqlalchemy import select

from services.storage.db import Database
from services.storage.models import OidcExchange

pytestmark = pytest.mark.integration

AUDIENCE = "https://unmask.test"
REPO, REPO_ID, OWNER_ID = "my-lab/anonymizer", "4242", "99"
WORKFLOW = ".github/workflows/privacy.yml"


class Issuer:
    """A CI platform's token service on loopback: discovery, JWKS, and signed ID tokens."""

    def __init__(self) -> None:
        self.keys = [RSAKey.generate_key(2048, parameters={"kid": "k1"})]
        self.requests: list[str] = []
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                issuer.requests.append(self.path)
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    body = KeySet(issuer.keys).as_dict(private=False)
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def claims(self, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "aud": AUDIENCE,
            "sub": f"repo:{REPO}:ref:refs/heads/main",
            "jti": str(uuid.uuid4()),
            "iat": now,
            "nbf": now,
            "exp": now + 300,
            "repository": REPO,
            "repository_id": REPO_ID,
            "repository_owner": "my-lab",
            "repository_owner_id": OWNER_ID,
            "ref": "refs/heads/main",
            "ref_type": "branch",
            "workflow_ref": f"{REPO}/{WORKFLOW}@refs/heads/main",
            "run_id": "7001",
            "run_attempt": "1",
            "event_name": "push",
        }
        claims.update(changes)
        return {k: v for k, v in claims.items() if v is not None}

    def token(self, key: Any = None, alg: str = "RS256", **changes: Any) -> str:
        key = key or self.keys[0]
        header = {"alg": alg, "kid": key.kid, "typ": "JWT"}
        return jwt.encode(header, self.claims(**changes), key, algorithms=[alg])


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(signature)}"


@pytest.fixture()
def issuer() -> Iterator[Issuer]:
    server = Issuer()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()


@pytest.fixture()
def oidc_client(make_api_client: Any, issuer: Issuer, api_world: Any) -> Any:
    client = make_api_client(
        oidc_issuers={issuer.url: "github"},
        public_url=AUDIENCE + "/",
        outbound_allow_private_hosts=True,  # the issuer is on loopback
        auth_max_failures=1000,
    )
    created = client.post(
        "/v1/admin/trusted-submitters",
        json={
            "team": "team-a",
            "issuer": issuer.url,
            "repository": REPO,
            "repository_id": REPO_ID,
            "repository_owner_id": OWNER_ID,
            "ref": "refs/heads/main",
            "workflow": WORKFLOW,
            "name": "privacy gate",
        },
        headers=api_world.auth(api_world.admin),
    )
    assert created.status_code == 201, created.text
    return client


def _exchange(client: Any, token: str) -> Any:
    return client.post("/v1/tokens/oidc", json={"token": token})


def test_an_id_token_becomes_a_short_lived_team_token_once(
    oidc_client: Any, issuer: Issuer, pg_database: Database
) -> None:
    token = issuer.token()
    answer = _exchange(oidc_client, token)
    assert answer.status_code == 201, answer.text
    issued = answer.json()
    assert issued["team_slug"] == "team-a" and sorted(issued["scopes"]) == ["read", "submit"]
    assert issued["repository"] == REPO and issued["run_id"] == "7001"
    expires = time.mktime(time.strptime(issued["expires_at"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert 0 < expires - time.mktime(time.gmtime()) <= 900 + 5
    me = oidc_client.get("/v1/me", headers={"Authorization": f"Bearer {issued['token']}"})
    assert me.status_code == 200 and me.json()["team_slug"] == "team-a"
    with pg_database.session_scope() as session:
        audit = session.scalars(select(OidcExchange)).one()
        assert (audit.repository, audit.ref, audit.run_id) == (REPO, "refs/heads/main", "7001")
        assert audit.token_id is not None and audit.event_name == "push"
    # The same ID token again: refused (single use of jti).
    again = _exchange(oidc_client, token)
    assert again.status_code == 401 and again.json()["claim"] == "jti"
    assert "already exchanged" in again.json()["detail"]


def _hs256_with_public_key(issuer: Issuer) -> str:
    header = {"alg": "HS256", "kid": "k1", "typ": "JWT"}
    claims = issuer.claims()
    secret = issuer.keys[0].as_pem(private=False)
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


REFUSALS: dict[str, tuple[Any, str]] = {
    "alg none": (
        lambda i: _unsigned({"alg": "none", "kid": "k1"}, i.claims()),
        "alg",
    ),
    "HS256 signed with the public key": (_hs256_with_public_key, "alg"),
    "unknown kid": (
        lambda i: i.token(RSAKey.generate_key(2048, parameters={"kid": "stranger"})),
        "kid",
    ),
    "signed by another key under a known kid": (
        lambda i: i.token(RSAKey.generate_key(2048, parameters={"kid": "k1"})),
        "signature",
    ),
    "expired beyond the leeway": (lambda i: i.token(exp=int(time.time()) - 120), "exp"),
    "not yet valid": (lambda i: i.token(nbf=int(time.time()) + 300), "nbf"),
    "issued in the future": (lambda i: i.token(iat=int(time.time()) + 300), "iat"),
    "no jti": (lambda i: i.token(jti=None), "jti"),
    "another audience": (lambda i: i.token(aud="https://elsewhere.example"), "aud"),
    "an unknown issuer": (lambda i: i.token(iss="https://evil.example"), "iss"),
    "too large": (lambda i: i.token(padding="x" * 9000), "token"),
    "not a JWT": (lambda i: "abc.def", "token"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_tokens_that_do_not_verify_are_refused_naming_the_claim(
    case: str, oidc_client: Any, issuer: Issuer, pg_database: Database
) -> None:
    make, claim = REFUSALS[case]
    answer = _exchange(oidc_client, make(issuer))
    assert answer.status_code == 401, answer.text
    problem = answer.json()
    assert problem["claim"] == claim and f"`{claim}`" in problem["detail"]
    assert answer.headers["content-type"].startswith("application/problem+json")
    with pg_database.session_scope() as session:
        assert session.scalars(select(OidcExchange)).all() == []


POLICY_REFUSALS: dict[str, tuple[dict[str, Any], str]] = {
    "another repository": ({"repository_id": "5555", "repository": "other/repo"}, "repository_id"),
    "same name, another repository id": ({"repository_id": "4243"}, "repository_id"),
    "another owner id": ({"repository_owner_id": "100"}, "repository_owner_id"),
    "another branch": ({"ref": "refs/heads/feature"}, "ref"),
    "another workflow": (
        {"workflow_ref": f"{REPO}/.github/workflows/other.yml@refs/heads/main"},
        "workflow_ref",
    ),
    "a pull request (fork or not)": ({"event_name": "pull_request_target"}, "event_name"),
}


@pytest.mark.parametrize("case", sorted(POLICY_REFUSALS))
def test_verified_tokens_matching_no_policy_are_forbidden_naming_the_claim(
    case: str, oidc_client: Any, issuer: Issuer
) -> None:
    changes, claim = POLICY_REFUSALS[case]
    answer = _exchange(oidc_client, issuer.token(**changes))
    assert answer.status_code == 403, answer.text
    assert answer.json()["claim"] == claim and f"`{claim}`" in answer.json()["detail"]


def test_leeway_and_pull_requests_when_allowed(
    oidc_client: Any, issuer: Issuer, api_world: Any
) -> None:
    # Expired 30 s ago, within the 60 s leeway: accepted.
    assert _exchange(oidc_client, issuer.token(exp=int(time.time()) - 30)).status_code == 201
    pull = issuer.token(event_name="pull_request", ref="refs/pull/3/merge")
    assert _exchange(oidc_client, pull).status_code == 403
    allowed = oidc_client.post(
        "/v1/admin/trusted-submitters",
        json={
            "team": "team-b",
            "issuer": issuer.url,
            "repository": REPO,
            "repository_id": REPO_ID,
            "allow_pull_requests": True,
        },
        headers=api_world.auth(api_world.admin),
    )
    assert allowed.status_code == 201
    answer = _exchange(
        oidc_client, issuer.token(event_name="pull_request", ref="refs/pull/3/merge")
    )
    assert answer.status_code == 201 and answer.json()["team_slug"] == "team-b"


def test_key_sets_are_cached_and_a_rotated_key_is_fetched(oidc_client: Any, issuer: Issuer) -> None:
    assert _exchange(oidc_client, issuer.token()).status_code == 201
    assert _exchange(oidc_client, issuer.token()).status_code == 201
    assert issuer.requests.count("/jwks") == 1  # cached
    issuer.keys.append(ECKey.generate_key("P-256", parameters={"kid": "k2"}))
    rotated = issuer.token(issuer.keys[1], alg="ES256")
    assert _exchange(oidc_client, rotated).status_code == 201
    assert issuer.requests.count("/jwks") == 2  # refetched once for the new kid
    # An invented kid right after: no third fetch (at most one refresh a minute).
    stranger = issuer.token(RSAKey.generate_key(2048, parameters={"kid": "k9"}))
    assert _exchange(oidc_client, stranger).json()["claim"] == "kid"
    assert issuer.requests.count("/jwks") == 2


def test_the_key_set_is_fetched_under_the_network_policy(
    make_api_client: Any, issuer: Issuer, api_world: Any
) -> None:
    client = make_api_client(oidc_issuers={issuer.url: "github"}, public_url=AUDIENCE)
    answer = _exchange(client, issuer.token())
    assert answer.status_code == 401 and answer.json()["claim"] == "iss"
    assert "not allowed" in answer.json()["detail"] and issuer.requests == []


def test_admin_routes_for_trusted_submitters(
    oidc_client: Any, issuer: Issuer, api_world: Any
) -> None:
    admin = api_world.auth(api_world.admin)
    listed = oidc_client.get("/v1/admin/trusted-submitters", headers=admin).json()
    assert [row["repository_id"] for row in listed] == [REPO_ID]
    body = {
        "team": "team-a",
        "issuer": "https://x.example",
        "repository": "a/b",
        "repository_id": "1",
    }
    unknown = oidc_client.post("/v1/admin/trusted-submitters", json=body, headers=admin)
    assert unknown.status_code == 409 and "UNMASK_OIDC_ISSUERS" in unknown.json()["detail"]
    not_admin = oidc_client.post(
        "/v1/admin/trusted-submitters", json=body, headers=api_world.auth(api_world.a)
    )
    assert not_admin.status_code == 403
    bad_id = oidc_client.post(
        "/v1/admin/trusted-submitters",
        json={**body, "issuer": issuer.url, "repository_id": "my-lab/anonymizer"},
        headers=admin,
    )
    assert bad_id.status_code == 422
    deleted = oidc_client.delete(f"/v1/admin/trusted-submitters/{listed[0]['id']}", headers=admin)
    assert deleted.status_code == 204
    answer = _exchange(oidc_client, issuer.token())
    assert answer.status_code == 403 and answer.json()["claim"] == "repository_id"


def test_the_documented_setup_and_the_client_exchange_end_to_end(
    make_api_client: Any, issuer: Issuer, api_world: Any
) -> None:
    """docs/ci.md's registration (issuer swapped for the local one), then `UnmaskClient.from_env`
    as in a GitHub Actions job: the runner's token URL answers a token of the local issuer."""
    import httpx

    from cli.client import UnmaskClient
    from support.docs_ci import documented_registration

    api = make_api_client(
        oidc_issuers={issuer.url: "github"},
        public_url=AUDIENCE,
        outbound_allow_private_hosts=True,
    )
    body = {**documented_registration(), "team": "team-a", "issuer": issuer.url}
    created = api.post(
        "/v1/admin/trusted-submitters", json=body, headers=api_world.auth(api_world.admin)
    )
    assert created.status_code == 201, created.text
    documented_run = {
        "repository": body["repository"],
        "repository_id": body["repository_id"],
        "ref": body["ref"],
        "workflow_ref": f"{body['repository']}/{body['workflow']}@{body['ref']}",
    }

    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.host == "runner.test":
            assert request.headers["authorization"] == "bearer runner-secret"
            token = issuer.token(aud=request.url.params["audience"], **documented_run)
            return httpx.Response(200, json={"value": token})
        answer = api.request(
            request.method,
            request.url.raw_path.decode(),
            headers={k: v for k, v in request.headers.items() if k != "host"},
            content=request.content,
        )
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    env = {
        "UNMASK_URL": AUDIENCE,
        "ACTIONS_ID_TOKEN_REQUEST_URL": "https://runner.test/idtoken?api-version=2.0",
        "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "runner-secret",
    }
    with UnmaskClient.from_env(env, transport=httpx.MockTransport(handle)) as client:
        me = client.me()
    assert me["team_slug"] == "team-a" and sorted(me["scopes"]) == ["read", "submit"]
