"""The ``utility:`` block of an evaluation config: pydantic only, so the API and the Celery app
validate configs without importing torch."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class AsrSpec(BaseModel):
    """The speech recognizer that measures intelligibility (WER / CER).

    ``train``: Unmask trains a compact CTC recognizer on the protocol's ORIGINAL attacker-train
    speech (once per protocol, cached as a stage; it never hears the submission).
    ``pretrained``: a SpeechBrain ASR folder on local disk (nothing is downloaded).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Literal["train", "pretrained"] = Field(
        "train",
        description="`train`: a CTC recognizer Unmask trains on the protocol's original "
        "attacker-train speech; `pretrained`: a SpeechBrain ASR folder at `pretrained_path`.",
    )
    pretrained_path: Path | None = Field(
        None, description="source=pretrained: the local SpeechBrain ASR folder."
    )
    epochs: int = Field(15, ge=1, description="source=train: training epochs.")
    batch_size: int = Field(8, ge=1, description="source=train: utterances per step.")
    lr: float = Field(5e-3, gt=0, description="source=train: Adam learning rate (peak).")
    hidden_size: int = Field(96, ge=8, description="source=train: encoder width.")
    seed: int = Field(0, description="source=train: seed of initialization and shuffling.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = CUDA if available.")

    @model_validator(mode="after")
    def _pretrained_needs_path(self) -> AsrSpec:
        if self.source == "pretrained" and self.pretrained_path is None:
            raise ValueError("asr.source pretrained needs `pretrained_path` (a local folder)")
        return self


class UtilityConfig(BaseModel):
    """Utility metrics computed beside privacy (docs/utility.md); each can be switched off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wer: bool = Field(
        True,
        description="WER and CER (%) of the ASR on original and anonymized trial speech (needs "
        "transcripts in the protocol's manifest).",
    )
    asr: AsrSpec = Field(default_factory=AsrSpec, description="The recognizer behind the WER.")
    pitch_correlation: bool = Field(
        True, description="rho_F0: pitch correlation of original and anonymized trial speech."
    )
    voice_distinctiveness: bool = Field(
        True,
        description="GVD (dB): gain of voice distinctiveness, from the original-speech "
        "recognizer's similarity matrices of original vs anonymized trial speech.",
    )
    bootstrap_resamples: int = Field(
        200, ge=0, description="Speaker-level bootstrap resamples for the WER intervals."
    )
