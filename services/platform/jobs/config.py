"""A job's evaluation config, built ONCE: protocol config + the caller's overrides + the submission.

The protocol body stored by ``POST /v1/admin/protocols`` is ``{"config": {...}, "leaderboard":
{...}}``; ``config`` holds `EvaluationConfig` fields except ``anonymizer``. A job merges the
caller's ``config_overrides`` into it (recursively for mappings; lists and values replace), sets
``anonymizer`` from the submission (:func:`anonymizer_section`, the only place that turns a
submission into an anonymizer spec) and validates the result with
``services.pipeline.config.parse_config``, so a bad field is an error that names it. The stored job
config is the validated model's JSON dump (all defaults filled in), which makes ``config_hash``
equal to ``EvaluationConfig.content_hash()``.

When a phase runs, :func:`run_config` reads the stored config back as it is and binds what only
the running host knows: device knobs (they do not change results) and, for an archive
submission, the local folder of the validated audio in place of the archive's blob key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services import field_names
from services.anonymizers.kinds.archive import ArchiveAnonymizerConfig
from services.anonymizers.kinds.registry import kind_of
from services.attacker.training_config import TrainingConfig
from services.errors import ConfigError, InvalidInputError
from services.json_values import JSON_INT_MAX, JSON_TEXT_PATTERN
from services.pipeline.config import (
    SEED_MAX,
    UNIQUE_LIST_FIELDS,
    EvaluationConfig,
    parse_config,
    with_current_names,
)
from services.platform.jobs.cost import check_job_cost
from services.settings import Settings, get_settings
from services.storage.models import Job, ProtocolRecord, Submission

# Fields a job may not override: the anonymizer comes from the submission, the corpus and its
# protocol define the leaderboard.
PROTOCOL_FIXED_FIELDS = ("anonymizer", "protocol_file", "synthetic")

# Nested fields that name folders on the workers' disks (operator-installed model weights): only
# a protocol (written by an administrator) may set them, never a job's caller.
OPERATOR_PATH_FIELDS: tuple[tuple[str, ...], ...] = (
    ("training", "pretrained_ecapa_path"),
    ("training", "ssl_model_path"),
    ("utility", "asr", "pretrained_path"),
)
# The same folders as named by one zoo attacker (an item of ``attackers``).
ATTACKER_OPERATOR_PATH_FIELDS: tuple[tuple[str, ...], ...] = (
    ("pretrained_path",),
    ("training", "pretrained_ecapa_path"),
    ("training", "ssl_model_path"),
)


PROTOCOL_CONFIG_FIELDS = tuple(
    name for name in EvaluationConfig.model_fields if name != "anonymizer"
)
"""The fields of a protocol's config (``anonymizer`` comes from each submission)."""

OVERRIDABLE_CONFIG_FIELDS = tuple(
    name for name in EvaluationConfig.model_fields if name not in PROTOCOL_FIXED_FIELDS
)
"""The fields of a job's ``config_overrides``."""


def _inline(node: Any, defs: Mapping[str, Any], within: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``$ref`` into ``defs`` replaced by (a copy of) its schema; a model
    that contains itself is left unconstrained below its first level."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            rest = {k: _inline(v, defs, within) for k, v in node.items() if k != "$ref"}
            if name in within:
                return rest
            return {**_inline(defs[name], defs, (*within, name)), **rest}
        return {k: _inline(v, defs, within) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs, within) for v in node]
    return node


def config_fields_schema(
    names: tuple[str, ...], *, without: tuple[tuple[str, ...], ...] = ()
) -> dict[str, Any]:
    """The JSON schema of an object holding some `EvaluationConfig` fields (``names``), each
    with its own schema, nothing else; ``without``: nested fields left out (refused). What the
    API's document states of a protocol's ``config`` and a job's ``config_overrides`` (rules
    across fields, e.g. a zoo's attackers against the training, are checked on the merged
    config and named in a 422)."""
    full = EvaluationConfig.model_json_schema()
    defs = full.get("$defs", {})
    properties = {name: _inline(full["properties"][name], defs) for name in names}
    for path in without:
        if path[0] in properties:
            _drop(properties[path[0]], path[1:])
    for name, schema in properties.items():
        _seed_bounds(schema, "seed" in name)
        _storable(schema)
        if name in UNIQUE_LIST_FIELDS:
            schema["uniqueItems"] = True
    return {"properties": properties, "additionalProperties": False}


def _storable(node: Any) -> None:
    """State the rule of every JSON value storage holds (``services.json_values``) on the
    numbers and strings of ``node``: numbers within +-JSON_INT_MAX, text without NUL or lone
    surrogates."""
    if isinstance(node, dict):
        if node.get("type") in ("number", "integer"):
            node["minimum"] = max(node.get("minimum", -JSON_INT_MAX), -JSON_INT_MAX)
            node["maximum"] = min(node.get("maximum", JSON_INT_MAX), JSON_INT_MAX)
        elif node.get("type") == "string" and "pattern" not in node:
            node["pattern"] = JSON_TEXT_PATTERN
        for value in node.values():
            _storable(value)
    elif isinstance(node, list):
        for value in node:
            _storable(value)


def _seed_bounds(node: Any, under_seed: bool) -> None:
    """State the seed rule of `EvaluationConfig` (an integer under a key naming a seed lies in
    0 .. SEED_MAX) on the integers of ``node``."""
    if isinstance(node, dict):
        if under_seed and node.get("type") == "integer":
            node.setdefault("minimum", 0)
            node.setdefault("maximum", SEED_MAX)
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                for name, child in value.items():
                    _seed_bounds(child, under_seed or "seed" in name)
            else:
                _seed_bounds(value, under_seed)
    elif isinstance(node, list):
        for value in node:
            _seed_bounds(value, under_seed)


def _drop(node: dict[str, Any], path: tuple[str, ...]) -> None:
    """Remove the nested property ``path`` from ``node`` (in every branch of a union)."""
    for branch in (node, *node.get("anyOf", ()), *node.get("oneOf", ())):
        props = branch.get("properties")
        if not isinstance(props, dict) or path[0] not in props:
            continue
        if len(path) == 1:
            del props[path[0]]
            if path[0] in branch.get("required", ()):
                branch["required"] = [r for r in branch["required"] if r != path[0]]
        else:
            _drop(props[path[0]], path[1:])


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
    cfg = parse_config(dict(config), source="body.config")
    # The same checks as `unmask evaluate` (that the API host can make): a protocol whose
    # corpus cannot be drawn would only fail later, in every job's corpus phase.
    from services.pipeline.config_checks import protocol_problems

    problems = protocol_problems(cfg)
    if problems:
        raise ConfigError("body.config: " + "; ".join(problems))
    return dict(config)


def anonymizer_section(submission: Submission) -> dict[str, Any]:
    """The ``anonymizer`` section of an `EvaluationConfig` for ``submission`` (its kind's
    ``config_section``).

    Archive submissions name the archive's blob key; :func:`run_config` binds it to the local
    folder of the validated audio on the host that runs a phase.
    """
    kind = kind_of(submission.kind)
    return kind.config_section(kind.columns_of(submission))


def job_config(
    base: Mapping[str, Any], submission: Submission, *, source: str = "config"
) -> dict[str, Any]:
    """The validated config of a job on ``submission`` from an anonymizer-less ``base`` config
    (JSON-ready, defaults filled in)."""
    merged = dict(base)
    merged["anonymizer"] = anonymizer_section(submission)
    config = parse_config(merged, source=source)
    return config.model_dump(mode="json")


def _refuse_operator_paths(
    tree: Mapping[str, Any], paths: tuple[tuple[str, ...], ...], where: str
) -> None:
    """``ConfigError`` naming the first of ``paths`` that ``tree`` sets: folders on the workers'
    disks, which only a protocol (its operator) may name."""
    for path in paths:
        node: Any = tree
        for part in path:
            node = node.get(part) if isinstance(node, Mapping) else None
        if node is not None:
            raise ConfigError(
                f"{where}.{'.'.join(path)}: cannot be overridden (a folder on the workers' "
                "disks: the protocol names the weights its operator installed)"
            )


def build_job_config(
    protocol: ProtocolRecord,
    submission: Submission,
    overrides: Mapping[str, Any],
    *,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """The validated config of a job: the protocol's config, ``overrides``, the submission;
    within the protocol's cost limits (:func:`check_job_cost`, default bounds from ``settings``,
    else the process settings)."""
    # Former field names (``protocol``, ``training.init``) as the current ones: the checks and
    # the merge below then see one key per field.
    overrides = with_current_names(overrides, "body.config_overrides")
    fixed = [name for name in PROTOCOL_FIXED_FIELDS if name in overrides]
    if fixed:
        raise ConfigError(
            f"body.config_overrides.{fixed[0]}: cannot be overridden (the anonymizer comes from "
            "the submission, the corpus from the protocol)"
        )
    _refuse_operator_paths(overrides, OPERATOR_PATH_FIELDS, "body.config_overrides")
    attackers = overrides.get("attackers")
    for index, attacker in enumerate(attackers if isinstance(attackers, list) else []):
        if not isinstance(attacker, Mapping):
            continue
        where = f"body.config_overrides.attackers[{index}]"
        training = attacker.get("training")
        if isinstance(training, Mapping):
            try:
                training = field_names.with_current_names(training, TrainingConfig, f"{where}.")
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            attacker = {**attacker, "training": training}
        _refuse_operator_paths(attacker, ATTACKER_OPERATOR_PATH_FIELDS, where)
    base = with_current_names((protocol.body or {}).get("config", {}), "protocol config")
    merged = deep_merge(base, overrides)
    merged.setdefault("name", f"{submission.name} on {protocol.name} v{protocol.version}")
    built = job_config(merged, submission, source="body.config_overrides")
    check_job_cost(
        parse_config(built, source="body.config_overrides"),
        protocol,
        settings or get_settings(),
        source="body.config_overrides",
    )
    return built


def check_stored_config_cost(
    config: Mapping[str, Any],
    protocol: ProtocolRecord,
    *,
    settings: Settings | None = None,
    source: str = "config",
) -> None:
    """Check a stored job config (a re-run copies one) against the protocol's CURRENT cost
    limits: limits lowered since the original job apply to its re-runs too."""
    check_job_cost(
        parse_config(dict(config), source=source),
        protocol,
        settings or get_settings(),
        source=source,
    )


def stored_evaluation_config(job: Job) -> EvaluationConfig:
    """The job's stored config parsed; a config without an anonymizer is refused."""
    data = dict(job.config or {})
    if not data.get("anonymizer"):
        raise InvalidInputError(
            f"job {job.id} config names no anonymizer (jobs are created by "
            "services.platform.jobs.create_job, which sets it from the submission)"
        )
    return parse_config(data, f"job {job.id} config")


def run_config(
    config: EvaluationConfig, settings: Settings, *, archive_folder: Path | None = None
) -> EvaluationConfig:
    """``config`` bound to the host that runs it: device knobs from ``settings`` and, for an
    archive anonymizer, ``archive_folder`` (the validated audio) in place of the blob key."""
    runtime: dict[str, Any] = {"dataloader_workers": settings.dataloader_workers}
    if settings.device != "auto":
        runtime["device"] = settings.device
    bound = config.model_copy(update={"training": config.training.model_copy(update=runtime)})
    if isinstance(config.anonymizer, ArchiveAnonymizerConfig):
        if archive_folder is None:
            raise ConfigError("an archive job runs only with the folder of its validated audio")
        anonymizer = config.anonymizer.model_copy(update={"archive": archive_folder})
        bound = bound.model_copy(update={"anonymizer": anonymizer})
    return bound
