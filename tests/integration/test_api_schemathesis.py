"""Property-based check of the HTTP API against its own OpenAPI document (schemathesis), with
every check schemathesis has.

Every operation is called with generated requests (a fixed seed, a bounded number of examples),
valid ones and invalid ones, under an admin token on a real PostgreSQL database holding one
protocol, one submission and one job. Every registered check runs on every answer: no server
error (5xx); the status code, content type, headers and body conform to the document; a request
the document calls valid is accepted (2xx, or 401/403/404/409/429: who asks, what exists, what
state it is in) and one it calls invalid is rejected; ``Allow`` headers list what the path
accepts; missing required headers and a missing token are refused. The rules a request is
checked against are stated in the document (enums, bounds, patterns, closed objects, a
deployment's own limits), so a refusal of a valid request is a bug of the document or the
server.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, is_check_class, load_all_checks
from schemathesis.specs.openapi.checks import positive_data_acceptance

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# Bodies whose validity is more than their form: an evaluation config (merged with the protocol's,
# cross-field rules such as an attacker zoo against its training, per-protocol cost limits) or an
# anonymizer's parameters (per built-in anonymizer, checked by building it). The document states
# each field's form (keys, types, bounds); a well-formed body may still be a 422 naming the
# field, which :func:`semantic_refusal_names_a_field` checks instead of "valid data accepted".
# A phase's window ends after it starts (a rule across two fields) and an archive's bytes match
# the `sha256` its query names.
SEMANTIC_BODIES = {
    "POST /v1/admin/protocols",
    "POST /v1/jobs",
    "POST /v1/submissions",
    "POST /v1/protocols/{protocol_id}/phases",
    "POST /v1/submissions/archive",
}


def semantic_refusal_names_a_field(ctx: Any, response: Any, case: Any) -> bool | None:
    """A valid-looking body of :data:`SEMANTIC_BODIES` refused as malformed is a 422 problem
    document that names the field at fault (``errors``, or ``body.`` in its detail)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if response.status_code not in (400, 405, 413, 422):
        return None
    try:
        problem = response.json()
    except ValueError:
        problem = {}
    named = isinstance(problem, dict) and (
        bool(problem.get("errors"))
        or any(part in str(problem.get("detail", "")) for part in ("body.", "query."))
    )
    if response.status_code != 422 or not named:
        raise AssertionError(
            f"a well-formed body refused without naming its field: {response.status_code} "
            f"{response.text[:500]}"
        )
    return None


def all_checks() -> list[Any]:
    """Every check schemathesis registers (the built-in ones and any plugin's)."""
    load_all_checks()
    return [check for check in CHECKS.get_all() if not is_check_class(check)]


CHECKS_ALL = all_checks()
CHECKS_SEMANTIC = [
    *(c for c in CHECKS_ALL if c is not positive_data_acceptance),
    semantic_refusal_names_a_field,
]
# Per operation and generation mode; about 40 operations, so a few minutes on 2 cores.
MAX_EXAMPLES = int(os.environ.get("UNMASK_SCHEMATHESIS_EXAMPLES", "15"))
# Coverage cases per operation, at most (the first ones: each required part left out, then
# boundary values).
MAX_COVERAGE_CASES = int(os.environ.get("UNMASK_SCHEMATHESIS_COVERAGE_CASES", "100"))


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


def test_every_check_is_run() -> None:
    names = {check.__name__ for check in CHECKS_ALL}
    assert {
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "positive_data_acceptance",
        "negative_data_rejection",
        "missing_required_header",
        "ignored_auth",
        "unsupported_method",
        "allow_header_conformance",
        "use_after_free",
        "ensure_resource_availability",
    } <= names


def test_api_conforms_to_its_openapi_document(api_schema: Any, api_world: Any) -> None:
    headers = api_world.auth(api_world.admin)
    failures: list[str] = []
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 25
    assert SEMANTIC_BODIES <= {operation.label for operation in operations}

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
                semantic = case.operation.label in SEMANTIC_BODIES
                case.call_and_validate(
                    headers=headers, checks=CHECKS_SEMANTIC if semantic else CHECKS_ALL
                )

            try:
                check()
            except Unsatisfiable:
                continue  # nothing to make invalid (an operation without parameters)
            except (Exception, BaseExceptionGroup) as exc:  # every operation, every failure
                failures.append(f"{operation.label} ({mode.value}): {exc}")
        failures += _coverage_failures(api_schema, operation, headers)
    assert not failures, "\n\n".join(failures)


def _coverage_failures(schema: Any, operation: Any, headers: dict[str, str]) -> list[str]:
    """Schemathesis' coverage cases of ``operation`` (boundary values, each required part left
    out, methods the path does not have), at most ``MAX_COVERAGE_CASES``, checked like the
    generated ones: the checks of methods and required headers run on these only."""
    cases = schema.iter_coverage_cases(
        operation,
        generation_modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        generation_config=schema.config.generation_for(operation=operation, phase="coverage"),
    )
    semantic = operation.label in SEMANTIC_BODIES
    failures = []
    for case in itertools.islice(cases, MAX_COVERAGE_CASES):
        try:
            case.call_and_validate(
                headers=headers, checks=CHECKS_SEMANTIC if semantic else CHECKS_ALL
            )
        except (Exception, BaseExceptionGroup) as exc:
            failures.append(f"{operation.label} (coverage): {exc}")
    return failures
