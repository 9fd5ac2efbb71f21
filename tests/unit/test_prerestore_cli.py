"""`unmask analyses prerestore` on a protocol with pitch-anonymized trials."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from cli.analyses import prerestore_command
from cli.main import main
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import TrainingItem
from services.attacks.prerestore_config import PrerestorationConfig
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.pipeline.config import AnalysesSpec, parse_config


@pytest.fixture(autouse=True)
def single_thread() -> Iterator[None]:
    # Two threads on the shared 2-core machine spin against other jobs (much slower).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_cli_and_pipeline_share_the_enrollment_field() -> None:
    field = AnalysesSpec.model_fields["prerestoration"]
    assert PrerestorationConfig in getattr(field.annotation, "__args__", ())
    parameters = inspect.signature(prerestore_command).parameters
    assert parameters["enrollment"].default == PrerestorationConfig().enrollment == "original"
    cfg = parse_config({"analyses": {"prerestoration": {}}})
    assert cfg.analyses.prerestoration is not None
    assert cfg.analyses.prerestoration.enrollment == "original"


def test_bad_conditions_are_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anon = tmp_path / "anon"
    (anon / "trial").mkdir(parents=True)
    (anon / "trial" / "manifest.jsonl").write_text("")
    cmd = ["analyses", "prerestore", "--model", "m.pt", "--protocol", "p.json"]
    cmd += ["--out", str(tmp_path / "out"), "--anonymized-dir", str(anon)]
    for extra, message in (
        (["--enrollment", "anonymized"], "enrollment/manifest.jsonl"),
        (["--enrollment", "both"], "--enrollment"),
        (["--attacker-training", "clean"], "--attacker-training"),
        (["--mode", "both"], "--mode"),
    ):
        assert main([*cmd, *extra]) == 2
        assert message in capsys.readouterr().err
    no_trials = ["analyses", "prerestore", "--model", "m.pt", "--protocol", "p.json"]
    assert main([*no_trials, "--out", str(tmp_path / "out")]) == 2
    assert "trial/manifest.jsonl" in capsys.readouterr().err


@pytest.mark.slow
def test_prerestore_command_writes_json_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "syn"
    args = ["corpus", "synth", "--out", str(corpus), "--speakers", "6", "--utterances", "4"]
    assert main(args) == 0
    proto = tmp_path / "p.json"
    cmd = ["corpus", "protocol", str(corpus / "manifest.jsonl"), "--out", str(proto)]
    assert main([*cmd, "--trials", "2", "--enrollments", "2"]) == 0
    anon = tmp_path / "anon"
    cmd = ["anonymize", "--anonymizer", "pitch", "--param", "semitones=4"]
    assert main([*cmd, "--protocol", str(proto), "--out", str(anon), "--set", "trial"]) == 0
    # A barely trained attacker: the command's plumbing is under test, not the attack's strength.
    speakers = sample_speakers(3, seed=9)
    items = [
        TrainingItem(
            synthesize_utterance(s, np.random.default_rng(j), duration_s=1.0), s.speaker_id
        )
        for s in speakers
        for j in range(2)
    ]
    config = TrainingConfig(preset="tiny", epochs=1, batch_size=6, crop_seconds=1.0, device="cpu")
    checkpoint = train_attacker(items, [], config, tmp_path / "attacker", resume=False)
    capsys.readouterr()
    out = tmp_path / "pr"
    cmd = ["analyses", "prerestore", "--model", str(checkpoint.best_checkpoint)]
    cmd += ["--protocol", str(proto), "--anonymized-dir", str(anon), "--out", str(out)]
    assert main([*cmd, "--family", "pitch", "--family", "power", "--mode", "trial"]) == 0
    printed = capsys.readouterr().out
    # Recognizer trained on original speech: the pitch family is lazy-informed, not semi-informed.
    assert "lazy-informed" in printed and "ignorant" in printed
    assert "semi-informed" not in printed
    assert "original enrollment" in printed
    data = json.loads((out / "prerestore.json").read_text())
    assert data["anonymizer_family"] == "pitch"  # read from anonymization.json
    assert data["enrollment_condition"] == "original"  # the default, Liu et al.'s
    assert data["attacker_training"] == "original"
    assert data["sources"]["enrollment"] == "original"
    assert data["sources"]["trial"].endswith("trial/manifest.jsonl")
    assert [(e["family"], e["mode"]) for e in data["entries"]] == [
        ("pitch", "trial"),
        ("power", "trial"),
    ]
    assert (out / "prerestore_per_parameter.png").is_file()
