"""The VoicePrivacy Challenge attackers as zoo members: ``vpc2024`` and ``vpc2026``.

Each is an `AttackerSpec` whose training overrides are the challenge's published recipe (the
sources of every value are cited in docs/attacker.md, "The VoicePrivacy attackers"):

* ``vpc2024``: ECAPA-TDNN with 512 channels and 192-dim embeddings (preset ``vpc``), AAM-softmax
  margin 0.2 scale 30, 3 s random crops, Adam (weight decay 2e-6) with a cyclic learning rate
  from 1e-8 up to 0.01 over half-cycles of 65000 steps, batch 256, 10 epochs, from scratch, no
  augmentation, cosine scoring;
* ``vpc2026``: a learned weighted sum of all hidden layers of a local WavLM-Large
  (``UNMASK_VPC2026_SSL_MODEL``) feeding a 1024-channel ECAPA (preset ``standard``) initialized
  from a local pretrained verifier (``UNMASK_VPC2026_VERIFIER``), fine-tuned for 2 epochs with
  AdamW (weight decay 0.01, learning rate 0.01), batch 32, DropFreq and DropChunk augmentation,
  cosine scoring. Without both folders configured it is unavailable: naming it is a config
  error, never a download.

The named zoo ``voiceprivacy`` is both where their weights exist (``vpc2024`` needs none).
Members are given as `AttackerSpec` fields (``zoos.py`` builds the specs, so this module does not
import it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.attacker.training_config import AugmentationConfig
from services.settings import get_settings

VPC2024 = "vpc2024"
VPC2026 = "vpc2026"

VPC2024_TRAINING: dict[str, Any] = {
    "preset": "vpc",
    "epochs": 10,
    "batch_size": 256,
    "crop_seconds": 3.0,
    "lr": 0.01,
    "base_lr": 1e-8,
    "lr_step_size": 65000,
    "weight_decay": 2e-6,
    "aam_margin": 0.2,
    "aam_scale": 30.0,
    "target_classifier": "off",
}
"""The 2024 evaluation plan's attacker (trained from scratch, no augmentation)."""

VPC2026_AUGMENTATION = AugmentationConfig(
    speeds=(1.0,), noise_prob=0.0, reverb_prob=0.0, drop_freq_prob=0.5, drop_chunk_prob=0.5
)
"""DropFreq and DropChunk only (band and chunk sizes: SpeechBrain's defaults, as Unmask's)."""

VPC2026_TRAINING: dict[str, Any] = {
    "preset": "standard",
    "front_end": "ssl",
    "epochs": 2,
    "batch_size": 32,
    "crop_seconds": 3.0,
    "optimizer": "adamw",
    "lr": 0.01,
    "weight_decay": 0.01,
    "aam_margin": 0.2,
    "aam_scale": 30.0,
    "target_classifier": "off",
    "augmentation": VPC2026_AUGMENTATION.model_dump(mode="json"),
}
"""The 2026 evaluation plan's attacker, without its two local folders."""


def vpc2024_attacker() -> dict[str, Any]:
    """The VoicePrivacy 2024 attacker's `AttackerSpec` fields (no weights needed)."""
    return {"name": VPC2024, "training": dict(VPC2024_TRAINING), "backends": ["cosine"]}


def vpc2026_folders() -> tuple[Path, Path] | None:
    """(WavLM-Large folder, pretrained verifier folder) from the settings, or None if unset."""
    settings = get_settings()
    if settings.vpc2026_ssl_model is None or settings.vpc2026_verifier is None:
        return None
    return settings.vpc2026_ssl_model, settings.vpc2026_verifier


def vpc2026_attacker() -> dict[str, Any]:
    """The VoicePrivacy 2026 attacker's `AttackerSpec` fields; ``ValueError`` (one line) when
    its folders are not set.

    The folders themselves are checked with the rest of the config (``config_checks``) before
    any work: a missing or mismatched folder is named there.
    """
    folders = vpc2026_folders()
    if folders is None:
        raise ValueError(
            "the vpc2026 attacker needs local weights: set UNMASK_VPC2026_SSL_MODEL (a WavLM-Large "
            "folder) and UNMASK_VPC2026_VERIFIER (a pretrained ECAPA-TDNN folder); nothing is "
            "downloaded"
        )
    ssl, verifier = folders
    training = {
        **VPC2026_TRAINING,
        "ssl_model_path": str(ssl),
        "pretrained_ecapa_path": str(verifier),
    }
    return {"name": VPC2026, "training": training, "backends": ["cosine"]}


def voiceprivacy_zoo() -> list[dict[str, Any]]:
    """``vpc2024``, and ``vpc2026`` when its weight folders are configured."""
    zoo = [vpc2024_attacker()]
    if vpc2026_folders() is not None:
        zoo.append(vpc2026_attacker())
    return zoo
