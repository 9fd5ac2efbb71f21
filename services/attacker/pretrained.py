"""Initializing the attacker's ECAPA-TDNN from a local SpeechBrain checkpoint folder.

``TrainingConfig.pretrained_ecapa_path`` names a folder with SpeechBrain's layout
(``speechbrain/spkrec-ecapa-voxceleb``: ``hyperparams.yaml`` + ``embedding_model.ckpt``); the
recognizer starts from those weights and is fine-tuned on the anonymized training data. The
state dict is read with ``torch.load(weights_only=True)`` (no pickled code runs) and compared
tensor by tensor with the model the preset builds: a missing, unexpected or differently shaped
parameter raises ``ConfigError`` naming it and both shapes, before the first training step.
Only the embedding network is taken; the checkpoint's classifier (other speakers) is not.

The same folder also serves untrained (``ecapa_embeddings``): an operator's pretrained verifier
scored as it is, the zoo's ``pretrained: ecapa`` attacker (``services.pipeline.zoo``); its preset
is the ECAPA preset whose shapes the checkpoint fits (``matching_preset``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from services.attacker.local_weights import ECAPA_WEIGHTS, check_ecapa_folder
from services.attacker.models import EmbeddingModel, SpeakerEncoder
from services.attacker.presets import PRESETS, ModelPreset
from services.errors import ConfigError

_SHOWN = 5
"""Most mismatches named in one error message."""


def read_ecapa_state(folder: str | Path) -> dict[str, torch.Tensor]:
    """The state dict in ``folder/embedding_model.ckpt`` (CPU tensors).

    Raises ``ConfigError`` naming the file when the folder or file is missing or the file is
    not a readable tensor dictionary.
    """
    path = check_ecapa_folder(Path(folder)) / ECAPA_WEIGHTS
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt or unsafe files
        cause = str(exc).split(". ")[0].splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"pretrained_ecapa_path: {path} is not a readable SpeechBrain checkpoint "
            f"({cause[:160]})"
        ) from exc
    if isinstance(state, dict) and "model" in state and isinstance(state["model"], dict):
        state = state["model"]  # some recipes wrap the state dict
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise ConfigError(f"pretrained_ecapa_path: {path} does not hold a state dict of tensors")
    return state


def state_mismatches(
    expected: dict[str, torch.Tensor], found: dict[str, torch.Tensor]
) -> tuple[list[str], list[str], list[tuple[str, tuple[int, ...], tuple[int, ...]]]]:
    """(missing keys, unexpected keys, (key, checkpoint shape, model shape) differences).

    BatchNorm's ``num_batches_tracked`` counters are not compared: older SpeechBrain
    checkpoints lack them and they do not change the model's output.
    """

    def relevant(keys: set[str]) -> list[str]:
        return sorted(k for k in keys if not k.endswith("num_batches_tracked"))

    missing = relevant(set(expected) - set(found))
    unexpected = relevant(set(found) - set(expected))
    shapes = [  # in the model's order: the first layer that differs is named first
        (k, tuple(found[k].shape), tuple(expected[k].shape))
        for k in expected
        if k in found and tuple(found[k].shape) != tuple(expected[k].shape)
    ]
    return missing, unexpected, shapes


def _describe(
    path: Path,
    missing: list[str],
    unexpected: list[str],
    shapes: list[tuple[str, tuple[int, ...], tuple[int, ...]]],
    model_name: str,
) -> str:
    parts = []
    if shapes:
        shown = ", ".join(
            f"{k}: checkpoint {list(have)} vs model {list(want)}"
            for k, have, want in shapes[:_SHOWN]
        )
        more = f" (+{len(shapes) - _SHOWN} more)" if len(shapes) > _SHOWN else ""
        parts.append(f"{len(shapes)} parameters differ in shape: {shown}{more}")
    if missing:
        parts.append(
            f"{len(missing)} model parameters are not in the checkpoint: {missing[:_SHOWN]}"
        )
    if unexpected:
        parts.append(
            f"{len(unexpected)} checkpoint parameters have no place in the model: "
            f"{unexpected[:_SHOWN]}"
        )
    return (
        f"pretrained_ecapa_path: {path} does not fit the {model_name}: "
        + "; ".join(parts)
        + ". Choose the "
        "preset (and front end) the checkpoint was trained with "
        "(speechbrain/spkrec-ecapa-voxceleb: preset standard, front_end fbank)"
    )


def load_pretrained_ecapa(model: EmbeddingModel, folder: str | Path) -> None:
    """Copy the ECAPA weights of a SpeechBrain checkpoint folder into ``model`` (in place).

    Every parameter and buffer of ``model.net`` must be present with the same shape, and the
    checkpoint must hold nothing else (apart from ``num_batches_tracked`` counters); otherwise
    ``ConfigError`` names the first mismatches with both shapes and ``model`` is unchanged.
    """
    if model.preset.architecture != "ecapa":
        raise ConfigError(
            f"pretrained_ecapa_path: preset {model.preset.name!r} is an x-vector; a SpeechBrain "
            "ECAPA checkpoint initializes only an ECAPA preset (standard, vpc or tiny)"
        )
    path = Path(folder) / ECAPA_WEIGHTS
    state = read_ecapa_state(folder)
    expected = model.net.state_dict()
    missing, unexpected, shapes = state_mismatches(expected, state)
    if missing or unexpected or shapes:
        name = f"{model.preset.name} preset's ECAPA (input {model.preset.n_mels})"
        raise ConfigError(_describe(path, missing, unexpected, shapes, name))
    kept = {k: v for k, v in state.items() if k in expected}
    model.net.load_state_dict(kept, strict=False)


def matching_preset(folder: str | Path) -> ModelPreset:
    """The ECAPA preset (``standard``, ``vpc``, ``tiny``, ...) whose every parameter shape the
    checkpoint in ``folder`` fits; ``ConfigError`` naming the folder when none does."""
    state = read_ecapa_state(folder)
    for preset in PRESETS.values():
        if preset.architecture != "ecapa":
            continue
        expected = EmbeddingModel(preset).net.state_dict()
        if not any(state_mismatches(expected, state)):
            return preset
    raise ConfigError(
        f"pretrained ecapa: {Path(folder) / ECAPA_WEIGHTS} fits no ECAPA preset "
        f"({', '.join(p.name for p in PRESETS.values() if p.architecture == 'ecapa')}): "
        "80-dim fbank input and the presets' channels are needed"
    )


def ecapa_model_key(folder: str | Path) -> str:
    """What the embeddings of an ECAPA folder depend on: its weights' SHA-256 (a stage key)."""
    path = check_ecapa_folder(Path(folder)) / ECAPA_WEIGHTS
    return f"pretrained:ecapa:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"


def ecapa_encoder(folder: str | Path) -> SpeakerEncoder:
    """The recognizer of an ECAPA folder, untrained here (eval mode, CPU, fbank front end)."""
    encoder = SpeakerEncoder(matching_preset(folder))
    load_pretrained_ecapa(encoder.embedding, folder)
    return encoder.eval()


def ecapa_embeddings(folder: str | Path, waveforms: Sequence[np.ndarray]) -> np.ndarray:
    """Embeddings (n, dim) float32 of 16 kHz waveforms by the ECAPA of ``folder``, as it is."""
    from services.attacker.embeddings import extract_embeddings

    return extract_embeddings(ecapa_encoder(folder), waveforms, device="cpu")
