"""The version of each stage's code: bump one when the stage computes something different from
the same inputs (a fixed bug, a new estimator), so its key, and every key downstream that hashes
it, changes and the stage is recomputed; stages whose version did not change keep their keys and
are reused.

A stage at version 1 hashes exactly as before versions existed (no ``version`` in its key's
canonical JSON), so stage folders computed earlier stay valid. Jobs record these versions as
part of their evaluator (``services/platform/evaluator/``), and the leaderboard marks a row
scored by other versions than the current ones: its *scorer* (a digest of the versions)
differs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from services.pipeline.code_version import git_revision, unmask_version

STAGE_VERSIONS: dict[str, int] = {
    "corpus": 1,
    "anonymize": 1,
    "train": 1,
    "embed": 1,
    "score": 1,
    "utility-asr": 1,
    "utility-metrics": 1,
    "analysis-prerestore": 1,
    "analysis-srd": 1,
    "analysis-size": 1,
}
"""Stage name -> version of its code (stages not listed are at version 1)."""


def stage_version(stage: str) -> int:
    """The current version of ``stage``'s code (1 for a stage not listed), read at call time."""
    return STAGE_VERSIONS.get(stage, 1)


def stage_versions() -> Mapping[str, int]:
    """A copy of every listed stage's current version (read at call time)."""
    return dict(sorted(STAGE_VERSIONS.items()))


SCORER_DIGITS = 8
"""Hex digits of the stage-versions digest shown as the scorer's id."""


def scorer_id(versions: Mapping[str, int]) -> str:
    """The scorer's id: a short sha256 digest of the stage versions (equal versions, equal id)."""
    blob = json.dumps(dict(sorted(versions.items())), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:SCORER_DIGITS]


def current_scorer() -> str:
    """The current code's scorer id."""
    return scorer_id(stage_versions())


def current_evaluator(config_hash: str | None = None) -> dict[str, Any]:
    """What this process's code evaluates with: Unmask version, git commit when known, stage
    versions, the job's ``config_hash`` and the scorer id (a job records it)."""
    versions = dict(stage_versions())
    return {
        "unmask_version": unmask_version(),
        "git_commit": git_revision(),
        "stage_versions": versions,
        "config_hash": config_hash,
        "scorer": scorer_id(versions),
    }


def is_outdated(evaluator: Mapping[str, Any] | None, current: str | None = None) -> bool:
    """Whether a job's recorded evaluator differs from the current scorer (None: unknown,
    recorded before evaluators were, so outdated)."""
    if not evaluator or not evaluator.get("scorer"):
        return True
    return bool(evaluator["scorer"] != (current or current_scorer()))


def evaluator_label(evaluator: Mapping[str, Any] | None) -> str:
    """Short text for a row: ``"<unmask version> · scorer <id>"`` (``"unknown"`` when none)."""
    if not evaluator:
        return "unknown"
    version = evaluator.get("unmask_version") or "?"
    return f"{version} · scorer {evaluator.get('scorer') or '?'}"
