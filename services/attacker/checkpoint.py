"""The attacker's checkpoint files (``last.pt``, ``best.pt``) and loading a trained encoder.

A checkpoint is a plain ``torch.save`` dictionary that loads with ``weights_only=True`` (no
pickled code runs when a user-supplied checkpoint is opened). Keys:

``format`` (``CHECKPOINT_FORMAT``), ``preset`` (ModelPreset as JSON), ``config``
(TrainingConfig as JSON), ``speaker_labels`` / ``target_labels`` (class index -> label),
``epoch`` (1-based, completed), ``history`` (list of EpochRecord as JSON), ``encoder`` /
``source_head`` / ``target_head`` (state dicts; ``target_head`` is None in mode ``off``),
``best_epoch``, ``best_ver_source``, ``data_fingerprint``; and in ``last.pt`` only, for resuming:
``optimizer``, ``scheduler`` ({"step": global step}) and ``rng`` (torch, CUDA, NumPy and Python
random states).

``front_end`` (only for a recognizer whose front end is not fbanks: an SSL model): the front end's
record (``services.attacker.ssl.SSLFrontEnd.record``: model type, the SSL model's config as
JSON, waveform normalization). The SSL model's weights, fine-tuned, are part of ``encoder``, so
the recognizer is rebuilt from the checkpoint alone, without the folder it was loaded from.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from services.attacker.models import SpeakerEncoder
from services.attacker.presets import ModelPreset
from services.errors import InvalidInputError

CHECKPOINT_FORMAT = "unmask-attacker-v1"


def save_checkpoint(payload: dict[str, Any], path: Path) -> None:
    """Write ``payload`` atomically (temp file + rename), so a crash never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint (``weights_only=True``); ``InvalidInputError`` names a bad file."""
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{p}: checkpoint not found")
    try:
        payload = torch.load(p, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt/unsafe files
        # torch's own message is a paragraph about weights_only; the first clause is enough.
        cause = str(exc).split(". ")[0].splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(
            f"{p}: not a readable attacker checkpoint, expected a best.pt of `unmask evaluate`'s "
            f"train stage ({cause[:120]})"
        ) from exc
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise InvalidInputError(f"{p}: not an Unmask attacker checkpoint ({CHECKPOINT_FORMAT})")
    return payload


def encoder_from_checkpoint(payload: dict[str, Any]) -> SpeakerEncoder:
    """The trained ``SpeakerEncoder`` (eval mode, on CPU) of a loaded checkpoint."""
    preset = ModelPreset.model_validate(payload["preset"])
    record = payload.get("front_end")
    if record is not None:
        from services.attacker.ssl import front_end_from_record  # transformers only when needed

        encoder = SpeakerEncoder(preset, features=front_end_from_record(record))
    else:
        encoder = SpeakerEncoder(preset)
    encoder.load_state_dict(payload["encoder"])
    return encoder.eval()


def load_encoder(path: str | Path) -> SpeakerEncoder:
    """Load the trained ``SpeakerEncoder`` (eval mode, on CPU) from a checkpoint file."""
    return encoder_from_checkpoint(load_checkpoint(path))
