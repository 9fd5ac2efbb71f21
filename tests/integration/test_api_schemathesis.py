"""Property-based check of the HTTP API against its own OpenAPI document (schemathesis).

Every operation is called with generated requests (a fixed seed, a bounded number of examples)
under an admin token on a real PostgreSQL database holding one protocol, one submission and one
job. No answer may be a server error (5xx), and every answer must match the document: its status
code is documented, its content type and body conform to the documented schema.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Per operation; about 30 operations, so a few minutes on 2 cores.
MAX_EXAMPLES = 25


@pytest.fixture()
def api_schema(make_api_client: Any, api_world: Any, api_protocol_body: dict[str, Any]) -> Any:
    """The app's own OpenAPI document, bound to the app (calls go through ASGI)."""
    client = make_api_client()
    admin = api_world.auth(api_world.admin)
    protocol = client.post("/v1/admin/protocols", json=api_protocol_body, headers=admin)
    assert protocol.status_code == 201, protocol.text
    submission = client.post(
        "/v1/submissions",
        json={"kind": "builtin", "name": "s", "builtin": {"name": "pitch"}},
        headers=admin,
    )
    assert submission.status_code == 201, submission.text
    job = client.post(
        "/v1/jobs",
        json={"submission_id": submission.json()["id"], "protocol_id": protocol.json()["id"]},
        headers=admin,
    )
    assert job.status_code == 201, job.text
    schema = schemathesis.openapi.from_dict(client.get("/v1/openapi.json").json())
    schema.app = client.app
    return schema


def test_api_conforms_to_its_openapi_document(api_schema: Any, api_world: Any) -> None:
    headers = api_world.auth(api_world.admin)
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 25

    for operation in operations:

        @seed(20240917)
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            check()
        except Exception as exc:  # every operation is checked; all failures are reported
            failures.append(f"{operation.label}: {exc}")
    assert not failures, "\n\n".join(failures)
