"""A pretrained verifier as an attacker: Resemblyzer's GE2E voice encoder, never trained here.

Resemblyzer (``pip install resemblyzer``, Apache-2.0) ships the weights of a GE2E speaker encoder
(Wan et al. 2018: a 3-layer LSTM over 40-band mel frames, 256-dim embeddings, trained on
thousands of speakers) inside its wheel (``resemblyzer/pretrained.pt``, 17 MB): loading it reads
a file of the installed package and never touches the network. Unmask does not train it; it is
the attacker anyone can ``pip install``, used as

- an ignorant attacker (original enrollment, anonymized trials) and a lazy-informed one
  (anonymized enrollment and trials): the same embeddings, scored with cosine;
- the **challenger** of every verdict (``services.pipeline.challenger``): a cheap attacker of
  another family scored on the headline's trials.

Each utterance goes through Resemblyzer's own preprocessing (volume normalization, long
silences trimmed by WebRTC VAD; the untrimmed waveform when the VAD keeps less than
``MIN_SECONDS``) and ``VoiceEncoder.embed_utterance`` (the mean of 1.6 s partial embeddings,
L2-normalized). Deterministic on CPU: the same audio gives the same embedding.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from services.errors import ConfigError

GE2E = "ge2e"
"""The attacker's name in result rows, tables and the challenger block."""

PACKAGE = "resemblyzer"
WEIGHTS = "pretrained.pt"
SAMPLE_RATE = 16000
"""Hz: what the encoder expects (and what Unmask's audio is)."""
EMBEDDING_DIM = 256
MIN_SECONDS = 0.5
"""Below this many seconds of VAD-kept speech the untrimmed waveform is embedded instead."""


def _weights_path() -> Path:
    try:
        import resemblyzer
    except ImportError as exc:  # the package is a dependency; a broken install names itself
        raise ConfigError(
            f"the GE2E attacker needs the {PACKAGE} package (pip install -c constraints.txt "
            f"{PACKAGE}): {exc}"
        ) from exc
    path = Path(resemblyzer.__file__).resolve().parent / WEIGHTS
    if not path.is_file():
        raise ConfigError(f"the GE2E attacker's weights are missing from the wheel: {path}")
    return path


@lru_cache(maxsize=1)
def model_key() -> str:
    """What the embeddings depend on: package version and the weights' SHA-256 (a stage key)."""
    path = _weights_path()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return f"pretrained:{GE2E}:{PACKAGE}=={importlib.metadata.version(PACKAGE)}:{digest}"


@lru_cache(maxsize=1)
def _encoder() -> Any:
    from resemblyzer import VoiceEncoder

    return VoiceEncoder(device="cpu", verbose=False, weights_fpath=_weights_path())


def _prepared(wave: np.ndarray) -> np.ndarray:
    from resemblyzer import preprocess_wav

    if not np.any(wave):
        return wave  # silence: the volume normalization would divide by zero
    with np.errstate(all="ignore"):
        trimmed = np.asarray(preprocess_wav(wave), dtype=np.float32)  # already 16 kHz
    if trimmed.size < MIN_SECONDS * SAMPLE_RATE or not np.isfinite(trimmed).all():
        return wave
    return trimmed


def ge2e_embeddings(waveforms: Sequence[np.ndarray]) -> np.ndarray:
    """GE2E embeddings (n, 256) float32, L2-normalized, of 16 kHz mono waveforms (input order).

    Raises ``ConfigError`` when Resemblyzer or its weights are missing, ``ValueError`` for an
    empty or non-finite waveform.
    """
    waves = [np.asarray(w, dtype=np.float32) for w in waveforms]
    for i, wave in enumerate(waves):
        if wave.ndim != 1 or wave.size == 0 or not np.isfinite(wave).all():
            raise ValueError(f"waveform {i}: expected a non-empty finite 1-D array")
    encoder = _encoder()
    out = np.zeros((len(waves), EMBEDDING_DIM), dtype=np.float32)
    for i, wave in enumerate(waves):
        out[i] = encoder.embed_utterance(_prepared(wave))
    return out
