"""The attacker's training settings: a pydantic model that imports neither torch nor SpeechBrain.

The evaluation config (``services.pipeline.config``) embeds ``TrainingConfig``; keeping it here
lets the API process and the Celery app read and validate configs without loading torch. The
training loop itself is ``services.attacker.training`` (which re-exports these names).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PresetName = Literal["standard", "vpc", "tiny", "xvector"]
"""Names of the built-in model presets (``services.attacker.models.PRESETS``)."""

TargetClassifierMode = Literal["off", "observe", "adversarial"]
"""Target classifier mode (see ``services.attacker.training``)."""


class TrainingConfig(BaseModel):
    """Everything a training result depends on (plus device knobs that do not change it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    preset: PresetName = Field("standard", description="Model preset (models.PRESETS).")
    epochs: int = Field(10, ge=1, description="Training epochs (seed 000: 10).")
    batch_size: int = Field(32, ge=2, description="Crops per training step.")
    crop_seconds: float = Field(
        3.0,
        gt=0.1,
        description="Random crop length (s); shorter utterances are repeated to this length.",
    )
    lr: float = Field(1e-3, gt=0, description="Adam learning rate = the cyclic schedule's peak.")
    base_lr: float = Field(1e-8, ge=0, description="Cyclic schedule's lowest learning rate.")
    lr_half_cycle_epochs: float | None = Field(
        None,
        gt=0,
        description="Epochs from base_lr to lr (half a triangle); None = epochs / 2, i.e. one "
        "triangle over the run.",
    )
    lr_step_size: int | None = Field(
        None,
        ge=1,
        description="Half cycle in optimizer steps (SpeechBrain's step_size); overrides "
        "lr_half_cycle_epochs.",
    )
    weight_decay: float = Field(2e-6, ge=0, description="Adam weight decay.")
    aam_margin: float = Field(0.2, ge=0, description="Additive angular margin (radians).")
    aam_scale: float = Field(30.0, gt=0, description="AAM-softmax scale.")
    source_weight: float = Field(1.0, gt=0, description="w_S, weight of the source loss.")
    target_classifier: TargetClassifierMode = Field(
        "off", description="Target classifier mode: off, observe or adversarial."
    )
    target_loss: Literal["aam", "softmax"] = Field(
        "aam",
        description="Target head loss: AAM-softmax like the source head, or softmax over scaled "
        "cosines (margin 0).",
    )
    adversary: Literal["reversal", "confusion"] = Field(
        "reversal",
        description="How adversarial mode pushes the recognizer: `reversal` = gradient reversal "
        "layer (seed 000); `confusion` = the recognizer minimizes the cross-entropy between the "
        "target head's posterior and the uniform distribution, while the head learns on a "
        "detached embedding (it cannot be fooled by moving utterances away from their own "
        "target, which the reversal allows). Both scaled by w_T.",
    )
    adversarial_start_epoch: int = Field(
        6, ge=0, description="E: number of initial epochs with w_T = 0 (adversarial mode)."
    )
    seed: int = Field(0, description="Seed of initialization, crops and shuffling.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = CUDA if available.")
    mixed_precision: bool = Field(True, description="bf16 autocast for training, on CUDA only.")
    dataloader_workers: int = Field(0, ge=0, description="DataLoader worker processes.")
    deterministic: bool = Field(
        True, description="torch.use_deterministic_algorithms (warn only) during training."
    )

    @model_validator(mode="after")
    def _check_schedule(self) -> TrainingConfig:
        if self.base_lr > self.lr:
            raise ValueError("base_lr must not exceed lr")
        return self
