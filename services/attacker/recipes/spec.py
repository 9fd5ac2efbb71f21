"""One attacker of a zoo (``AttackerSpec``: training overrides on the config's ``training``,
back-ends, score normalization, or a pretrained verifier scored as it is) and the training config
it resolves to (``resolve_training``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from services.attacker.training_config import TrainingConfig
from services.field_names import with_current_names

BASELINE = "baseline"
"""Name of the attacker that is the config's own training and back-ends (today's attacker)."""

ATTACKER_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")
"""Attacker names: lowercase, digits, ``_ . -``, at most 32 characters (a column and a path)."""

NOT_OVERRIDABLE = frozenset({"seed", "device", "dataloader_workers"})
"""Training fields an attacker may not set: seeds come from the config's ``seeds``; the device
and loader workers are the host's, not the attacker's."""


class AttackerSpec(BaseModel):
    """One attacker of the zoo: how it trains (overrides on the config's ``training``) and scores.

    Unset fields are the config's: ``training: {}``, ``backends: null``, ``normalization: null``
    and ``cohort_top_k: null`` give the config's own attacker.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        description="The attacker's name in result rows and tables (lowercase letters, digits, "
        "`_ . -`; at most 32 characters)."
    )
    training: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides applied onto the config's `training` (e.g. `preset`, `epochs`, "
        "`augmentation: {}` for the augmentation defaults, front-end fields); not `seed`, "
        "`device`, `dataloader_workers`.",
    )
    backends: list[Literal["cosine", "plda"]] | None = Field(
        None, min_length=1, description="Scoring back-ends; null = the config's `backends`."
    )
    normalization: Literal["none", "as-norm"] | None = Field(
        None, description="Score normalization; null = the config's `scoring.normalization`."
    )
    cohort_top_k: int | None = Field(
        None, ge=2, description="AS-norm cohort top K; null = the config's `scoring.cohort_top_k`."
    )
    pretrained: Literal["ge2e", "ecapa"] | None = Field(
        None,
        description="A pretrained verifier scored as it is, never trained on the evaluation's "
        "data: `ge2e` (Resemblyzer's GE2E encoder, weights in its wheel) or `ecapa` (a "
        "SpeechBrain ECAPA checkpoint folder on local disk, `pretrained_path`); cosine scoring. "
        "Its embeddings of the scenario's enrollment and trials are the same whatever the "
        "scenario trains on, so it is the ignorant, lazy-informed and semi-informed attacker at "
        "once. Not with `training`, `epochs_scale`, `normalization` or a back-end other than "
        "cosine.",
    )
    pretrained_path: Path | None = Field(
        None,
        description="`pretrained: ecapa`: the SpeechBrain checkpoint folder (hyperparams.yaml + "
        "embedding_model.ckpt, the speechbrain/spkrec-ecapa-voxceleb layout; its preset is the "
        "one its shapes fit). Relative to the config file.",
    )
    epochs_scale: float | None = Field(
        None,
        ge=1,
        le=10,
        description="Train this many times the config's epochs (rounded; the adversarial start "
        "epoch and a set LR half-cycle scale with it), so that a zoo names a longer schedule "
        "relative to any protocol's; null = the config's `epochs`. Not with `training.epochs`.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not ATTACKER_NAME_RE.match(value):
            raise ValueError(
                f"attacker name {value!r}: use lowercase letters, digits and _ . - "
                "(at most 32 characters, starting with a letter or digit)"
            )
        return value

    @field_validator("training")
    @classmethod
    def _training_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Former field names (``init``) read as the current ones, so the overrides replace the
        # config's field rather than sitting beside it.
        value = with_current_names(value, TrainingConfig, "training.")
        fixed = sorted(NOT_OVERRIDABLE & set(value))
        if fixed:
            raise ValueError(
                f"training may not set {', '.join(fixed)} (seeds come from the config's `seeds`; "
                "device and loader workers are the host's)"
            )
        unknown = sorted(set(value) - set(TrainingConfig.model_fields))
        if unknown:
            raise ValueError(
                f"training has unknown fields {', '.join(unknown)}; known: "
                f"{', '.join(sorted(TrainingConfig.model_fields))}"
            )
        return value

    @model_validator(mode="after")
    def _one_schedule(self) -> AttackerSpec:
        if self.epochs_scale is not None and "epochs" in self.training:
            raise ValueError("set either epochs_scale or training.epochs, not both")
        if self.pretrained is not None:
            trained = self.training or self.epochs_scale is not None
            if trained or self.normalization not in (None, "none"):
                raise ValueError(
                    f"pretrained {self.pretrained!r} is not trained here: leave out training, "
                    "epochs_scale and normalization"
                )
            if self.backends not in (None, ["cosine"]):
                raise ValueError(f"pretrained {self.pretrained!r} scores with cosine only")
        if (self.pretrained == "ecapa") != (self.pretrained_path is not None):
            raise ValueError("pretrained_path names the folder of pretrained: ecapa (and only it)")
        return self

    @field_validator("backends")
    @classmethod
    def _unique_backends(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"backends has duplicate entries: {value}")
        return value


def resolve_training(base: TrainingConfig, spec: AttackerSpec) -> TrainingConfig:
    """``base`` with ``spec.training`` applied (top-level fields replaced, then validated).

    No overrides returns ``base`` itself, so the baseline attacker's train stage key is the one
    an evaluation without a zoo computes. Raises ``pydantic.ValidationError`` for a bad value.
    """
    if not spec.training and spec.epochs_scale is None:
        return base
    data = base.model_dump(mode="json")
    if spec.epochs_scale is not None:
        # The whole schedule stretches, so the adversary and the LR cycle keep their place in it.
        scale = spec.epochs_scale
        data["epochs"] = max(1, round(base.epochs * scale))
        data["adversarial_start_epoch"] = round(base.adversarial_start_epoch * scale)
        if base.lr_half_cycle_epochs is not None:
            data["lr_half_cycle_epochs"] = base.lr_half_cycle_epochs * scale
    data.update(spec.training)
    return TrainingConfig.model_validate(data)
