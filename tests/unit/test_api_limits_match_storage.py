"""One source for each limit: every bounded value a request may carry fits the column that
stores it, and every string or number of a request body states its bound in the schema.

The test walks the OpenAPI document's request bodies (every schema they reach) and the ORM
columns: a request string longer than its column (a 500 from the database), an integer beyond
an INTEGER column, or a value without a stated bound fails it. A new request field needs an
entry below: the column it is stored in, or why it is not stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import BigInteger, Integer, String, Text
from sqlalchemy.orm import InstrumentedAttribute

from api.app import create_app
from services.settings import Settings
from services.storage.models import (
    ApiToken,
    Phase,
    ProtocolRecord,
    Submission,
    Team,
    User,
    WebhookEndpoint,
)

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
DIGEST_SUFFIX = len("@sha256:") + 64

# (schema, property) -> (the column it is stored in, characters the API strips before storing).
STORED: dict[tuple[str, str], tuple[InstrumentedAttribute[Any], int]] = {
    ("ArchiveUploadCreate", "name"): (Submission.name, 0),
    ("ArchiveUploadCreate", "protocol_id"): (Submission.protocol_id, 0),
    ("ArchiveUploadCreate", "size_bytes"): (Submission.archive_size_bytes, 0),
    ("BuiltinSubmissionCreate", "name"): (Submission.name, 0),
    ("BuiltinSubmissionCreate", "description"): (Submission.description, 0),
    ("BuiltinSubmissionCreate", "paper_url"): (Submission.paper_url, 0),
    ("BuiltinSubmissionCreate", "code_url"): (Submission.code_url, 0),
    ("ContainerSubmissionCreate", "name"): (Submission.name, 0),
    ("ContainerSubmissionCreate", "description"): (Submission.description, 0),
    ("ContainerSubmissionCreate", "paper_url"): (Submission.paper_url, 0),
    ("ContainerSubmissionCreate", "code_url"): (Submission.code_url, 0),
    ("ContainerSpec", "image"): (Submission.container_image, DIGEST_SUFFIX),
    ("JobCreate", "submission_id"): (Submission.id, 0),
    ("JobCreate", "protocol_id"): (ProtocolRecord.id, 0),
    ("JobCreate", "phase"): (Phase.name, 0),
    ("PublicPhaseIn", "name"): (Phase.name, 0),
    ("PublicPhaseIn", "submission_limit"): (Phase.submission_limit, 0),
    ("HiddenPhaseIn", "name"): (Phase.name, 0),
    ("HiddenPhaseIn", "submission_limit"): (Phase.submission_limit, 0),
    ("PhasePatch", "submission_limit"): (Phase.submission_limit, 0),
    ("ProtocolCreate", "name"): (ProtocolRecord.name, 0),
    ("ProtocolCreate", "description"): (ProtocolRecord.description, 0),
    ("TeamCreate", "slug"): (Team.slug, 0),
    ("TeamCreate", "display_name"): (Team.display_name, 0),
    ("TokenCreate", "team"): (Team.slug, 0),
    ("TokenCreate", "name"): (ApiToken.name, 0),
    ("TokenCreate", "email"): (User.email, 0),
    ("ServiceSubmissionCreate", "name"): (Submission.name, 0),
    ("ServiceSubmissionCreate", "description"): (Submission.description, 0),
    ("ServiceSubmissionCreate", "paper_url"): (Submission.paper_url, 0),
    ("ServiceSubmissionCreate", "code_url"): (Submission.code_url, 0),
    ("ServiceSpec", "url"): (Submission.service_url, 0),
    ("ServiceSpec", "credential_header"): (Submission.service_credential_header, 0),
    ("ServiceSpec", "credential"): (Submission.service_credential, 0),  # stored encrypted
    ("WebhookCreate", "url"): (WebhookEndpoint.url, 0),
    ("WebhookCreate", "description"): (WebhookEndpoint.description, 0),
}
# Values kept inside a JSON document or not stored at all (bounded in the schema all the same).
NOT_STORED = {
    ("ArchiveUploadCreate", "media_type"),  # the upload's Content-Type, sent to the blob store
    ("CompletedPart", "etag"),
    ("CompletedPart", "part_number"),
    ("TokenCreate", "expires_days"),  # turned into a timestamp
    ("OidcExchangeRequest", "token"),  # verified, never stored
    *(("LeaderboardSpec", key) for key in ("metric", "scenario", "backend")),  # protocol body
}
# CostLimits: every knob is kept in the protocol body (JSON) and read back by the response
# model: tests/integration/test_api_hostile_clients.py sends each bound and reads it back.
JSON_KEPT = {"CostLimits"}


def _document() -> dict[str, Any]:
    return create_app(Settings(_env_file=None), senders={}).openapi()  # type: ignore[call-arg]


def _reached(doc: dict[str, Any]) -> set[str]:
    schemas, seen = doc["components"]["schemas"], set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref:
                name = ref.rsplit("/", 1)[-1]
                if name not in seen:
                    seen.add(name)
                    walk(schemas[name])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for operations in doc["paths"].values():
        for operation in operations.values():
            walk(operation.get("requestBody", {}))
    return seen


def _leaves(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            yield from _leaves(option)
    else:
        yield schema


def _request_values() -> Iterator[tuple[str, str, dict[str, Any]]]:
    doc = _document()
    schemas = doc["components"]["schemas"]
    for name in sorted(_reached(doc)):
        for prop, schema in schemas[name].get("properties", {}).items():
            for leaf in _leaves(schema):
                if leaf.get("type") in ("string", "integer", "number"):
                    yield name, prop, leaf


def _bounded(leaf: dict[str, Any]) -> bool:
    if leaf["type"] == "string":
        return any(k in leaf for k in ("maxLength", "enum", "const", "format")) or (
            # a pattern that bounds the length, e.g. ^[a-z]{0,63}$ or a 64-hex digest
            "pattern" in leaf and leaf["pattern"].endswith("}$")
        )
    return "maximum" in leaf or "exclusiveMaximum" in leaf


def test_every_request_value_states_its_bound_in_the_schema() -> None:
    unbounded = [f"{n}.{p}" for n, p, leaf in _request_values() if not _bounded(leaf)]
    assert not unbounded, f"state a maxLength / maximum / enum / pattern for {unbounded}"


def test_every_bound_fits_the_column_that_stores_it() -> None:
    unmapped, too_big = [], []
    for name, prop, leaf in _request_values():
        if (name, prop) in NOT_STORED or name in JSON_KEPT:
            continue
        if (name, prop) not in STORED:
            if "enum" in leaf or "const" in leaf or leaf.get("format") or "pattern" in leaf:
                continue  # enums, dates, digests: checked by their column's constraint
            unmapped.append(f"{name}.{prop}")
            continue
        column, stripped = STORED[(name, prop)]
        kind = column.property.columns[0].type
        if isinstance(kind, String) and not isinstance(kind, Text) and kind.length:
            limit = leaf.get("maxLength")
            if limit is None or limit - stripped > kind.length:
                too_big.append(f"{name}.{prop}: {limit} characters > {column} {kind.length}")
        elif isinstance(kind, BigInteger | Integer):
            column_max = INT64_MAX if isinstance(kind, BigInteger) else INT32_MAX
            if leaf.get("maximum", float("inf")) > column_max:
                too_big.append(f"{name}.{prop}: {leaf.get('maximum')} > {column} {column_max}")
    assert not unmapped, f"name the column of (or explain) these request values: {unmapped}"
    assert not too_big, f"request bounds beyond their columns: {too_big}"
