"""The VoicePrivacy attackers as zoo members: recipes, local weights only, tiny training runs.

The SSL model and the pretrained verifier are tiny random models the tests save to folders
(``tests.unit.test_attacker_front_ends``); nothing is downloaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from test_attacker_front_ends import HIDDEN, save_tiny_ecapa, save_tiny_ssl, utterances

from cli.main import main
from services.attacker.checkpoint import load_checkpoint
from services.attacker.recipes import resolve_training, zoo_specs
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.pipeline.config import EvaluationConfig
from services.settings import get_settings

TINY = {"preset": "tiny", "batch_size": 6, "crop_seconds": 1.0, "device": "cpu"}
"""What the tests change of a recipe: the model size and batch (the CPU's), nothing else."""


@pytest.fixture
def weights(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    ssl = save_tiny_ssl(tmp_path / "wavlm-large")
    state = save_tiny_ecapa(tmp_path / "verifier", input_size=HIDDEN)
    assert state
    monkeypatch.setenv("UNMASK_VPC2026_SSL_MODEL", str(ssl))
    monkeypatch.setenv("UNMASK_VPC2026_VERIFIER", str(tmp_path / "verifier"))
    get_settings.cache_clear()
    yield ssl, tmp_path / "verifier"
    get_settings.cache_clear()


@pytest.fixture
def no_weights(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("UNMASK_VPC2026_SSL_MODEL", raising=False)
    monkeypatch.delenv("UNMASK_VPC2026_VERIFIER", raising=False)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_vpc2024_is_the_2024_plan(no_weights: None) -> None:
    (spec,) = zoo_specs("vpc2024")
    cfg = resolve_training(TrainingConfig(), spec)
    assert (cfg.preset, cfg.epochs, cfg.batch_size, cfg.crop_seconds) == ("vpc", 10, 256, 3.0)
    assert (cfg.lr, cfg.base_lr, cfg.lr_step_size, cfg.optimizer) == (0.01, 1e-8, 65000, "adam")
    assert (cfg.aam_margin, cfg.aam_scale) == (0.2, 30.0)
    assert (
        cfg.augmentation is None and cfg.pretrained_ecapa_path is None and cfg.front_end == "fbank"
    )
    assert spec.backends == ["cosine"]


def test_vpc2026_is_the_2026_plan_from_local_folders(weights: tuple[Path, Path]) -> None:
    (spec,) = zoo_specs("vpc2026")
    cfg = resolve_training(TrainingConfig(), spec)
    assert (cfg.preset, cfg.front_end, cfg.epochs, cfg.batch_size) == ("standard", "ssl", 2, 32)
    assert (cfg.optimizer, cfg.lr, cfg.weight_decay) == ("adamw", 0.01, 0.01)
    assert cfg.ssl_model_path == weights[0] and cfg.pretrained_ecapa_path == weights[1]
    aug = cfg.augmentation
    assert aug is not None and aug.drop_freq_prob > 0 and aug.drop_chunk_prob > 0
    assert aug.noise_prob == 0 and aug.reverb_prob == 0 and aug.speeds == (1.0,)
    assert [s.name for s in zoo_specs("voiceprivacy")] == ["vpc2024", "vpc2026"]


def test_without_weights_vpc2026_is_a_config_error_and_the_zoo_keeps_vpc2024(
    no_weights: None,
) -> None:
    assert [s.name for s in zoo_specs("voiceprivacy")] == ["vpc2024"]
    with pytest.raises(ValueError, match="UNMASK_VPC2026_SSL_MODEL"):
        EvaluationConfig.model_validate({"attackers": "vpc2026"})


@pytest.mark.parametrize("missing", ["settings", "folder"])
def test_missing_weights_fail_before_any_work(
    missing: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if missing == "folder":
        monkeypatch.setenv("UNMASK_VPC2026_SSL_MODEL", str(tmp_path / "no-wavlm"))
        monkeypatch.setenv("UNMASK_VPC2026_VERIFIER", str(tmp_path / "no-verifier"))
    else:
        monkeypatch.delenv("UNMASK_VPC2026_SSL_MODEL", raising=False)
        monkeypatch.delenv("UNMASK_VPC2026_VERIFIER", raising=False)
    get_settings.cache_clear()
    try:
        config = tmp_path / "eval.yaml"
        config.write_text(yaml.safe_dump({"name": "x", "attackers": "vpc2026"}))
        out = tmp_path / "run"
        assert main(["evaluate", str(config), "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("unmask: ")
        assert ("UNMASK_VPC2026_SSL_MODEL" if missing == "settings" else "no-wavlm") in err[0]
        assert not out.exists()
    finally:
        get_settings.cache_clear()


def test_both_train_on_tiny_models(weights: tuple[Path, Path], tmp_path: Path) -> None:
    train, val = utterances(), utterances(per_speaker=1, seed=1)
    for name in ("vpc2024", "vpc2026"):
        (spec,) = zoo_specs(name)
        recipe = resolve_training(TrainingConfig(), spec)
        cfg = recipe.model_copy(update={**TINY, "epochs": 1 if name == "vpc2024" else 2})
        result = train_attacker(train, val, cfg, tmp_path / name, resume=False)
        assert len(result.history) == cfg.epochs
        assert all(np.isfinite(r.loss_source) for r in result.history)
        checkpoint = load_checkpoint(result.best_checkpoint)
        assert checkpoint["config"]["optimizer" if name == "vpc2026" else "preset"] == (
            "adamw" if name == "vpc2026" else "tiny"
        )
        if name == "vpc2026":
            # Fine-tuned from the verifier: its weights moved, but started from the folder's.
            start = torch.load(weights[1] / "embedding_model.ckpt", weights_only=True)
            conv = "blocks.0.conv.conv.weight"
            trained = checkpoint["encoder"][f"embedding.net.{conv}"]
            assert trained.shape == start[conv].shape
            assert not torch.equal(trained, start[conv])
            assert float((trained - start[conv]).abs().mean()) < float(start[conv].abs().mean())


def test_a_recipe_zoo_refuses_training_fields_it_would_ignore_and_keeps_the_others() -> None:
    from services.attacker.recipes import resolve_training, zoo_specs
    from services.errors import ConfigError
    from services.pipeline.config import parse_config

    with pytest.raises(ConfigError, match=r"sets training\.epochs, training\.preset itself"):
        parse_config({"attackers": "voiceprivacy", "training": {"epochs": 3, "preset": "tiny"}})
    # Fields the recipe does not set are kept (patience here), and a stored config (every
    # field dumped at its value) parses again.
    cfg = parse_config({"attackers": "vpc2024", "training": {"patience": 2}})
    resolved = resolve_training(cfg.training, zoo_specs(cfg.attackers)[0])
    assert resolved.patience == 2 and resolved.epochs == 10
    assert parse_config(cfg.model_dump(mode="json")) == cfg
    # A hand-made zoo may override what it likes: only the published recipes refuse.
    parse_config(
        {"attackers": [{"name": "a", "training": {"epochs": 2}}], "training": {"epochs": 3}}
    )
