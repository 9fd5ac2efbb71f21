"""The attacker's speaker recognizer: ECAPA-TDNN or x-vector, trained from scratch.

Presets (``ModelPreset``, defined in ``services.attacker.presets``):

- ``standard``: SpeechBrain's ECAPA-TDNN default size, channels 1024,1024,1024,1024,3072,
  192-dim embedding (the SpAnE size that Franzreb et al. recommends; about 20.8 M parameters).
- ``vpc``: half the channels, 512,512,512,512,1536, 192-dim (the VoicePrivacy 2024 size;
  about 6.2 M parameters).
- ``tiny``: 64,64,64,64,192 channels, 64-dim embedding: for tests and demos on a CPU.
- ``xvector``: SpeechBrain's x-vector TDNN (512,512,512,512,1500), 512-dim, for the PLDA pipeline
  of Georgiou et al.
- ``ge2e``: Resemblyzer's GE2E encoder (3-layer LSTM over 40 mel bands, 256-dim;
  ``services.attacker.ge2e_model``), always started from the weights in Resemblyzer's wheel.

Every model maps (mean-normalized fbank features (batch, frames, 80), relative lengths (batch,))
to embeddings (batch, dim), trained from scratch unless ``TrainingConfig.pretrained_ecapa_path``
names a SpeechBrain checkpoint (``services.attacker.pretrained``). With the SSL front end
(``services.attacker.ssl``) the ECAPA's input size (``n_mels``) is the SSL model's hidden size.
"""

from __future__ import annotations

from typing import Any

import torch
from speechbrain.lobes.models.ECAPA_TDNN import ECAPA_TDNN, Classifier
from speechbrain.lobes.models.Xvector import Xvector

from services.attacker.features import FilterbankFeatures

# The presets live in a torch-free module (config checks compare them with pretrained weights).
from services.attacker.presets import ModelPreset, get_preset
from services.errors import ConfigError

__all__ = [
    "CosineHead",
    "EmbeddingModel",
    "SpeakerEncoder",
    "build_embedding_model",
]


class EmbeddingModel(torch.nn.Module):
    """(features (batch, frames, bands), relative lengths) -> embeddings (batch, dim)."""

    def __init__(self, preset: ModelPreset) -> None:
        super().__init__()
        self.preset = preset
        self.net: torch.nn.Module
        if preset.architecture == "ge2e":
            from services.attacker.ge2e_model import GE2ENet

            self.net = GE2ENet()
        elif preset.architecture == "ecapa":
            if len(preset.channels) != 5:
                raise ConfigError("channels: ECAPA-TDNN needs 5 channel counts")
            self.net = ECAPA_TDNN(
                preset.n_mels,
                lin_neurons=preset.embedding_dim,
                channels=list(preset.channels),
                attention_channels=preset.attention_channels,
                se_channels=preset.se_channels,
                res2net_scale=preset.res2net_scale,
            )
        else:
            self.net = Xvector(
                tdnn_blocks=len(preset.channels),
                tdnn_channels=list(preset.channels),
                tdnn_kernel_sizes=[5, 3, 3, 1, 1][: len(preset.channels)],
                tdnn_dilations=[1, 2, 3, 1, 1][: len(preset.channels)],
                lin_neurons=preset.embedding_dim,
                in_channels=preset.n_mels,
            )

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Embeddings (batch, embedding_dim) of the feature batch."""
        if self.preset.architecture == "ge2e":
            out = self.net(feats, lengths)
        elif self.preset.architecture == "ecapa":
            out = self.net(feats, lengths=lengths)
        else:
            out = self.net(feats, lens=lengths)
        return out.squeeze(1)


def build_embedding_model(preset: str | ModelPreset) -> EmbeddingModel:
    """A freshly initialized embedding model of that preset (uses torch's global RNG)."""
    return EmbeddingModel(get_preset(preset))


class SpeakerEncoder(torch.nn.Module):
    """The whole recognizer: waveforms (batch, samples) at 16 kHz -> embeddings (batch, dim).

    ``features``: the front end; None = 80-dim fbanks (``FilterbankFeatures``). Another front
    end (``services.attacker.ssl.SSLFrontEnd``) must output ``preset.n_mels`` features per frame
    and may offer ``frame_lengths(lengths, n_samples)`` (relative lengths of its frames) and
    ``record()`` (what a checkpoint needs to rebuild it).
    """

    def __init__(self, preset: str | ModelPreset, features: torch.nn.Module | None = None) -> None:
        super().__init__()
        self.preset = get_preset(preset)
        if features is not None:
            dim = getattr(features, "output_dim", None)
            if dim != self.preset.n_mels:
                raise ConfigError(
                    f"front end: outputs {dim} features per frame, the preset's ECAPA expects "
                    f"{self.preset.n_mels}"
                )
        self.features = features if features is not None else _default_features(self.preset)
        self.embedding = EmbeddingModel(self.preset)

    @property
    def embedding_dim(self) -> int:
        """Size of the embeddings."""
        return self.preset.embedding_dim

    def front_end_record(self) -> dict[str, Any] | None:
        """The front end's checkpoint record; None for fbanks (checkpoints without one)."""
        record = getattr(self.features, "record", None)
        return record() if callable(record) else None

    def forward(self, wavs: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Embeddings of ``wavs``; ``lengths`` are relative lengths in (0, 1] or None."""
        feats = self.features(wavs, lengths)
        frame_lengths = getattr(self.features, "frame_lengths", None)
        if lengths is not None and callable(frame_lengths):
            lengths = frame_lengths(lengths, wavs.shape[1])
        return self.embedding(feats, lengths)


def _default_features(preset: ModelPreset) -> torch.nn.Module:
    """The preset's own front end: GE2E's mel frames for ``ge2e``, else fbanks."""
    if preset.architecture == "ge2e":
        from services.attacker.ge2e_model import GE2EMelFeatures

        return GE2EMelFeatures()
    return FilterbankFeatures(preset.n_mels)


class CosineHead(torch.nn.Module):
    """SpeechBrain's cosine classifier: cosine between the embedding and one weight per class."""

    def __init__(self, embedding_dim: int, n_classes: int) -> None:
        super().__init__()
        self.classifier = Classifier(input_size=embedding_dim, out_neurons=n_classes)

    def forward(self, embeddings: torch.Tensor) -> torch.Tensor:
        """Cosines (batch, n_classes) in [-1, 1]."""
        return self.classifier(embeddings.unsqueeze(1)).squeeze(1)
