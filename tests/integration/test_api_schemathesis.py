"""Property-based check of the HTTP API against its own OpenAPI document (schemathesis).

Every operation is called with generated requests (a fixed seed, a bounded number of examples),
valid ones and invalid ones, under an admin token on a real PostgreSQL database holding one
protocol, one submission and one job. No answer may be a server error (5xx), and every answer
must match the document: its status code is documented, its content type, headers and body
conform to the documented schema; a request the document calls valid is accepted and one it
calls invalid is rejected; ``Allow`` headers list what the path accepts; a missing token is 401.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Bodies whose validity is more than their form: an evaluation config (merged with the protocol's,
# cross-field rules, per-protocol cost limits) or an anonymizer's parameters (per anonymizer).
# The document states their form (JsonValue); a well-formed one may still be a 422 naming the
# field, so "valid data accepted" is not asserted for them (every other check is).
SEMANTIC_BODIES = {"POST /v1/admin/protocols", "POST /v1/jobs", "POST /v1/submissions"}


@schemathesis.check
def positive_data_accepted(ctx: Any, response: Any, case: Any) -> bool | None:
    """A request the document calls valid is not refused as malformed (400, 405, 422).

    Like schemathesis' ``positive_data_acceptance``; 413 (a deployment's size limit, e.g.
    UNMASK_MAX_PRESIGNED_ARCHIVE_BYTES) is not a refusal of the request's form.
    """
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if case.operation.label in SEMANTIC_BODIES:
        return None
    if response.status_code in (400, 405, 422):
        raise AssertionError(
            f"schema-valid request refused with {response.status_code}: {response.text[:500]}"
        )
    return None


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    positive_data_accepted,
    unsupported_method,
    missing_required_header,
    ignored_auth,
]
# Per operation and generation mode; about 30 operations, so a few minutes on 2 cores.
MAX_EXAMPLES = int(os.environ.get("UNMASK_SCHEMATHESIS_EXAMPLES", "15"))


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
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @seed(20240917)
            @settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: Any) -> None:
                case.call_and_validate(headers=headers, checks=CHECKS)

            try:
                check()
            except Unsatisfiable:
                continue  # nothing to make invalid (an operation without parameters)
            except (Exception, BaseExceptionGroup) as exc:  # every operation, every failure
                failures.append(f"{operation.label} ({mode.value}): {exc}")
    assert not failures, "\n\n".join(failures)
