"""JSON values storage cannot hold are refused as 422 naming the field, on every route and in
every free-form object; every request body is read under the read timeout (408). Real
PostgreSQL."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from test_api_upload_hardening import LiveServer, serve  # noqa: F401

pytestmark = pytest.mark.integration

JSON = {"Content-Type": "application/json"}


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
    submission = client.post(
        "/v1/submissions",
        json={"kind": "builtin", "name": "s", "builtin": {"name": "pitch"}},
        headers=client.a,
    )
    assert submission.status_code == 201, submission.text
    client.submission_id = submission.json()["id"]
    return client


def _job_body(env: Any, overrides: str) -> str:
    return (
        f'{{"submission_id": {env.submission_id}, "protocol_id": {env.protocol_id}, '
        f'"config_overrides": {overrides}}}'
    )


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ('{"name": "a\\ud800b"}', "body.config_overrides.name", "surrogate"),
        ('{"training": {"lr": 1e309}}', "body.config_overrides.training.lr", "not finite"),
        ('{"training": {"lr": NaN}}', "body.config_overrides.training.lr", "not finite"),
        ('{"seeds": [' + "9" * 400 + "]}", "body.config_overrides.seeds.0", "400 digits"),
        ('{"x": ' + "[" * 5000 + "]" * 5000 + "}", "body", "nested deeper"),
    ],
)
def test_odd_values_in_config_overrides_are_422_naming_the_field(
    env: Any, overrides: str, field: str, words: str
) -> None:
    response = env.post("/v1/jobs", content=_job_body(env, overrides), headers={**env.a, **JSON})
    problem = _problem(response, 422)
    assert problem["errors"][0]["field"].startswith(field), problem
    assert words in problem["detail"], problem


def test_odd_values_in_builtin_params_and_protocol_configs(
    env: Any, api_protocol_body: dict[str, Any]
) -> None:
    key = _problem(
        env.post(
            "/v1/submissions",
            content='{"kind": "builtin", "name": "k", "builtin": {"name": "pitch", '
            '"params": {"\\ud800": 1}}}',
            headers={**env.a, **JSON},
        ),
        422,
    )
    assert key["errors"][0]["field"] == "body.builtin.params.'\\ud800'", key
    big = _problem(
        env.post(
            "/v1/submissions",
            content='{"kind": "builtin", "name": "k", "builtin": {"name": "pitch", '
            '"params": {"semitones": ' + "4" * 400 + "}}}",
            headers={**env.a, **JSON},
        ),
        422,
    )
    assert big["errors"][0]["field"] == "body.builtin.params.semitones", big
    name = _problem(
        env.post(
            "/v1/submissions",
            content='{"kind": "builtin", "name": "\\udc00", "builtin": {"name": "pitch"}}',
            headers={**env.a, **JSON},
        ),
        422,
    )
    assert name["errors"][0]["field"] == "body.name", name
    import json

    body = json.dumps(api_protocol_body)[:-1] + ', "description": "x\\ud800"}'
    described = _problem(
        env.post("/v1/admin/protocols", content=body, headers={**env.admin, **JSON}), 422
    )
    assert described["errors"][0]["field"] == "body.description", described


def test_a_stalled_json_body_gets_408(
    serve: Callable[..., LiveServer],  # noqa: F811
    api_world: Any,
) -> None:
    server = serve(upload_read_timeout_s=1.0)
    token = api_world.a
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    head = (
        f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    started = time.monotonic()
    conn.sendall(head.encode() + b'{"submission_id": ')
    conn.settimeout(10)
    answer = conn.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert time.monotonic() - started < 5
    conn.close()


def test_a_dripped_json_body_gets_408_at_the_body_deadline(
    serve: Callable[..., LiveServer],  # noqa: F811
    api_world: Any,
) -> None:
    """One byte every 0.5 s never trips the 5 s wait for the next chunk; the 3 s deadline of the
    whole body ends it."""
    import contextlib
    import json
    import select

    server = serve(upload_read_timeout_s=5.0, request_body_timeout_s=3.0)
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    head = (
        f"POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {api_world.a}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
    conn.sendall(head.encode())
    started = time.monotonic()
    answer = b""
    try:
        while time.monotonic() - started < 15:
            with contextlib.suppress(OSError):  # the server may close right after answering
                conn.sendall(b" ")
            if select.select([conn], [], [], 0.5)[0]:
                answer = conn.recv(65536)
                break
        elapsed = time.monotonic() - started
        while answer and b"}" not in answer.rpartition(b"\r\n\r\n")[2]:
            more = conn.recv(65536)
            if not more:
                break
            answer += more
    finally:
        conn.close()
    assert answer.startswith(b"HTTP/1.1 408"), (answer[:200], time.monotonic() - started)
    assert 2.5 < elapsed < 8, elapsed
    head_part, _, body = answer.partition(b"\r\n\r\n")
    assert b"application/problem+json" in head_part
    problem = json.loads(body)
    assert problem["type"].endswith("request-timeout")
    assert "not complete after 3 s" in problem["detail"], problem


def test_a_protocol_whose_corpus_cannot_be_drawn_is_refused_at_registration(
    env: Any, api_protocol_body: dict[str, Any]
) -> None:
    # Default role sizes (24 + 16 + 8 speakers, 8 + 8 utterances) on 12 speakers of 6
    # utterances: `unmask evaluate` refuses it, and so does the registration (not every job's
    # corpus phase later).
    api_protocol_body["name"] = "too-small"
    api_protocol_body["config"]["synthetic"] = {"n_speakers": 12, "utts_per_speaker": 6}
    problem = _problem(
        env.post("/v1/admin/protocols", json=api_protocol_body, headers=env.admin), 422
    )
    assert "n_target_speakers = 48 exceeds n_speakers = 12" in problem["detail"], problem
    assert "trials_per_speaker = 16 exceeds utts_per_speaker = 6" in problem["detail"], problem
    assert problem["detail"].startswith("body.config: synthetic:"), problem
