"""The trained ASR's features and their frequency warp (VTLP, ``services.utility.asr``): the log-mel
bands, the frames stacked into one encoder frame, and the per-epoch warp factors of the training
augmentation."""

from __future__ import annotations

import math

import numpy as np
import torch

from services.audio import SAMPLE_RATE_HZ
from services.utility.config import AsrSpec

N_MELS = 40
"""Log-mel bands of the trained recognizer's features."""
STACK = 3
"""Consecutive 10 ms frames stacked into one encoder frame (30 ms)."""


def band_centres_hz() -> np.ndarray:
    """Centre frequencies (Hz) of the recognizer's ``N_MELS`` log-mel bands (SpeechBrain
    ``Filterbank``: equally spaced on the mel scale between 0 Hz and the Nyquist frequency)."""
    mel = np.linspace(0.0, 2595.0 * np.log10(1.0 + (SAMPLE_RATE_HZ / 2) / 700.0), N_MELS + 2)
    return (700.0 * (10.0 ** (mel / 2595.0) - 1.0))[1:-1]


_MEL_STEP = 2595.0 * np.log10(1.0 + (SAMPLE_RATE_HZ / 2) / 700.0) / (N_MELS + 1)


def warp_positions(alphas: np.ndarray) -> np.ndarray:
    """Fractional source band index (batch, N_MELS) of each band after warping by ``alphas``
    (batch,), unit-free factors: band j (centre f_j Hz) takes the spectrum at f_j / alpha Hz, so
    energy at f Hz moves to alpha * f Hz. Clamped to the band range (the edge band is repeated
    beyond it, as when a shift empties or fills the top of the spectrum)."""
    src_hz = band_centres_hz()[None, :] / np.asarray(alphas, dtype=np.float64)[:, None]
    mel = 2595.0 * np.log10(1.0 + src_hz / 700.0)
    return np.clip(mel / _MEL_STEP - 1.0, 0.0, N_MELS - 1.0)


def warp_features(feats: torch.Tensor, alphas: np.ndarray) -> torch.Tensor:
    """Frequency-warp (VTLP) padded stacked features (batch, frames, N_MELS * STACK) by one
    factor per utterance (``alphas``, (batch,), unit-free): linear interpolation along the band
    axis of the log-mels, all frames at once. Exact for mean-normalized features (interpolation
    along bands commutes with the per-band mean over time); ``alpha == 1`` is the identity."""
    pos = torch.from_numpy(warp_positions(alphas)).to(feats.device, feats.dtype)  # (b, bands)
    lo = pos.floor().long().clamp(max=N_MELS - 2)
    w = pos - lo.to(pos.dtype)
    b, t, _ = feats.shape
    x = feats.reshape(b, t * STACK, N_MELS)
    lo_i = lo[:, None, :].expand(b, t * STACK, N_MELS)
    out = (
        torch.gather(x, 2, lo_i) * (1.0 - w[:, None, :])
        + torch.gather(x, 2, lo_i + 1) * w[:, None, :]
    )
    return out.reshape(b, t, N_MELS * STACK)


def draw_warps(spec: AsrSpec, epoch: int, n: int) -> np.ndarray:
    """The warp factors (n,) of one epoch: log-uniform in ``spec.warp_range`` from a generator
    seeded by (seed, epoch), so training stays deterministic; ones when the warp is off."""
    if not spec.warp_enabled or spec.warp_range is None:
        return np.ones(n)
    low, high = spec.warp_range
    rng = np.random.default_rng([spec.seed, 11, epoch])
    return np.exp(rng.uniform(math.log(low), math.log(high), n))
