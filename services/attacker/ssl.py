"""The SSL front end: a learned softmax-weighted sum of all hidden layers of WavLM / wav2vec 2.0.

``TrainingConfig(front_end="ssl", ssl_model_path=...)`` replaces the 80 log-mel fbanks by the
features of a self-supervised model (the VoicePrivacy 2026 attacker's recipe: WavLM-Large, a
weighted sum of its layers, an ECAPA-TDNN on top, fine-tuned on anonymized speech):

- the model is loaded from a LOCAL Hugging Face folder with
  ``AutoModel.from_pretrained(path, local_files_only=True)`` (and ``HF_HUB_OFFLINE=1``): nothing
  is downloaded; its own SpecAugment masking and LayerDrop are switched off (Unmask has its own
  augmentation, and a dropped layer would repeat its input in the weighted sum);
- the waveform is normalized to zero mean and unit variance per utterance (over its own samples)
  unless the folder's ``preprocessor_config.json`` says ``do_normalize: false``;
- ``output_hidden_states=True`` gives L + 1 hidden states (the projected CNN features after the
  positional convolution, then each of the L transformer layers); the front end returns
  ``sum_l softmax(w)_l * h_l``, (batch, frames, hidden_size) at 50 frames per second, with
  ``w`` a learned vector initialized to zeros (equal weights);
- the ECAPA's input size is the SSL model's ``hidden_size`` (``ssl_preset``).

A checkpoint of an SSL recognizer records the model's config (``front_end_record``) next to all
weights, the fine-tuned SSL model's included, so ``encoder_from_checkpoint`` rebuilds it with
``AutoModel.from_config`` without the original folder. The price is size: WavLM-Large adds about
1.26 GB to ``best.pt`` (and its Adam moments another 2.5 GB to ``last.pt``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

from services.attacker.local_weights import normalizes_waveform, read_ssl_config
from services.attacker.models import SpeakerEncoder
from services.attacker.presets import ModelPreset
from services.errors import ConfigError

FRONT_END_FORMAT = "unmask-ssl-front-end-v1"

# Config overrides applied at load time (and so recorded in the checkpoint's config).
_LOAD_OVERRIDES: dict[str, Any] = {"apply_spec_augment": False, "layerdrop": 0.0}


def _quiet_transformers() -> Any:
    import transformers

    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    return transformers


class SSLFrontEnd(torch.nn.Module):
    """Waveforms (batch, samples) at 16 kHz -> weighted sum of all SSL hidden layers.

    ``ssl``: a Hugging Face ``WavLMModel`` / ``Wav2Vec2Model`` / ``HubertModel``;
    ``normalize_waveform``: per-utterance zero mean, unit variance before the model.
    """

    def __init__(self, ssl: Any, *, normalize_waveform: bool = True) -> None:
        super().__init__()
        self.ssl = ssl
        self.normalize_waveform = normalize_waveform
        self.n_layers = int(ssl.config.num_hidden_layers) + 1
        # Zeros = equal weights 1 / (L + 1): no layer is preferred before training says so.
        self.layer_logits = torch.nn.Parameter(torch.zeros(self.n_layers))

    @property
    def output_dim(self) -> int:
        """Feature size (the SSL model's hidden_size)."""
        return int(self.ssl.config.hidden_size)

    def layer_weights(self) -> torch.Tensor:
        """The softmax weights (L + 1,) of the hidden layers; they sum to 1."""
        return torch.softmax(self.layer_logits.float(), dim=0)

    def ssl_parameters(self) -> list[torch.nn.Parameter]:
        """The SSL model's parameters (not the layer weights)."""
        return list(self.ssl.parameters())

    def feature_encoder_parameter_names(self) -> set[str]:
        """Names (within ``ssl``) of the CNN feature encoder's parameters."""
        return {f"feature_extractor.{n}" for n, _ in self.ssl.feature_extractor.named_parameters()}

    def set_trainable(self, trainable: bool, *, freeze_feature_encoder: bool) -> None:
        """Let the SSL model learn (``trainable``) or freeze it; the CNN encoder stays frozen
        when ``freeze_feature_encoder``. A frozen model also runs in eval mode (no dropout)."""
        frozen_names = self.feature_encoder_parameter_names() if freeze_feature_encoder else set()
        for name, param in self.ssl.named_parameters():
            param.requires_grad_(trainable and name not in frozen_names)
        # Hugging Face's flag: the CNN encoder then skips building its autograd graph.
        self.ssl.feature_extractor._requires_grad = trainable and not freeze_feature_encoder
        if not trainable:
            self.ssl.eval()

    def frame_lengths(self, lengths: torch.Tensor, n_samples: int) -> torch.Tensor:
        """Relative lengths (batch,) of the output frames, from relative sample lengths."""
        samples = torch.round(lengths.float() * n_samples).long()
        frames = self.ssl._get_feat_extract_output_lengths(samples)
        total = self.ssl._get_feat_extract_output_lengths(torch.tensor(n_samples))
        return frames.float() / total.float()

    def forward(self, wavs: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Weighted features (batch, frames, hidden_size) of ``wavs`` (relative ``lengths``)."""
        wavs = wavs.float()
        mask: torch.Tensor | None = None
        if lengths is not None:
            n_valid = torch.clamp(torch.round(lengths.float() * wavs.shape[1]), min=1)
            positions = torch.arange(wavs.shape[1], device=wavs.device)
            mask = positions.unsqueeze(0) < n_valid.unsqueeze(1)
        if self.normalize_waveform:
            if mask is None:
                mean = wavs.mean(dim=1, keepdim=True)
                var = wavs.var(dim=1, unbiased=False, keepdim=True)
                wavs = (wavs - mean) / torch.sqrt(var + 1e-7)
            else:
                m = mask.to(wavs.dtype)
                count = m.sum(dim=1, keepdim=True)
                mean = (wavs * m).sum(dim=1, keepdim=True) / count
                var = (((wavs - mean) * m) ** 2).sum(dim=1, keepdim=True) / count
                wavs = (wavs - mean) / torch.sqrt(var + 1e-7) * m
        # Models with layer-normalized CNNs (WavLM-Large, wav2vec 2.0 large-lv60) are trained
        # with attention masks; group-normalized ones (base models) expect plain zero padding.
        use_mask = mask is not None and self.ssl.config.feat_extract_norm == "layer"
        out = self.ssl(
            wavs,
            attention_mask=mask.long() if use_mask and mask is not None else None,
            output_hidden_states=True,
        )
        hidden = torch.stack(out.hidden_states, dim=0)  # (L + 1, batch, frames, hidden)
        if hidden.shape[0] != self.n_layers:
            raise ConfigError(
                f"ssl_model_path: the model returned {hidden.shape[0]} hidden states, expected "
                f"{self.n_layers} (num_hidden_layers + 1)"
            )
        weights = self.layer_weights().to(hidden.dtype)
        return torch.einsum("l,lbth->bth", weights, hidden)

    def record(self) -> dict[str, Any]:
        """What rebuilds this front end without the original folder (checkpoint ``front_end``)."""
        return {
            "format": FRONT_END_FORMAT,
            "kind": "ssl",
            "model_type": str(self.ssl.config.model_type),
            "ssl_config": self.ssl.config.to_json_string(use_diff=False),
            "normalize_waveform": bool(self.normalize_waveform),
            "n_layers": self.n_layers,
        }


def load_ssl_front_end(folder: str | Path) -> SSLFrontEnd:
    """The SSL front end of a local Hugging Face model folder (CPU, train mode).

    Raises ``ConfigError`` for a missing folder / config / weights file, an unsupported model
    type, or weights ``from_pretrained`` cannot load. Never downloads anything.
    """
    path = Path(folder)
    read_ssl_config(path)  # clear errors for the usual mistakes before transformers' own
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers = _quiet_transformers()
    try:
        model = transformers.AutoModel.from_pretrained(
            str(path), local_files_only=True, **_LOAD_OVERRIDES
        )
    except Exception as exc:  # transformers raises OSError, ValueError, RuntimeError, ...
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(
            f"ssl_model_path: {path} could not be loaded as a Hugging Face model ({first[:200]})"
        ) from exc
    if not hasattr(model, "feature_extractor"):
        raise ConfigError(
            f"ssl_model_path: {path} loaded as {type(model).__name__}, which has no CNN feature "
            "encoder; use a WavLM / wav2vec 2.0 / HuBERT base model folder"
        )
    normalize = normalizes_waveform(path, "ssl_model_path")
    return SSLFrontEnd(model, normalize_waveform=normalize).train()


def front_end_from_record(record: dict[str, Any]) -> SSLFrontEnd:
    """An SSL front end with the architecture of a checkpoint's ``front_end`` record.

    The weights are random until the checkpoint's state dict is loaded into the encoder.
    """
    if record.get("format") != FRONT_END_FORMAT or record.get("kind") != "ssl":
        raise ConfigError(f"checkpoint: unknown front end record {record.get('format')!r}")
    transformers = _quiet_transformers()
    data = json.loads(record["ssl_config"])
    model_type = data.pop("model_type", record["model_type"])
    config = transformers.AutoConfig.for_model(model_type, **data)
    model = transformers.AutoModel.from_config(config)
    return SSLFrontEnd(model, normalize_waveform=bool(record["normalize_waveform"]))


def ssl_preset(preset: ModelPreset, front: SSLFrontEnd) -> ModelPreset:
    """``preset`` with the ECAPA's input size set to the SSL model's hidden size."""
    return preset.model_copy(update={"n_mels": front.output_dim})


def ssl_encoder(preset: ModelPreset, front: SSLFrontEnd) -> SpeakerEncoder:
    """A recognizer: ``front`` feeding a freshly initialized ECAPA of ``preset``."""
    return SpeakerEncoder(ssl_preset(preset, front), features=front)
