"""Fail before working: every config problem at once, naming file and field; the plan."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from services.errors import ConfigError
from services.pipeline.config import EvaluationConfig, load_config
from services.pipeline.config_checks import (
    config_problems,
    load_checked_config,
    plan_lines,
)
from services.pipeline.estimates import PhaseThroughputs
from services.utility.config import UtilityConfig

REPO = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_every_problem_reported_at_once_with_file_and_fields(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "anonymizer:\n  name: nope\nseeds: []\nscenarios: [bogus]\n"
        "synthetic: {n_speakers: 12, utts_per_speaker: 6}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_checked_config(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: 5 problems: ")
    for field in ("seeds:", "scenarios.0:", "anonymizer.name: unknown anonymizer 'nope'"):
        assert field in msg
    assert "= 48 exceeds n_speakers = 12" in msg
    assert "= 16 exceeds utts_per_speaker = 6" in msg


def test_builtin_parameters_are_checked(tmp_path: Path) -> None:
    path = _write(tmp_path, "anonymizer:\n  name: pitch\n  params: {semitones: 40, x: 1}\n")
    with pytest.raises(ConfigError, match=r"anonymizer\.params: pitch: unknown parameter"):
        load_checked_config(path)


@pytest.mark.parametrize("text", ["", "# only a comment\n"])
def test_empty_config_is_an_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match="the config is empty"):
        load_config(_write(tmp_path, text))


def test_directory_as_config_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)


def test_binary_and_broken_yaml(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ConfigError, match="not a text file"):
        load_config(tmp_path / "b.yaml")
    with pytest.raises(ConfigError, match="not valid YAML at line 2"):
        load_config(_write(tmp_path, "name: x\n  bad: [\n"))


def test_missing_archive_protocol_and_unreachable_engine(tmp_path: Path) -> None:
    archive = EvaluationConfig.model_validate(
        {"anonymizer": {"kind": "archive", "archive": str(tmp_path / "none")}}
    )
    assert config_problems(archive) == [
        f"anonymizer.archive: {tmp_path / 'none'} not found (an archive file, or a folder: "
        "extracted, or in the VoicePrivacy layout)"
    ]
    # ``protocol``, the field's former name, still reads; the problem names the current one.
    proto = EvaluationConfig.model_validate({"protocol": str(tmp_path / "p.json")})
    (problem,) = config_problems(proto)
    assert problem.startswith("protocol_file: ") and "not found" in problem
    container = EvaluationConfig.model_validate(
        {"anonymizer": {"kind": "container", "image": "bad ref"}}
    )
    problems = config_problems(container, engine_url=f"unix://{tmp_path / 'no.sock'}")
    assert problems[0] == "anonymizer.image: invalid image reference 'bad ref'"
    assert "does not answer" in problems[1]


def test_shipped_examples_pass_the_checks() -> None:
    for path in sorted((REPO / "examples" / "configs").glob("*.yaml")):
        cfg = load_checked_config(path)
        assert config_problems(cfg) == []


def test_plan_counts_reusable_stages_and_estimates_time(tmp_path: Path) -> None:
    cfg = load_checked_config(REPO / "examples" / "configs" / "quick-pitch.yaml")
    lines = plan_lines(cfg, tmp_path / "stages")
    assert "2 recognizer(s) (1 on original speech, 1 on anonymized speech" in lines[1]
    assert "tiny preset; epochs cap 12 x2" in lines[1]
    assert "is empty; every stage is computed" in lines[2]
    # Audio durations times the measured throughputs (estimates.py), training to the 12-epoch cap.
    assert "at most about 3 min" in lines[3] and "train 90 s" in lines[3]
    assert "embed 30 s" in lines[3]  # the recognizers' and the challenger's embeddings
    assert "utility" not in lines[3]  # the quick example measures no utility
    with_utility = cfg.model_copy(update={"utility": UtilityConfig()})
    line = plan_lines(with_utility, tmp_path / "stages")[3]
    assert "utility 5 min (its ASR 5 min, trained once per protocol)" in line
    assert "at most about 8 min" in line
    for key in ("a", "b"):
        (tmp_path / "stages" / "train" / key).mkdir(parents=True)
        (tmp_path / "stages" / "train" / key / "DONE.json").write_text(json.dumps({}))
    (tmp_path / "stages" / "train" / "c.tmp").mkdir()  # unfinished: not counted
    assert "holds 2 train; equal inputs are reused" in plan_lines(cfg, tmp_path / "stages")[2]
    slow = plan_lines(cfg, tmp_path, PhaseThroughputs(anonymize=0.4))
    assert "about 141 min" in slow[3]  # 0.4x real time anonymization dominates


def test_the_zoo_plan_counts_the_recognizers_it_trains() -> None:
    """The strongest zoo on the zoo example: the baseline's 2 recognizers (12 epochs), then
    finetuned's and augmented's own original-speech recognizer and anonymized-speech one (36
    epochs each; finetuned's started from its original-speech one, augmented's from scratch);
    the AS-norm variants share them; and the fine-tuned GE2E's two (12 epochs, the anonymized
    one started from the original one)."""
    from services.pipeline.estimates import plan_summary, recognizer_plan

    cfg = load_checked_config(REPO / "examples" / "configs" / "zoo-pitch.yaml")
    plan = recognizer_plan(cfg)
    assert len(plan) == 8
    summary = plan_summary(plan)
    assert "8 recognizer(s) (4 on original speech, 4 on anonymized speech, 3 of them" in summary
    assert "ge2e, tiny preset; epochs cap 12 x4, 36 x4" in summary
    ge2e = [p for p in plan if p.attackers == ("ge2e-finetuned",)]
    assert [(p.condition, p.preset, p.epochs) for p in ge2e] == [
        ("original", "ge2e", 12),
        ("anonymized", "ge2e", 12),
    ]
    shared = next(p for p in plan if p.condition == "anonymized" and "finetuned" in p.attackers)
    assert "finetuned-asnorm" in shared.attackers  # a scoring-only variant shares it
    assert "no time estimate" not in plan_lines(cfg, REPO / "nonexistent")[3]
    unmeasured = cfg.model_copy(
        update={"training": cfg.training.model_copy(update={"preset": "standard"})}
    )
    assert "no time estimate for preset standard" in plan_lines(unmeasured, REPO / "x")[3]


def test_the_estimate_counts_the_asr_only_when_the_stage_store_lacks_it(tmp_path: Path) -> None:
    """The ASR's key is read without computing: the protocol's content hash from the finished
    corpus stage, then the ``utility-asr`` key; a store holding that folder leaves it out."""
    from services.anonymizers.container_sandbox import ContainerSandbox
    from services.pipeline.sets import corpus_stage, original_sets
    from services.pipeline.stage_runner import StageRunner, stage_key
    from services.pipeline.stages.context import AudioCache, StageContext, no_progress
    from services.pipeline.stages.utility import asr_in_store, asr_inputs
    from services.settings import Settings
    from tests.support.configs import micro_protocol_config

    cfg = EvaluationConfig.model_validate(
        micro_protocol_config(name="asr", anonymizer={"name": "pitch"}, utility={})
    )
    assert cfg.utility is not None
    stages = tmp_path / "stages"
    slow_asr = PhaseThroughputs(asr_train=0.5)  # the ASR dominates: 15 epochs at 0.5 s/s
    before = plan_lines(cfg, stages, slow_asr)[3]
    assert re.search(r"utility \d+ min \(its ASR \d+ min, trained once per protocol\)", before)
    ctx = StageContext(
        cfg,
        StageRunner(stages),
        no_progress,
        AudioCache(),
        None,
        ContainerSandbox.from_settings(Settings()),
    )
    protocol, manifest, key = corpus_stage(ctx)
    assert not asr_in_store(cfg, stages)  # the corpus alone
    train_key = original_sets(protocol, manifest, key).keys["train"]
    folder = (
        stages / "utility-asr" / stage_key("utility-asr", asr_inputs(train_key, cfg.utility.asr))
    )
    folder.mkdir(parents=True)
    assert not asr_in_store(cfg, stages)  # unfinished
    (folder / "DONE.json").write_text(json.dumps({}))
    assert asr_in_store(cfg, stages)
    after = plan_lines(cfg, stages, slow_asr)[3]
    assert re.search(r"utility \d+ s \(its ASR reused from the stage store\)", after)
    totals = [re.search(r"at most about (\d+) (s|min)", line) for line in (before, after)]
    seconds = [int(m[1]) * (60 if m[2] == "min" else 1) for m in totals if m is not None]
    assert len(seconds) == 2 and seconds[1] < seconds[0] - 600
    other = cfg.model_copy(
        update={
            "utility": cfg.utility.model_copy(
                update={"asr": cfg.utility.asr.model_copy(update={"hidden_size": 32})}
            )
        }
    )
    assert not asr_in_store(other, stages)  # another ASR spec: another key


def test_embed_estimate_counts_plda_training_sets_and_the_challenger() -> None:
    from services.pipeline import estimates

    cfg = load_checked_config(REPO / "examples" / "configs" / "quick-pitch.yaml")
    recognizers = estimates.recognizer_plan(cfg)
    training = estimates.synthetic_training_audio(cfg)
    sizes = estimates.AudioSizes(
        train_s=3000.0, validation_s=300.0, enrollment_s=1000.0, trial_s=1000.0, corpus_s=9000.0
    )
    speed = estimates.PHASE_SPEEDS

    def embed(c: EvaluationConfig, challenger: bool) -> float:
        phases = estimates.phase_seconds(c, recognizers, training, sizes, challenger=challenger)
        assert phases is not None
        return phases["embed"]

    cosine = embed(cfg, challenger=False)
    # Two recognizers (tiny), each embedding the enrollment and trial sets of both conditions.
    assert cosine == pytest.approx(2 * 2 * 2000.0 / speed.embed_tiny)
    plda = cfg.model_copy(update={"backends": ["cosine", "plda"]})
    assert embed(plda, challenger=False) - cosine == pytest.approx(2 * 3000.0 / speed.embed_tiny)
    # The challenger: anonymized enrollment and trials, and the original enrollment (ignorant).
    assert embed(cfg, challenger=True) - cosine == pytest.approx(3000.0 / speed.challenger)
    only_original = cfg.model_copy(update={"scenarios": ["original"]})
    assert embed(only_original, challenger=True) == embed(only_original, challenger=False)
