"""Every string the API stores and shows to others goes through one text policy
(services/text_policy.py): each class of refused character, at each entry point, is a 422 problem
naming the field; nothing is stored. Real PostgreSQL."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import func, select

from services.storage.models import ApiToken, ProtocolRecord, Submission, Team, WebhookEndpoint

pytestmark = pytest.mark.integration

# (class, text, code point the detail names). Only-spaces is refused in names, not descriptions.
CHARACTERS = [
    ("soft-hyphen", "ab\u00adc", "U+00AD"),
    ("tag-character", "team\U000e0041", "U+E0041"),
    ("hangul-filler", "\u3164", "U+3164"),
    ("private-use", "a\ue000b", "U+E000"),
    ("bidi-override", "evil\u202egnp", "U+202E"),
    ("carriage-return", "a\rb", "U+000D"),
    ("line-feed", "a\nb", "U+000A"),
    ("escape", "red\x1b[31m", "U+001B"),
    ("only-spaces", "   ", "only spaces"),
]

Body = Callable[[Any, str], dict[str, Any]]


def _submission(env: Any, text: str, field: str = "name") -> dict[str, Any]:
    body = {"kind": "builtin", "name": "ok", "builtin": {"name": "pitch"}}
    return {**body, field: text}


def _protocol(env: Any, text: str, where: tuple[str, ...]) -> dict[str, Any]:
    body = copy.deepcopy(env.protocol_body)
    body["name"] = "text-policy"
    node = body
    for key in where[:-1]:
        node = node.setdefault(key, {})
    node[where[-1]] = text
    return body


# (entry point id, method, path, body builder, field named, descriptions refuse only-spaces?)
ENTRY_POINTS: list[tuple[str, str, str, Body, str, bool]] = [
    ("submission-name", "POST", "/v1/submissions", _submission, "body.name", True),
    (
        "submission-description",
        "POST",
        "/v1/submissions",
        lambda env, t: _submission(env, t, "description"),
        "body.description",
        False,
    ),
    (
        "archive-upload-name",
        "POST",
        "/v1/submissions/uploads",
        lambda env, t: {"name": t, "protocol_id": 1, "size_bytes": 10, "sha256": "0" * 64},
        "body.name",
        True,
    ),
    (
        "team-display-name",
        "POST",
        "/v1/admin/teams",
        lambda env, t: {"slug": "policy-team", "display_name": t},
        "body.display_name",
        True,
    ),
    (
        "token-name",
        "POST",
        "/v1/admin/tokens",
        lambda env, t: {"team": "team-a", "scopes": ["read"], "name": t},
        "body.name",
        True,
    ),
    (
        "webhook-description",
        "POST",
        "/v1/webhooks",
        lambda env, t: {"url": "https://example.org/hook", "description": t},
        "body.description",
        True,
    ),
    (
        "protocol-description",
        "POST",
        "/v1/admin/protocols",
        lambda env, t: _protocol(env, t, ("description",)),
        "body.description",
        False,
    ),
    (
        "leaderboard-label",
        "POST",
        "/v1/admin/protocols",
        lambda env, t: _protocol(env, t, ("leaderboard", "scenario")),
        "body.leaderboard.scenario",
        True,
    ),
    (
        "job-config-name",
        "POST",
        "/v1/jobs",
        lambda env, t: {
            "submission_id": env.submission_id,
            "protocol_id": env.protocol_id,
            "config_overrides": {"name": t},
        },
        "body.config_overrides: name",  # a config's own error: the detail names the field
        True,
    ),
]


@pytest.fixture()
def env(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Any:
    client = make_api_client()
    client.admin = api_world.auth(api_world.admin)
    client.a = api_world.auth(api_world.a)
    client.protocol_body = api_protocol_body
    response = client.post("/v1/admin/protocols", json=api_protocol_body, headers=client.admin)
    assert response.status_code == 201, response.text
    client.protocol_id = response.json()["id"]
    submission = client.post("/v1/submissions", json=_submission(client, "base"), headers=client.a)
    assert submission.status_code == 201, submission.text
    client.submission_id = submission.json()["id"]
    return client


def _counts(database: Any) -> tuple[int, ...]:
    with database.session_scope() as session:
        return tuple(
            session.scalar(select(func.count()).select_from(model)) or 0
            for model in (Submission, Team, ApiToken, WebhookEndpoint, ProtocolRecord)
        )


@pytest.mark.parametrize(
    ("method", "path", "build", "field", "names"),
    [entry[1:] for entry in ENTRY_POINTS],
    ids=[entry[0] for entry in ENTRY_POINTS],
)
def test_each_refused_character_is_a_422_naming_the_field(
    env: Any, pg_database: Any, method: str, path: str, build: Body, field: str, names: bool
) -> None:
    before = _counts(pg_database)
    for kind, text, named in CHARACTERS:
        if kind == "only-spaces" and not names:
            continue  # a description of only spaces is stored as empty
        headers = env.admin if path.startswith("/v1/admin/") else env.a
        response = env.request(method, path, json=build(env, text), headers=headers)
        assert response.status_code == 422, (kind, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert problem["detail"].startswith(f"{field}: "), (kind, problem)
        assert named in problem["detail"], (kind, problem)
        if "errors" in problem:
            assert problem["errors"][0]["field"] == field, (kind, problem)
    assert _counts(pg_database) == before  # nothing stored


def test_names_are_stored_normalized(env: Any) -> None:
    response = env.post(
        "/v1/submissions",
        json={**_submission(env, " \uff30itch \ufb01x "), "description": " m\u00b2 run "},
        headers=env.a,
    )
    assert response.status_code == 201, response.text
    assert response.json()["name"] == "Pitch fix"
    assert response.json()["description"] == "m\u00b2 run"


def test_the_documented_pattern_is_the_policy(env: Any) -> None:
    from services.text_policy import text_pattern

    document = env.get("/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    name = schemas["BuiltinSubmissionCreate"]["properties"]["name"]
    assert name["pattern"] == text_pattern("name")
    description = schemas["ProtocolCreate"]["properties"]["description"]
    assert description["pattern"] == text_pattern("prose")
