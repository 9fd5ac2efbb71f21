"""GE2E as a trainable recognizer (the ``ge2e`` preset): it embeds exactly as Resemblyzer does
before training, the attacker trainer fine-tunes it with a stop label, and a zoo member
``pretrained: ge2e`` + ``finetune: true`` trains and is scored under its own name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from services.attacker.embeddings import embed_waveforms
from services.attacker.ge2e_model import load_ge2e_weights, partial_starts
from services.attacker.models import SpeakerEncoder
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_schedule import stop_reason
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from support.configs import OMIT, tiny_config

pytest.importorskip("resemblyzer", reason="resemblyzer is a dependency (pyproject.toml)")


def _waves(n_speakers: int, per_speaker: int, seconds: float = 2.5) -> list[tuple[Any, ...]]:
    items = []
    for i, speaker in enumerate(sample_speakers(n_speakers, seed=5)):
        for u in range(per_speaker):
            rng = np.random.default_rng([5, i, u])
            wave = synthesize_utterance(speaker, rng, duration_s=seconds + u / 3)
            items.append((wave, f"s{i}"))
    return items


def _wheel_encoder() -> SpeakerEncoder:
    encoder = SpeakerEncoder("ge2e")
    load_ge2e_weights(encoder.embedding.net)
    return encoder.eval()


def test_the_ge2e_preset_embeds_as_resemblyzer_does() -> None:
    from resemblyzer.audio import normalize_volume

    from services.attacker import ge2e

    items = _waves(2, 2)
    waves = [w for w, _ in items]
    cpu = torch.device("cpu")
    mine = embed_waveforms(_wheel_encoder(), waves, strategy="one_at_a_time", device=cpu)
    reference = ge2e._encoder()
    for wave, emb in zip(waves, mine, strict=True):
        theirs = reference.embed_utterance(normalize_volume(wave, -30, increase_only=True))
        assert float(emb @ theirs) > 0.9999
    # Padded batches (the GPU's strategy) give the same embeddings.
    padded = embed_waveforms(_wheel_encoder(), waves, strategy="bucketed", device=cpu)
    assert np.allclose((padded * mine).sum(axis=1), 1.0, atol=1e-5)
    # Resemblyzer's partials: one for 1.6 s, the last kept only when 75 % covered.
    assert partial_starts(161) == [0] and partial_starts(300) == [0, 77, 154]
    assert partial_starts(250) == [0, 77]  # a third partial would be 59 % covered


def test_finetuning_ge2e_trains_from_the_wheel_and_labels_its_stop(tmp_path: Path) -> None:
    items = _waves(3, 4)
    train = [it for i, it in enumerate(items) if i % 4]
    validation = [it for i, it in enumerate(items) if not i % 4]
    config = TrainingConfig(
        preset="ge2e", epochs=1, batch_size=4, crop_seconds=1.6, finetune_lr=1e-4, device="cpu"
    )
    trained = train_attacker(train, validation, config, tmp_path / "m")
    assert trained.preset.name == "ge2e" and len(trained.history) == 1
    # One epoch, the cap, its best epoch the last: a cap stop, by the rule every recognizer has.
    assert trained.stopped == "cap" == stop_reason(trained.history, config, trained.best_epoch)
    record = trained.history[0]
    assert record.ver_source is not None and np.isfinite(record.loss_source)
    # Fine-tuned from the wheel's weights (a warm-up from base_lr), not from random ones.
    assert 0 < record.learning_rate <= config.finetune_lr
    tuned = trained.load_encoder().embedding.net.state_dict()
    wheel = _wheel_encoder().embedding.net.state_dict()
    moved = [float((tuned[k] - wheel[k]).abs().max()) for k in wheel]
    assert max(moved) > 0 and max(moved) < 0.5
    with torch.inference_mode():
        emb = trained.load_encoder()(torch.from_numpy(items[0][0])[None])
    assert emb.shape == (1, 256) and torch.isfinite(emb).all()


def test_a_finetuned_ge2e_zoo_member_is_scored_under_its_name(tmp_path: Path) -> None:
    from services.pipeline.config import parse_config
    from services.pipeline.evaluation import run_evaluation

    cfg = parse_config(
        tiny_config(
            synthetic={"n_speakers": 12, "utts_per_speaker": 5, "enrollments_per_speaker": 2,
                       "trials_per_speaker": 2},
            scenarios=["original", "semi-informed"],
            training={"epochs": 1, "target_classifier": OMIT},
            backends=["cosine"],
            metrics={"bootstrap_resamples": 10, "legal": None},
            attackers=[{"name": "baseline"},
                       {"name": "ge2e-finetuned", "pretrained": "ge2e", "finetune": True}],
        )
    )  # fmt: skip
    result = run_evaluation(cfg, tmp_path / "out")
    rows = [r for r in result["rows"] if r["attacker"] == "ge2e-finetuned"]
    assert {(r["scenario"], r["backend"]) for r in rows} == {
        ("original", "cosine"),
        ("semi-informed", "cosine"),
    }
    assert all(0.0 <= r["eer_percent"] <= 100.0 for r in rows)
    entries = {k: t for k, t in result["training"].items() if t.get("attacker") == "ge2e-finetuned"}
    # Its recognizers (original and anonymized speech) trained one epoch each: cap stops.
    assert {t["condition"] for t in entries.values()} == {"original", "anonymized"}
    assert all(t["stopped"] == "cap" and len(t["history"]) == 1 for t in entries.values())
    worst = result["worst_case"]["semi-informed"]
    assert "ge2e-finetuned" in worst["attackers"]
    semi = {
        r["attacker"]: r["eer_percent"] for r in result["rows"] if r["scenario"] == "semi-informed"
    }
    assert worst["eer_percent"] == pytest.approx(min(semi.values()))
    assert worst["attacker"] == min(semi, key=lambda a: (semi[a], a))


def test_a_padded_batch_counts_each_utterances_own_frames() -> None:
    from resemblyzer.audio import normalize_volume

    from services.attacker import ge2e

    speakers = sample_speakers(2, seed=5)
    # 197 frames: the second partial is 75 % covered, so Resemblyzer keeps it; beside an
    # utterance more than twice as long, the relative length alone rounds to 196 frames.
    short = synthesize_utterance(speakers[0], np.random.default_rng(1), duration_s=3.0)[:31520]
    long = synthesize_utterance(speakers[1], np.random.default_rng(2), duration_s=5.0)[:80000]
    cpu = torch.device("cpu")
    padded = embed_waveforms(_wheel_encoder(), [short, long], strategy="bucketed", device=cpu)
    theirs = ge2e._encoder().embed_utterance(normalize_volume(short, -30, increase_only=True))
    assert float(padded[0] @ theirs) > 0.9999
