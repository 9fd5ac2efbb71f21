"""The attacker's model presets (architecture and size), without torch.

``services.attacker.models`` builds the networks and re-exports these names; the config checks
(``services.attacker.local_weights``) compare a preset with a pretrained checkpoint's
``hyperparams.yaml`` before any work starts, in processes that never load torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from services.errors import ConfigError

N_MELS = 80
"""Number of mel bands of the attacker's fbank features."""


class ModelPreset(BaseModel):
    """Architecture and size of the attacker's embedding model."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(description="Preset name (standard, vpc, tiny, xvector, ge2e or custom).")
    architecture: Literal["ecapa", "xvector", "ge2e"] = Field(
        description="Embedding network family."
    )
    channels: tuple[int, ...] = Field(description="Output channels per TDNN / SE-Res2Net layer.")
    embedding_dim: int = Field(description="Embedding size (lin_neurons).")
    n_mels: int = Field(N_MELS, description="Input feature bands.")
    attention_channels: int = Field(128, description="ECAPA attentive pooling channels.")
    se_channels: int = Field(128, description="ECAPA squeeze-excitation channels.")
    res2net_scale: int = Field(8, description="ECAPA Res2Net scale (divides the channels).")


PRESETS: dict[str, ModelPreset] = {
    "standard": ModelPreset(
        name="standard",
        architecture="ecapa",
        channels=(1024, 1024, 1024, 1024, 3072),
        embedding_dim=192,
    ),
    "vpc": ModelPreset(
        name="vpc", architecture="ecapa", channels=(512, 512, 512, 512, 1536), embedding_dim=192
    ),
    "tiny": ModelPreset(
        name="tiny",
        architecture="ecapa",
        channels=(64, 64, 64, 64, 192),
        embedding_dim=64,
        attention_channels=32,
        se_channels=32,
        res2net_scale=4,
    ),
    "xvector": ModelPreset(
        name="xvector",
        architecture="xvector",
        channels=(512, 512, 512, 512, 1500),
        embedding_dim=512,
    ),
    # Resemblyzer's GE2E encoder (services/attacker/ge2e_model.py): 3 LSTM layers of 256 over 40
    # mel bands, 256-dim; always started from the weights in Resemblyzer's wheel.
    "ge2e": ModelPreset(
        name="ge2e", architecture="ge2e", channels=(256, 256, 256), embedding_dim=256, n_mels=40
    ),
}


def get_preset(preset: str | ModelPreset) -> ModelPreset:
    """The preset of that name (or ``preset`` itself). Raises ``ConfigError`` for unknown names."""
    if isinstance(preset, ModelPreset):
        return preset
    if preset not in PRESETS:
        raise ConfigError(
            f"preset: unknown model preset {preset!r}; choose one of {sorted(PRESETS)}"
        )
    return PRESETS[preset]
