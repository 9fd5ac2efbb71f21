"""One attacker of a zoo (``AttackerSpec``: training overrides on the config's ``training``,
back-ends, score normalization, or a pretrained verifier scored as it is or fine-tuned) and the
training config it resolves to (``resolve_training``)."""

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


FOLDER_VERIFIERS = ("ecapa", "hf-xvector")
"""Pretrained verifiers an operator puts on local disk (``pretrained_path``)."""


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
    pretrained: Literal["ge2e", "ecapa", "hf-xvector"] | None = Field(
        None,
        description="A pretrained verifier scored as it is, never trained on the evaluation's "
        "data: `ge2e` (Resemblyzer's GE2E encoder, weights in its wheel), `ecapa` (a "
        "SpeechBrain ECAPA checkpoint folder on local disk, `pretrained_path`) or `hf-xvector` "
        "(a Hugging Face speaker-verification folder on local disk that transformers loads "
        "with AutoModelForAudioXVector, e.g. microsoft/wavlm-base-plus-sv; `pretrained_path`); "
        "cosine scoring. "
        "Its embeddings of the scenario's enrollment and trials are the same whatever the "
        "scenario trains on, so it is the ignorant, lazy-informed and semi-informed attacker at "
        "once. Not with `training`, `epochs_scale`, `normalization` or a back-end other than "
        "cosine, unless `finetune` (ge2e only) makes it a trained attacker.",
    )
    finetune: bool = Field(
        False,
        description="With `pretrained: ge2e`: fine-tune the verifier, as a trained attacker, "
        "on each scenario's training speech (anonymized speech for the semi-informed attacker, "
        "original speech for the ignorant and lazy-informed ones) with the config's training "
        "(AAM-softmax head, epochs cap, patience, stop labels; the `ge2e` preset, 1.6 s crops, "
        "fine-tune learning rate `GE2E_FINETUNE_TRAINING`) and scored with the config's "
        "back-ends. `training`, `epochs_scale`, `backends` and `normalization` then apply.",
    )
    pretrained_path: Path | None = Field(
        None,
        description="`pretrained: ecapa`: the SpeechBrain checkpoint folder (hyperparams.yaml + "
        "embedding_model.ckpt, the speechbrain/spkrec-ecapa-voxceleb layout; its preset is the "
        "one its shapes fit); `pretrained: hf-xvector`: the Hugging Face folder (config.json "
        "naming a *ForXVector architecture, model.safetensors or pytorch_model.bin). Relative "
        "to the config file.",
    )
    epochs_scale: float | None = Field(
        None,
        ge=1,
        le=10,
        description="Train this many times the config's epochs (rounded; the adversarial start "
        "epoch and a set LR half-cycle scale with it), so that a zoo names a longer schedule "
        "relative to any protocol's; null = the config's `epochs`. Not with `training.epochs`.",
    )

    @property
    def scored_as_is(self) -> bool:
        """A pretrained verifier that is not trained here (nothing to train: its rows come from
        its embeddings alone); a fine-tuned one (``finetune``) trains like any attacker."""
        return self.pretrained is not None and not self.finetune

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
        if self.finetune and self.pretrained != "ge2e":
            raise ValueError(
                "finetune fine-tunes pretrained: ge2e; a SpeechBrain ECAPA folder is fine-tuned "
                "with training.pretrained_ecapa_path"
            )
        if self.pretrained is not None and not self.finetune:
            trained = self.training or self.epochs_scale is not None
            if trained or self.normalization not in (None, "none"):
                raise ValueError(
                    f"pretrained {self.pretrained!r} is not trained here: leave out training, "
                    "epochs_scale and normalization"
                )
            if self.backends not in (None, ["cosine"]):
                raise ValueError(f"pretrained {self.pretrained!r} scores with cosine only")
        if (self.pretrained in FOLDER_VERIFIERS) != (self.pretrained_path is not None):
            raise ValueError(
                "pretrained_path names the folder of pretrained: ecapa or hf-xvector (and only "
                "those)"
            )
        return self

    @field_validator("backends")
    @classmethod
    def _unique_backends(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"backends has duplicate entries: {value}")
        return value


GE2E_FINETUNE_TRAINING: dict[str, Any] = {
    "preset": "ge2e",
    "crop_seconds": 1.6,
    "finetune_lr": 1e-4,
    "front_end": "fbank",
    "ssl_model_path": None,
    "pretrained_ecapa_path": None,
}
"""The training of a fine-tuned GE2E (``pretrained: ge2e``, ``finetune: true``) before the
spec's own ``training``: the ``ge2e`` preset, crops of one 1.6 s partial (what GE2E embeds),
a fine-tune peak rate of 1e-4 (GE2E's own training rate; the default 1e-3 is for the ECAPA),
and none of the config's ECAPA front-end fields."""


def resolve_training(base: TrainingConfig, spec: AttackerSpec) -> TrainingConfig:
    """``base`` with ``spec.training`` applied (top-level fields replaced, then validated); a
    fine-tuned GE2E gets ``GE2E_FINETUNE_TRAINING`` first.

    No overrides returns ``base`` itself, so the baseline attacker's train stage key is the one
    an evaluation without a zoo computes. Raises ``pydantic.ValidationError`` for a bad value.
    """
    finetuned = spec.pretrained == "ge2e" and spec.finetune
    if not spec.training and spec.epochs_scale is None and not finetuned:
        return base
    data = base.model_dump(mode="json")
    if finetuned:
        data.update(GE2E_FINETUNE_TRAINING)
    if spec.epochs_scale is not None:
        # The whole schedule stretches, so the adversary and the LR cycle keep their place in it.
        scale = spec.epochs_scale
        data["epochs"] = max(1, round(base.epochs * scale))
        data["adversarial_start_epoch"] = round(base.adversarial_start_epoch * scale)
        if base.lr_half_cycle_epochs is not None:
            data["lr_half_cycle_epochs"] = base.lr_half_cycle_epochs * scale
    data.update(spec.training)
    return TrainingConfig.model_validate(data)
