"""Stage code versions: version 1 keeps the keys from before versions existed, a bump changes
that stage's key only, and the scorer id (what the leaderboard compares) follows the versions."""

from __future__ import annotations

import hashlib
import json

import pytest

from services.pipeline import stage_versions
from services.pipeline.stage_runner import stage_key


def _key_before_versions(stage: str, inputs: dict[str, object]) -> str:
    blob = json.dumps({"stage": stage, "inputs": inputs}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


INPUTS = {"embeddings": "abc", "backend": "cosine"}


def test_version_one_hashes_as_before_versions_existed() -> None:
    for stage in ("corpus", "train", "score", "some-unlisted-stage"):
        assert stage_versions.stage_version(stage) == 1
        assert stage_key(stage, INPUTS) == _key_before_versions(stage, INPUTS)


def test_a_bump_changes_that_stage_key_and_the_scorer_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = {s: stage_key(s, INPUTS) for s in ("train", "embed", "score")}
    scorer = stage_versions.current_scorer()
    evaluator = stage_versions.current_evaluator("c" * 64)
    assert evaluator["scorer"] == scorer and evaluator["config_hash"] == "c" * 64
    assert not stage_versions.is_outdated(evaluator)
    monkeypatch.setitem(stage_versions.STAGE_VERSIONS, "score", 2)
    after = {s: stage_key(s, INPUTS) for s in ("train", "embed", "score")}
    assert after["train"] == before["train"] and after["embed"] == before["embed"]
    assert after["score"] != before["score"]
    assert stage_versions.current_scorer() != scorer
    assert stage_versions.is_outdated(evaluator)  # recorded under the old scorer
    assert stage_versions.current_evaluator()["stage_versions"]["score"] == 2


def test_unknown_evaluators_are_outdated_and_labelled() -> None:
    assert stage_versions.is_outdated(None) and stage_versions.is_outdated({})
    assert stage_versions.evaluator_label(None) == "unknown"
    label = stage_versions.evaluator_label({"unmask_version": "0.1.0", "scorer": "ab12cd34"})
    assert label == "0.1.0 · scorer ab12cd34"
