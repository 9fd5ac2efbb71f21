"""A phase's name has one definition (``api.schemas.PhaseName``): the body of a new phase and the
``{name}`` of the phase routes accept and document the same names."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter, ValidationError

from api.app import create_app
from api.auth import require_admin
from api.context import get_context
from api.schemas import PhaseName
from services.platform.identity import Principal
from services.settings import Settings


def _app() -> Any:
    settings = Settings(_env_file=None, database_url="sqlite://", token_hmac_key="k")  # type: ignore[call-arg]
    return create_app(settings, senders={})


def test_the_body_and_the_path_document_the_same_name_rule() -> None:
    document = _app().openapi()
    schemas = document["components"]["schemas"]
    body = schemas["PublicPhaseIn"]["properties"]["name"]
    assert schemas["HiddenPhaseIn"]["properties"]["name"] == body
    operations = document["paths"]["/v1/protocols/{protocol_id}/phases/{name}"]
    assert set(operations) == {"patch", "delete"}
    for operation in operations.values():
        (param,) = [p for p in operation["parameters"] if p["name"] == "name"]
        rule = {k: param["schema"][k] for k in ("pattern", "minLength", "maxLength")}
        assert rule == {k: body[k] for k in ("pattern", "minLength", "maxLength")}
    assert body["maxLength"] == 64


@pytest.mark.parametrize("name", ["", "-starts-with-a-dash", "has space", "x" * 65])
def test_a_bad_name_is_refused_by_the_type(name: str) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(PhaseName).validate_python(name)


def test_a_bad_name_in_the_path_is_a_422_naming_it() -> None:
    app = _app()
    admin = Principal(
        token_id=1, token_prefix="p", user_id=1, team_id=1, team_slug="t", scopes=("admin",)
    )
    app.dependency_overrides[require_admin] = lambda: admin
    app.dependency_overrides[get_context] = lambda: object()
    with TestClient(app) as client:
        answer = client.delete("/v1/protocols/1/phases/-bad")
    assert answer.status_code == 422
    assert "name" in answer.text
