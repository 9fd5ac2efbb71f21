"""Acoustic features of the attacker's recognizer: 80-dim log-mel filterbanks at 16 kHz.

The filterbank is SpeechBrain's ``Fbank`` (25 ms Hann window, 10 ms hop, 400-point FFT, log-mel
in dB clipped 80 dB below each utterance's maximum), followed by per-utterance mean normalization
(SpeechBrain's ``InputNormalization(norm_type="sentence", std_norm=False)``, the SpAnE recipe).
Padded batches pass relative lengths so that the mean is taken over each utterance's own frames
only; padded frames are set to zero (the utterance mean) so they carry no information.
"""

from __future__ import annotations

import torch
from speechbrain.lobes.features import Fbank

from services.attacker.presets import N_MELS
from services.audio import SAMPLE_RATE_HZ

HOP_SAMPLES = SAMPLE_RATE_HZ // 100
"""Frame hop (10 ms) in samples."""


def valid_frame_mask(lengths: torch.Tensor, n_frames: int) -> torch.Tensor:
    """Boolean mask (batch, n_frames): True on each utterance's own frames.

    ``lengths`` are relative lengths in (0, 1] (SpeechBrain convention): an utterance covers
    ``round(length * n_frames)`` frames, at least one.
    """
    n_valid = torch.clamp(torch.round(lengths.float() * n_frames), min=1)
    frames = torch.arange(n_frames, device=lengths.device)
    return frames.unsqueeze(0) < n_valid.unsqueeze(1)


def mean_normalize(feats: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Subtract each utterance's mean feature vector over its valid frames.

    ``feats``: (batch, frames, bands); ``lengths``: relative lengths (batch,) or None (no padding).
    Padded frames come out as exactly zero.
    """
    if lengths is None:
        return feats - feats.mean(dim=1, keepdim=True)
    mask = valid_frame_mask(lengths, feats.shape[1]).to(feats.dtype).unsqueeze(-1)
    count = mask.sum(dim=1, keepdim=True)
    mean = (feats * mask).sum(dim=1, keepdim=True) / count
    return (feats - mean) * mask


class FilterbankFeatures(torch.nn.Module):
    """Waveforms (batch, samples), 16 kHz -> mean-normalized log-mel fbanks (batch, frames, 80)."""

    def __init__(self, n_mels: int = N_MELS) -> None:
        super().__init__()
        self.n_mels = n_mels
        self.fbank = Fbank(n_mels=n_mels, sample_rate=SAMPLE_RATE_HZ)

    def forward(self, wavs: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Features of ``wavs`` (float, batch x samples); ``lengths`` relative, or None."""
        feats = self.fbank(wavs)
        return mean_normalize(feats, lengths)
