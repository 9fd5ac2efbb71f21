"""The ``utility:`` block of an evaluation config: pydantic only, so the API and the Celery app
validate configs without importing torch."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

MIN_UTTERANCES_FOR_VALIDATION = 20
"""Fewer training utterances than this: the ASR trains every epoch on all of them (no plateau
check: a held-out handful says nothing)."""

WARP_LIMITS = (0.25, 4.0)
"""Allowed frequency-warp factors of ``AsrSpec.warp_range`` (unit-free): two octaves either way."""


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
        "attacker-train speech; `pretrained`: a SpeechBrain ASR folder or a Hugging Face "
        "wav2vec 2.0 CTC folder at `pretrained_path`.",
    )
    pretrained_path: Path | None = Field(
        None,
        description="source=pretrained: the local SpeechBrain or Hugging Face (Wav2Vec2ForCTC) "
        "ASR folder.",
    )
    epochs: int = Field(
        15,
        ge=1,
        description="source=train: most training epochs (the validation plateau "
        "usually stops it earlier, see `patience`).",
    )
    patience: int = Field(
        2,
        ge=0,
        description="source=train: stop when the held-out CTC loss per token has not improved "
        "by `min_improvement` for this many epochs and keep the best epoch's weights (0 = train "
        "every epoch). Needs at least 20 training utterances (fewer: every epoch is trained).",
    )
    min_improvement: float = Field(
        0.02,
        ge=0,
        lt=1,
        description="source=train: relative drop of the held-out loss that counts as an "
        "improvement (unit-free; 0.02 = 2 %).",
    )
    validation_share: float = Field(
        0.1,
        gt=0,
        lt=0.5,
        description="source=train: share of the training utterances held out for the "
        "plateau check (at most 200 utterances; unit-free).",
    )
    batch_size: int = Field(8, ge=1, description="source=train: utterances per step.")
    lr: float = Field(5e-3, gt=0, description="source=train: Adam learning rate (peak).")
    hidden_size: int = Field(96, ge=8, description="source=train: encoder width.")
    seed: int = Field(0, description="source=train: seed of initialization and shuffling.")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto = CUDA if available.")
    warp_range: tuple[float, float] | None = Field(
        (0.8, 1.25),
        description="source=train: frequency-warp augmentation (VTLP). Each training utterance's "
        "log-mel spectrum is warped along frequency by a factor alpha (unit-free; formants and "
        "harmonics at f Hz move to alpha * f Hz), drawn log-uniformly from [low, high] per "
        "utterance per epoch (default 0.8-1.25, measured in docs/utility.md), so the "
        "ASR hears many vocal-tract lengths and pitches from few "
        "speakers. null or [1, 1] = off. Original speech only; never anonymized speech.",
    )

    @model_validator(mode="after")
    def _pretrained_needs_path(self) -> AsrSpec:
        if self.source == "pretrained" and self.pretrained_path is None:
            raise ValueError("asr.source pretrained needs `pretrained_path` (a local folder)")
        return self

    @model_validator(mode="after")
    def _warp_range_valid(self) -> AsrSpec:
        if self.warp_range is None:
            return self
        low, high = self.warp_range
        if not (WARP_LIMITS[0] <= low <= high <= WARP_LIMITS[1]):
            raise ValueError(
                f"asr.warp_range must be [low, high] with {WARP_LIMITS[0]} <= low <= high <= "
                f"{WARP_LIMITS[1]} (unit-free frequency factors, e.g. [0.6, 1.7]; null or [1, 1] "
                f"= off), got [{low}, {high}]"
            )
        return self

    @property
    def warp_enabled(self) -> bool:
        """Whether training warps the frequency axis (a range other than null or [1, 1])."""
        return self.warp_range is not None and self.warp_range != (1.0, 1.0)


class UsableSpeechThresholds(BaseModel):
    """Thresholds of the usable-speech guard (services/utility/degenerate.py, docs/utility.md).

    Each reason is raised when MORE than ``utterance_share`` of the anonymized utterances show it
    ("most utterances"), so a few odd outputs never condemn a submission. Values were set from
    the synthetic corpus, the three DSP built-ins and generated noise (docs/utility.md).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    utterance_share: float = Field(
        0.5, ge=0.0, lt=1.0, description="A reason is raised above this share of utterances."
    )
    silence_rms_dbfs: float = Field(
        -60.0, le=0.0, description="silence: utterance RMS below this level (dBFS)."
    )
    near_silence_rms_dbfs: float = Field(
        -50.0, le=0.0, description="near_silence: RMS below this level (dBFS), above silence."
    )
    near_silence_drop_db: float = Field(
        30.0,
        gt=0.0,
        description="near_silence: RMS this many dB below the original's (when originals given).",
    )
    voicing_cpp_db: float = Field(
        1.2,
        gt=0.0,
        description="A frame is voiced when its cepstral peak prominence (F0 40-800 Hz) "
        "exceeds this (dB).",
    )
    noise_max_voiced_fraction: float = Field(
        0.15,
        ge=0.0,
        le=1.0,
        description="noise: fewer voiced frames than this share of the utterance's active frames.",
    )
    noise_min_flatness: float = Field(
        0.4,
        gt=0.0,
        le=1.0,
        description="noise: median spectral flatness of active frames above this (white noise "
        "~0.56, speech < 0.05).",
    )
    clipping_level: float = Field(
        0.999, gt=0.0, le=1.0, description="clipping: a sample at or above this |x| is clipped."
    )
    clipping_max_share: float = Field(
        0.01, gt=0.0, le=1.0, description="clipping: more than this share of samples clipped."
    )
    constant_max_cosine: float = Field(
        0.99,
        gt=0.0,
        le=1.0,
        description="constant_output: mean cosine between anonymized embeddings of DIFFERENT "
        "speakers at or above this (one voice for everyone).",
    )
    duplicate_min_correlation: float = Field(
        0.99,
        gt=0.0,
        le=1.0,
        description="constant_output: an utterance whose first second correlates at least this "
        "much (|r|) with another utterance's is a duplicate waveform.",
    )

    @model_validator(mode="after")
    def _levels_ordered(self) -> UsableSpeechThresholds:
        if self.near_silence_rms_dbfs <= self.silence_rms_dbfs:
            raise ValueError(
                "usable_speech.near_silence_rms_dbfs must lie above silence_rms_dbfs "
                f"({self.near_silence_rms_dbfs} <= {self.silence_rms_dbfs})"
            )
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
    max_wer_increase_percent: float | None = Field(
        20.0,
        ge=0,
        description="The protocol's utility bound (percentage points of WER increase): the "
        "leaderboard ranks by privacy among the submissions within it whose speech is usable; "
        "the others rank after them. null = no bound (usable speech still ranks first).",
    )
    usable_speech: UsableSpeechThresholds = Field(
        default_factory=UsableSpeechThresholds,
        description="Thresholds of the usable-speech guard (silence, noise, one voice for all, "
        "clipping, no words).",
    )
