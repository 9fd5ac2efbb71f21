"""Resemblyzer's GE2E voice encoder as a trainable recognizer: the ``ge2e`` preset.

The untrained verifier (``services.attacker.ge2e``) runs Resemblyzer's own ``VoiceEncoder``. To
fine-tune it on anonymized speech (the zoo's ``pretrained: ge2e`` + ``finetune: true`` attacker)
the same network is rebuilt here as the embedding model of a ``SpeakerEncoder``, so that the
attacker trainer (``training.py``: AAM-softmax head, cap, patience, checkpoints, resume), the
embed stage and the checkpoints serve it as they serve the ECAPA:

- ``GE2EMelFeatures``: waveforms (batch, samples) at 16 kHz -> Resemblyzer's features, 40 mel
  bands of the power spectrum (25 ms Hann window, 10 ms hop, centred frames, no log), after its
  volume normalization (quiet audio raised to -30 dBFS, loud audio left as it is). Resemblyzer's
  WebRTC VAD trimming of long silences is not applied: it changes the audio's length, which a
  batch of crops cannot; the fine-tuned recognizer therefore embeds the untrimmed audio.
- ``GE2ENet``: 3-layer LSTM (256 units) -> linear 256 -> ReLU -> L2 normalization of the last
  layer's final hidden state. In training mode it embeds the whole crop (1.6 s: the partial
  length GE2E was trained on); in eval mode it embeds an utterance as Resemblyzer's
  ``embed_utterance`` does: the normalized mean of 1.6 s partials (160 frames) taken every 77
  frames (rate 1.3 per second), the last partial kept when it covers at least 75 % of its frames.

``load_ge2e_weights`` copies the weights shipped in Resemblyzer's wheel into a ``GE2ENet``: the
trainer starts every ``ge2e`` recognizer there (never from random weights).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from services.attacker.ge2e import SAMPLE_RATE, _weights_path
from services.errors import ConfigError

N_MELS = 40
HIDDEN = 256
LAYERS = 3
WINDOW_SAMPLES = 400
"""25 ms at 16 kHz."""
HOP_SAMPLES = 160
"""10 ms at 16 kHz."""
PARTIAL_FRAMES = 160
"""1.6 s: the length of the partial utterances GE2E was trained and embeds on."""
PARTIAL_STEP = round(SAMPLE_RATE / 1.3 / HOP_SAMPLES)
"""Frames between partial starts (Resemblyzer's rate of 1.3 partials per second: 77)."""
MIN_COVERAGE = 0.75
"""The last partial is kept when at least this share of its frames is speech (not padding)."""
TARGET_DBFS = -30.0
"""Resemblyzer's volume normalization target (dB relative to full scale)."""
CROP_SECONDS = PARTIAL_FRAMES * HOP_SAMPLES / SAMPLE_RATE
"""The training crop that is one partial (1.6 s)."""


@lru_cache(maxsize=1)
def _mel_basis() -> np.ndarray:
    import librosa

    basis: np.ndarray = librosa.filters.mel(sr=SAMPLE_RATE, n_fft=WINDOW_SAMPLES, n_mels=N_MELS)
    return basis.astype(np.float32)


class GE2EMelFeatures(torch.nn.Module):
    """Waveforms (batch, samples), 16 kHz -> Resemblyzer's mel frames (batch, frames, 40)."""

    output_dim = N_MELS
    mel: torch.Tensor
    window: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        # Buffers, not parameters, and not in the state dict: they are fixed by the definition.
        self.register_buffer("mel", torch.from_numpy(_mel_basis()), persistent=False)
        self.register_buffer("window", torch.hann_window(WINDOW_SAMPLES), persistent=False)

    def forward(self, wavs: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Mel power frames of ``wavs``; ``lengths`` (relative, or None) bound each row's
        volume measurement (padding is zeros and stays zeros)."""
        wavs = wavs.float()
        n = wavs.shape[1]
        if lengths is None:
            valid = torch.full((wavs.shape[0],), float(n), device=wavs.device)
        else:
            valid = torch.clamp(torch.round(lengths.float() * n), min=1.0)
        power = (wavs**2).sum(dim=1) / valid
        dbfs = 10.0 * torch.log10(torch.clamp(power, min=1e-20))
        # Raise quiet audio to the target, never lower loud audio (increase_only); silence stays.
        gain = torch.where(
            (dbfs < TARGET_DBFS) & (power > 0),
            10.0 ** ((TARGET_DBFS - dbfs) / 20.0),
            torch.ones_like(dbfs),
        )
        spec = torch.stft(
            wavs * gain.unsqueeze(1),
            n_fft=WINDOW_SAMPLES,
            hop_length=HOP_SAMPLES,
            win_length=WINDOW_SAMPLES,
            window=self.window,
            center=True,
            pad_mode="constant",
            return_complex=True,
        )
        frames = torch.matmul(self.mel, spec.abs() ** 2)  # (batch, 40, frames)
        return frames.transpose(1, 2)

    def frame_lengths(self, lengths: torch.Tensor, n_samples: int) -> torch.Tensor:
        """Relative lengths of each row's own frames (1 + samples // hop, centred frames) in a
        batch of ``n_samples`` samples, from its relative lengths in samples."""
        samples = torch.clamp(torch.round(lengths.float() * n_samples), min=1.0)
        own = 1.0 + torch.div(samples, HOP_SAMPLES, rounding_mode="floor")
        return own / float(1 + n_samples // HOP_SAMPLES)


def partial_starts(n_frames: int) -> list[int]:
    """First frames of the partials of an utterance of ``n_frames`` frames (Resemblyzer's
    ``compute_partial_slices``: a partial every ``PARTIAL_STEP`` frames; the last one dropped
    when it covers less than ``MIN_COVERAGE`` of its frames and is not the only one)."""
    steps = max(1, n_frames - PARTIAL_FRAMES + PARTIAL_STEP + 1)
    starts = list(range(0, steps, PARTIAL_STEP))
    coverage = (n_frames - 1 - starts[-1]) / PARTIAL_FRAMES
    if coverage < MIN_COVERAGE and len(starts) > 1:
        starts.pop()
    return starts


class GE2ENet(torch.nn.Module):
    """(mel frames (batch, frames, 40), relative lengths) -> L2-normalized embeddings (batch,
    256); whole crops in training mode, the mean of partials in eval mode (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(N_MELS, HIDDEN, LAYERS, batch_first=True)
        self.linear = torch.nn.Linear(HIDDEN, HIDDEN)
        self.relu = torch.nn.ReLU()

    def embed_frames(self, frames: torch.Tensor) -> torch.Tensor:
        """Embeddings (batch, 256) of whole frame sequences (batch, frames, 40)."""
        _, (hidden, _) = self.lstm(frames)
        raw = self.relu(self.linear(hidden[-1]))
        return raw / torch.clamp(torch.linalg.vector_norm(raw, dim=1, keepdim=True), min=1e-8)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        if self.training:
            return self.embed_frames(feats)
        batch, total = feats.shape[0], feats.shape[1]
        if lengths is None:
            counts = [total] * batch
        else:
            counts = [max(1, round(float(x) * total)) for x in lengths]
        rows, starts = [], []
        for row, count in enumerate(counts):
            for start in partial_starts(count):
                rows.append(row)
                starts.append(start)
        # Frames past an utterance's end are zeros, as in Resemblyzer's zero-padded waveform.
        masked = feats
        if lengths is not None:
            frame = torch.arange(total, device=feats.device).unsqueeze(0)
            keep = frame < torch.tensor(counts, device=feats.device).unsqueeze(1)
            masked = feats * keep.unsqueeze(-1).to(feats.dtype)
        need = max(starts) + PARTIAL_FRAMES
        if need > total:
            masked = torch.nn.functional.pad(masked, (0, 0, 0, need - total))
        windows = masked.unfold(1, PARTIAL_FRAMES, 1)  # (batch, positions, 40, 160)
        index_rows = torch.tensor(rows, device=feats.device)
        index_starts = torch.tensor(starts, device=feats.device)
        partials = windows[index_rows, index_starts].transpose(1, 2)  # (n, 160, 40)
        embedded = self.embed_frames(partials)
        summed = torch.zeros(batch, HIDDEN, device=feats.device, dtype=embedded.dtype)
        summed.index_add_(0, index_rows, embedded)
        norm = torch.linalg.vector_norm(summed, dim=1, keepdim=True)
        return summed / torch.clamp(norm, min=1e-8)


def load_ge2e_weights(net: torch.nn.Module) -> None:
    """Copy the GE2E weights of Resemblyzer's wheel into ``net`` (a ``GE2ENet``; in place).

    Read with ``torch.load(weights_only=True)``; ``ConfigError`` when the package, the file or a
    parameter is missing or differs in shape.
    """
    path = _weights_path()
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        state = payload["model_state"] if "model_state" in payload else payload
        # The file also holds GE2E's training-only similarity scale and bias: not the network.
        wanted = net.state_dict()
        net.load_state_dict({k: v for k, v in state.items() if k in wanted}, strict=True)
    except (RuntimeError, KeyError, TypeError, AttributeError) as exc:
        cause = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ConfigError(f"the GE2E weights in {path} do not fit its network: {cause}") from exc
