"""`unmask analyses prerestore` on a protocol with pitch-anonymized trials."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from cli.main import main
from services.attacker.training import TrainingConfig, TrainingItem, train_attacker
from services.corpus.synthetic import sample_speakers, synthesize_utterance

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def single_thread() -> Iterator[None]:
    # Two threads on the shared 2-core machine spin against other jobs (much slower).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


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
    assert "semi-informed" in printed and "ignorant" in printed
    data = json.loads((out / "prerestore.json").read_text())
    assert data["anonymizer_family"] == "pitch"  # read from anonymization.json
    assert data["sources"]["enrollment"] == "original"
    assert data["sources"]["trial"].endswith("trial/manifest.jsonl")
    assert [(e["family"], e["mode"]) for e in data["entries"]] == [
        ("pitch", "trial"),
        ("power", "trial"),
    ]
    assert (out / "prerestore_per_parameter.png").is_file()
    assert main([*cmd, "--mode", "both"]) == 2
    assert "--mode" in capsys.readouterr().err
