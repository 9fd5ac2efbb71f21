"""Service submissions over HTTP: the signing secret in the creation answer only, the maker's
credential never shown and stored encrypted, the URL under the outbound policy."""

from __future__ import annotations

from typing import Any

import pytest

from services.anonymizers.kinds.service import decrypt_secret
from services.settings import Settings
from services.storage.db import Database
from services.storage.models import Submission

pytestmark = pytest.mark.integration


def test_a_service_submission_shows_its_secret_once(
    make_api_client: Any, api_world: Any, pg_database: Database
) -> None:
    client = make_api_client()
    auth = api_world.auth(api_world.a)
    body = {
        "kind": "service",
        "name": "served anonymizer",
        "service": {
            "url": "https://anon.example.org/v1",
            "credential_header": "X-Api-Key",
            "credential": "maker-key-123",
        },
    }
    created = client.post("/v1/submissions", json=body, headers=auth)
    assert created.status_code == 201, created.text
    answer = created.json()
    secret = answer["service_secret"]
    assert answer["kind"] == "service" and answer["service_url"] == "https://anon.example.org/v1"
    assert secret.startswith("svcsec_") and "maker-key-123" not in created.text
    again = client.get(f"/v1/submissions/{answer['id']}", headers=auth)
    assert again.status_code == 200 and again.json()["service_secret"] is None
    assert "maker-key-123" not in again.text and secret not in again.text
    with pg_database.session_scope() as session:
        row = session.get(Submission, answer["id"])
        assert row is not None and row.service_secret is not None
        assert secret not in row.service_secret and "maker-key-123" not in str(
            row.service_credential
        )
        key = Settings(
            _env_file=None, token_hmac_key="api-test-hmac-key"
        ).resolved_service_secret_key()  # type: ignore[call-arg]
        assert decrypt_secret(row.service_secret, key) == secret


@pytest.mark.parametrize(
    ("url", "words"),
    [("http://anon.example.org", "https://"), ("https://169.254.169.254/", "not a globally")],
)
def test_service_urls_obey_the_outbound_policy(
    make_api_client: Any, api_world: Any, url: str, words: str
) -> None:
    client = make_api_client()
    body = {"kind": "service", "name": "s", "service": {"url": url}}
    answer = client.post("/v1/submissions", json=body, headers=api_world.auth(api_world.a))
    assert answer.status_code == 422, answer.text
    assert answer.json()["errors"][0]["field"] == "body.service.url"
    assert words in answer.json()["detail"]
