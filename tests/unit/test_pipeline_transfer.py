"""Transfer in the pipeline: which recognizers start from the original-speech ones, stage keys,
reuse of a cached original recognizer, and a zoo mixing scratch and fine-tuned attackers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.attacker.training_config import (
    TrainingConfig,
    recognizer_start,
    recognizer_training,
)
from services.pipeline.config import parse_config
from services.pipeline.plan import recognizer_start_of, transfer_order, with_transfer_sources
from support.configs import tiny_config


@pytest.mark.parametrize(
    ("scenarios", "start", "expected"),
    [
        (["original", "semi-informed"], None, "original"),
        (["ignorant", "semi-informed"], None, "original"),
        (["lazy-informed"], None, "original"),
        (["semi-informed"], None, "scratch"),
        (["semi-informed"], "original", "original"),
        (["ignorant", "semi-informed"], "scratch", "scratch"),
    ],
)
def test_start_defaults_to_original_where_an_original_recognizer_is_trained_anyway(
    scenarios: list[str], start: str | None, expected: str
) -> None:
    training = {"start": start} if start else {}
    cfg = parse_config(tiny_config(scenarios=scenarios, training=training))
    assert recognizer_start_of(cfg, "anonymized") == expected
    assert recognizer_start_of(cfg, "original") == "scratch"  # always, whatever start says


def test_the_start_rule_is_one_function_every_reader_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan, the transfer source and the train stage's config all ask
    ``training_config.recognizer_start``: replacing it changes every one of them."""
    from services.pipeline import plan
    from services.pipeline.stages import train

    cfg = parse_config(tiny_config(scenarios=["ignorant", "semi-informed"]))
    attacker = plan.plan_evaluation(cfg).attackers[0]
    models: dict[tuple[str, int], Any] = {("original", 0): "source"}
    assert attacker.stage_start("anonymized") == "original"
    assert train.transfer_source(attacker, "anonymized", 0, models) == "source"
    assert plan.with_transfer_sources(cfg, [("anonymized", 0)]) == [
        ("original", 0),
        ("anonymized", 0),
    ]
    asked: list[str] = []

    def always_scratch(training: TrainingConfig, condition: str, **_: Any) -> str:
        asked.append(condition)
        return "scratch"

    monkeypatch.setattr(plan, "recognizer_start", always_scratch)
    assert attacker.stage_start("anonymized") == "scratch"
    assert train.transfer_source(attacker, "anonymized", 0, models) is None
    assert plan.with_transfer_sources(cfg, [("anonymized", 0)]) == [("anonymized", 0)]
    ctx: Any = type("Ctx", (), {"config": cfg})()
    assert train._recognizer_training(ctx, "anonymized", 1, None).start == "scratch"
    assert asked and set(asked) == {"anonymized"}


def test_original_speech_recognizers_take_no_transfer_fields() -> None:
    training = TrainingConfig(
        start="original", finetune_lr=5e-4, target_classifier="adversarial", preset="tiny"
    )
    assert recognizer_start(training, "original", trains_original=True) == "scratch"
    assert recognizer_start(training, "anonymized", trains_original=False) == "original"
    original = recognizer_training(training, "original", "scratch")
    assert original.start is None and original.finetune_lr == TrainingConfig().finetune_lr
    assert original.target_classifier == "off"
    anonymized = recognizer_training(training, "anonymized", "scratch")
    assert anonymized.start == "scratch" and anonymized.finetune_lr == 5e-4
    with pytest.raises(ValueError, match="starts from scratch"):
        recognizer_training(training, "original", "original")


def test_former_config_names_still_read() -> None:
    """``training.init`` and ``training.init_from``, the fields' former names, are accepted and
    land in the renamed fields; dumps and docs use the new names."""
    cfg = parse_config(tiny_config(training={"init": "scratch", "init_from": "/weights/ecapa"}))
    assert cfg.training.start == "scratch"
    assert str(cfg.training.pretrained_ecapa_path) == "/weights/ecapa"
    dumped = cfg.training.model_dump(mode="json")
    assert dumped["start"] == "scratch" and "init" not in dumped and "init_from" not in dumped


def test_transfer_sources_are_added_and_trained_first() -> None:
    cfg = parse_config(tiny_config(scenarios=["semi-informed"], training={"start": "original"}))
    needed = [("anonymized", 0), ("anonymized", 1)]
    assert with_transfer_sources(cfg, needed) == [
        ("original", 0),
        ("original", 1),
        ("anonymized", 0),
        ("anonymized", 1),
    ]
    scratch = parse_config(tiny_config(scenarios=["semi-informed"]))
    assert with_transfer_sources(scratch, needed) == needed
    assert transfer_order({("anonymized", 0), ("original", 0)}) == [
        ("original", 0),
        ("anonymized", 0),
    ]


MICRO: dict[str, Any] = {
    "synthetic": {"n_speakers": 8, "n_attacker_train_speakers": 4, "n_eval_speakers": 2},
    "training": {"epochs": 1, "target_classifier": "off"},
    "backends": ["cosine"],
    "metrics": {"bootstrap_resamples": 0, "srd": False},
}


def _train_inputs(stages: Path, key: str) -> dict[str, Any]:
    done = json.loads((stages / "train" / key / "DONE.json").read_text())
    inputs: dict[str, Any] = done["inputs"]
    return inputs


@pytest.mark.slow
def test_a_zoo_mixes_scratch_and_fine_tuned_attackers(tmp_path: Path) -> None:
    from services.pipeline.evaluation import run_evaluation

    data = tiny_config(
        scenarios=["original", "semi-informed"],
        attackers=[{"name": "baseline"}, {"name": "scratch", "training": {"start": "scratch"}}],
        **MICRO,
    )
    result = run_evaluation(parse_config(data), tmp_path / "out")
    training = result["training"]
    tuned, scratch = training["baseline-anonymized-seed0"], training["scratch-anonymized-seed0"]
    assert (tuned["start"], scratch["start"]) == ("original", "scratch")
    assert training["baseline-original-seed0"]["start"] == "scratch"
    # One original-speech recognizer serves both attackers (start is not in its key) ...
    original_key = training["baseline-original-seed0"]["stage_key"]
    assert training["scratch-original-seed0"]["stage_key"] == original_key
    # ... and the fine-tuned recognizer's stage names it: its key changes with the source's.
    stages = tmp_path / "out" / "stages"
    assert tuned["stage_key"] != scratch["stage_key"]
    assert _train_inputs(stages, tuned["stage_key"])["init"] == f"train:{original_key}"
    assert "init" not in _train_inputs(stages, scratch["stage_key"])
    # The stage key reads the field under its former name: keys of earlier runs stay valid.
    assert _train_inputs(stages, tuned["stage_key"])["training"]["init"] == "original"
    assert {r["attacker"] for r in result["rows"]} == {"baseline", "scratch"}
    assert result["worst_case"]["semi-informed"]["attacker"] in {"baseline", "scratch"}
    for entry in training.values():
        assert entry["epochs_cap"] == 1 and entry["stopped"] == "cap"
        assert entry["patience"] == 3  # the default, what the trust check's advice names


@pytest.mark.slow
def test_a_cached_original_recognizer_is_reused_by_a_later_job(tmp_path: Path) -> None:
    from services.pipeline.evaluation import run_evaluation

    stages = tmp_path / "stages"
    first = run_evaluation(
        parse_config(tiny_config(scenarios=["original", "semi-informed"], **MICRO)),
        tmp_path / "a",
        stages_dir=stages,
    )
    original_key = first["training"]["original-seed0"]["stage_key"]
    # A later job: semi-informed only, transfer asked for explicitly, another fine-tune rate.
    micro = {**MICRO, "training": {**MICRO["training"], "start": "original", "finetune_lr": 3e-4}}
    later = run_evaluation(
        parse_config(tiny_config(scenarios=["semi-informed"], **micro)),
        tmp_path / "b",
        stages_dir=stages,
    )
    train_log = {s["key"]: s["reused"] for s in later["stages"] if s["stage"] == "train"}
    assert later["training"]["original-seed0"]["stage_key"] == original_key
    assert train_log[original_key] is True  # the cached recognizer, not trained again
    tuned = later["training"]["anonymized-seed0"]
    assert train_log[tuned["stage_key"]] is False
    assert tuned["start"] == "original"
    assert tuned["stage_key"] != first["training"]["anonymized-seed0"]["stage_key"]
    assert _train_inputs(stages, tuned["stage_key"])["init"] == f"train:{original_key}"


def test_the_transfer_source_is_the_plans_decision() -> None:
    """Where a recognizer starts is decided once (``AttackerPlan.stage_start``)."""
    from services.pipeline.plan import plan_evaluation
    from services.pipeline.stages.train import transfer_source

    models: dict[tuple[str, int], Any] = {("original", 0): "the original-speech recognizer"}
    for start, expected in (("original", "the original-speech recognizer"), ("scratch", None)):
        cfg = parse_config(tiny_config(scenarios=["semi-informed"], training={"start": start}))
        attacker = plan_evaluation(cfg).attackers[0]
        assert attacker.stage_start("anonymized") == start
        assert transfer_source(attacker, "anonymized", 0, models) == expected
        assert attacker.stage_start("original") == "scratch"
        assert transfer_source(attacker, "original", 0, models) is None
