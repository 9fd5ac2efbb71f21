"""A job's evaluation config = the protocol's config + the caller's overrides + the submission.

The protocol body stored by ``POST /v1/admin/protocols`` is ``{"config": {...}, "leaderboard":
{...}}``; ``config`` holds `EvaluationConfig` fields except ``anonymizer``. A job merges the
caller's ``config_overrides`` into it (recursively for mappings; lists and values replace), sets
``anonymizer`` from the submission and validates the result with
``services.pipeline.config.parse_config``, so a bad field is a 422 that names it. The stored job
config is the validated model's JSON dump (all defaults filled in), which makes ``config_hash``
equal to ``EvaluationConfig.content_hash()``.

Archive submissions put the archive's *blob key* in ``anonymizer.archive``; the worker downloads
and extracts it and points the config at the extracted folder before running.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.errors import ConfigError
from services.storage.models import Protocol, Submission, SubmissionKind

# Fields a job may not override: the anonymizer comes from the submission, the corpus and its
# protocol define the leaderboard.
PROTOCOL_FIXED_FIELDS = ("anonymizer", "protocol", "synthetic")


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in: mappings recursively, anything else replaced."""
    out = dict(base)
    for key, value in overrides.items():
        current = out.get(key)
        if isinstance(current, Mapping) and isinstance(value, Mapping):
            out[key] = deep_merge(current, value)
        else:
            out[key] = value
    return out


def validate_protocol_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Check a protocol's config (no ``anonymizer``); returns it unchanged."""
    if "anonymizer" in config:
        raise ConfigError(
            "body.config.anonymizer: a protocol has no anonymizer; each submission brings one"
        )
    from services.pipeline.config import parse_config

    parse_config(dict(config), source="body.config")
    return dict(config)


def anonymizer_of(submission: Submission) -> dict[str, Any]:
    """The ``anonymizer`` section of an `EvaluationConfig` for ``submission``."""
    if submission.kind == SubmissionKind.BUILTIN.value:
        return {
            "kind": "builtin",
            "name": submission.builtin_name,
            "params": dict(submission.builtin_params or {}),
        }
    if submission.kind == SubmissionKind.ARCHIVE.value:
        return {"kind": "archive", "archive": submission.archive_blob_key}
    return {
        "kind": "container",
        "image": f"{submission.container_image}@{submission.container_digest}",
    }


def build_job_config(
    protocol: Protocol, submission: Submission, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The validated config of a job (JSON-ready, defaults filled in)."""
    fixed = [name for name in PROTOCOL_FIXED_FIELDS if name in overrides]
    if fixed:
        raise ConfigError(
            f"body.config_overrides.{fixed[0]}: cannot be overridden (the anonymizer comes from "
            "the submission, the corpus from the protocol)"
        )
    base = dict((protocol.body or {}).get("config", {}))
    merged = deep_merge(base, overrides)
    merged["anonymizer"] = anonymizer_of(submission)
    merged.setdefault("name", f"{submission.name} on {protocol.name} v{protocol.version}")
    from services.pipeline.config import parse_config

    config = parse_config(merged, source="body.config_overrides")
    return config.model_dump(mode="json")


def job_stage_names() -> list[str]:
    """The stages every job is planned with (the evaluation's phases, in order)."""
    from services.pipeline.jobs import job_stage_names as stage_names

    return stage_names()


def leaderboard_defaults(protocol: Protocol) -> tuple[str, str, str, bool]:
    """(metric, scenario, back-end, higher_is_better) of a protocol's leaderboard."""
    from services.pipeline.config import parse_config

    body = protocol.body or {}
    spec = dict(body.get("leaderboard", {}))
    config = parse_config(dict(body.get("config", {})), source=f"protocol {protocol.id}")
    scenarios: list[str] = [s for s in config.scenarios if s != "original"] or [
        str(s) for s in config.scenarios
    ]
    scenario = spec.get("scenario") or (
        "semi-informed" if "semi-informed" in scenarios else scenarios[-1]
    )
    backend = spec.get("backend") or config.backends[0]
    return (
        str(spec.get("metric") or "eer_percent"),
        str(scenario),
        str(backend),
        bool(spec.get("higher_is_better", True)),
    )
