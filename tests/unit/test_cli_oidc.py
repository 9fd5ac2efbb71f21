"""`unmask submit` without a stored token: in GitHub Actions (ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN)
the client fetches the run's ID token for the server's audience, exchanges it, and renews the
short-lived token before it expires (cli/oidc.py)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx
import pytest

from cli.client import UnmaskApiError, UnmaskClient, UnmaskConfigError

ENV = {
    "UNMASK_URL": "https://unmask.test/",
    "ACTIONS_ID_TOKEN_REQUEST_URL": "https://pipelines.actions.test/idtoken?api-version=2.0",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "runner-secret",
}


class World:
    """The runner's ID-token service and the Unmask API, behind one mock transport."""

    def __init__(self, ttl_s: float = 900.0, refuse: bool = False) -> None:
        self.ttl_s = ttl_s
        self.refuse = refuse
        self.id_tokens: list[str] = []
        self.api_auth: list[str] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.host == "pipelines.actions.test":
            assert request.headers["authorization"] == "bearer runner-secret"
            assert request.url.params["audience"] == "https://unmask.test"
            assert request.url.params["api-version"] == "2.0"
            self.id_tokens.append(f"jwt-{len(self.id_tokens) + 1}")
            return httpx.Response(200, json={"count": 1, "value": self.id_tokens[-1]})
        if request.url.path == "/v1/tokens/oidc":
            assert "authorization" not in request.headers
            if self.refuse:
                problem = {
                    "status": 403,
                    "detail": "ID token not allowed: `ref` is ...",
                    "claim": "ref",
                }
                return httpx.Response(403, json=problem)
            sent = json.loads(request.content)["token"]
            expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=self.ttl_s)
            body = {"token": f"unm_for_{sent}", "expires_at": expires.isoformat()}
            return httpx.Response(201, json=body)
        self.api_auth.append(request.headers["authorization"])
        return httpx.Response(200, json={"team_slug": "team-a", "scopes": ["read", "submit"]})


def test_without_a_token_the_client_exchanges_the_runs_id_token() -> None:
    world = World()
    with UnmaskClient.from_env(ENV, transport=httpx.MockTransport(world.handle)) as client:
        client.request("GET", "/v1/me")
        client.request("GET", "/v1/me")
    assert world.id_tokens == ["jwt-1"]  # one exchange while the token is fresh
    assert world.api_auth == ["Bearer unm_for_jwt-1"] * 2


def test_a_short_lived_token_is_renewed_before_it_expires() -> None:
    world = World(ttl_s=30.0)  # within the renewal margin: every request renews
    with UnmaskClient.from_env(ENV, transport=httpx.MockTransport(world.handle)) as client:
        client.request("GET", "/v1/me")
        client.request("GET", "/v1/me")
    assert world.api_auth == ["Bearer unm_for_jwt-2", "Bearer unm_for_jwt-3"]


def test_a_stored_token_wins_and_no_token_at_all_is_a_usage_error() -> None:
    world = World()
    env = {**ENV, "UNMASK_TOKEN": "unm_stored"}
    with UnmaskClient.from_env(env, transport=httpx.MockTransport(world.handle)) as client:
        client.request("GET", "/v1/me")
    assert world.id_tokens == [] and world.api_auth == ["Bearer unm_stored"]
    with pytest.raises(UnmaskConfigError, match="id-token: write"):
        UnmaskClient.from_env({"UNMASK_URL": "https://unmask.test"})


def test_a_refused_exchange_is_an_api_error_with_its_status() -> None:
    world = World(refuse=True)
    with pytest.raises(UnmaskApiError, match="`ref`") as raised:
        UnmaskClient.from_env(ENV, transport=httpx.MockTransport(world.handle))
    assert raised.value.status == 403


def test_unmask_submit_exits_3_when_the_exchange_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from cli import submit

    world = World(refuse=True)
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("UNMASK_TOKEN", raising=False)
    real = UnmaskClient.from_env.__func__  # type: ignore[attr-defined]

    def from_env(cls: Any, environ: Any = None, **kwargs: Any) -> Any:
        return real(cls, environ, transport=httpx.MockTransport(world.handle), **kwargs)

    monkeypatch.setattr(UnmaskClient, "from_env", classmethod(from_env))
    code = submit.run_standalone(["--protocol", "p", "--builtin", "pitch"])
    assert code == 3
    assert "`ref`" in capsys.readouterr().err
