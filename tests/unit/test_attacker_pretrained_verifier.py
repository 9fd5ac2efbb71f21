"""An operator's SpeechBrain ECAPA folder scored as it is (services/attacker/pretrained.py):
the preset it fits, deterministic embeddings, and the zoo's ``pretrained: ecapa`` attacker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_attacker_front_ends import save_tiny_ecapa

from services.attacker.pretrained import (
    ecapa_embeddings,
    ecapa_model_key,
    matching_preset,
)
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.errors import ConfigError
from services.pipeline.config import parse_config


def test_an_ecapa_folder_is_scored_as_it_is_with_the_preset_it_fits(tmp_path: Path) -> None:
    save_tiny_ecapa(tmp_path / "ecapa")
    assert matching_preset(tmp_path / "ecapa").name == "tiny"
    speaker = sample_speakers(1, seed=1)[0]
    waves = [
        synthesize_utterance(speaker, np.random.default_rng(i), duration_s=1.5) for i in range(3)
    ]
    emb = ecapa_embeddings(tmp_path / "ecapa", waves)
    assert emb.shape == (3, matching_preset(tmp_path / "ecapa").embedding_dim)
    np.testing.assert_allclose(ecapa_embeddings(tmp_path / "ecapa", waves[:1]), emb[:1], atol=1e-5)
    key = ecapa_model_key(tmp_path / "ecapa")
    save_tiny_ecapa(tmp_path / "other", channels=(32, 32, 32, 32, 96))
    assert ecapa_model_key(tmp_path / "other") != key


def test_a_folder_no_preset_fits_is_named(tmp_path: Path) -> None:
    save_tiny_ecapa(tmp_path / "odd", channels=(48, 48, 48, 48, 144))
    with pytest.raises(ConfigError, match="fits no ECAPA preset"):
        matching_preset(tmp_path / "odd")


def test_the_zoo_names_the_folder_of_a_pretrained_ecapa(tmp_path: Path) -> None:
    ok = parse_config(
        {
            "attackers": [
                {"name": "baseline"},
                {"name": "vox", "pretrained": "ecapa", "pretrained_path": str(tmp_path)},
            ]
        }
    )
    assert isinstance(ok.attackers, list) and ok.attackers[1].pretrained_path == tmp_path
    for bad in (
        {"name": "vox", "pretrained": "ecapa"},
        {"name": "g", "pretrained": "ge2e", "pretrained_path": str(tmp_path)},
    ):
        with pytest.raises(ConfigError, match="pretrained_path"):
            parse_config({"attackers": [{"name": "baseline"}, bad]})
