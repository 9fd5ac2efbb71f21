"""What training takes and gives: the labelled utterances, the per-epoch history records,
the trained recognizer's result and the progress / checkpoint callbacks (``training.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

import numpy as np
from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from services.attacker.checkpoint import encoder_from_checkpoint, load_checkpoint
from services.attacker.models import SpeakerEncoder
from services.attacker.presets import ModelPreset
from services.attacker.training_config import TrainingConfig


class TrainingItem(NamedTuple):
    """One labelled training or validation utterance (a plain 3-tuple works too)."""

    waveform: np.ndarray
    """Mono float32 samples at 16 kHz."""
    speaker: str
    """Source speaker label (the source classifier's class)."""
    target: str | None = None
    """Target voice id the utterance was anonymized with (the target classifier's class)."""


class EpochRecord(BaseModel):
    """What one epoch did (``history.json`` holds a list of these)."""

    epoch: int = Field(description="1-based epoch number.")
    steps: int = Field(description="Optimizer steps in the epoch.")
    loss_source: float = Field(description="Mean source (AAM) loss over the epoch's steps.")
    loss_target: float | None = Field(description="Mean target loss; None in mode off.")
    ver_source: float | None = Field(description="VER_S: source head error rate (%) on validation.")
    ver_target: float | None = Field(
        description="VER_T: target head error rate (%) on validation items with a known target."
    )
    learning_rate: float = Field(description="Learning rate of the epoch's last step.")
    w_target: float = Field(description="w_T of the epoch (0 unless adversarial).")
    train_seconds: float = Field(description="Wall time of the training steps (s).")
    validation_seconds: float = Field(description="Wall time of the validation pass (s).")
    epoch_seconds: float = Field(description="Wall time of the whole epoch (s).")
    cpu_seconds: float | None = Field(
        None,
        description="CPU time of the training process over the whole epoch (s, every thread); "
        "unlike the wall time it does not grow when other processes share the cores. None in "
        "histories written before it was recorded.",
    )
    audio_seconds: float = Field(description="Seconds of audio in the epoch's crops.")
    throughput: float = Field(description="Training speed: seconds of audio per second.")


class TrainedAttacker(BaseModel):
    """Result of ``train_attacker``: where the recognizer is and how training went."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    output_dir: Path
    best_checkpoint: Path = Field(
        description="best.pt: the epoch `select_best_epoch` picks (lowest VER_S; in adversarial "
        "mode among epochs with w_T > 0)."
    )
    last_checkpoint: Path = Field(description="last.pt: the last epoch, with resume state.")
    best_epoch: int = Field(description="1-based epoch whose weights best.pt holds.")
    history: list[EpochRecord]
    speaker_labels: list[str] = Field(description="Source class index -> speaker label.")
    target_labels: list[str] = Field(description="Target class index -> target label.")
    preset: ModelPreset
    config: TrainingConfig
    resumed_after_epoch: int = Field(
        0,
        description="Epochs this run found done in a checkpoint and continued after (0: trained "
        "from scratch); a record of how the run went, like the history's timings.",
    )
    start: Literal["scratch", "original"] = Field(
        "scratch",
        # ``init``, its former name, still reads: trained.json of cached stages keeps working.
        validation_alias=AliasChoices("start", "init"),
        description="`original`: started from another recognizer's checkpoint (transfer) and "
        "fine-tuned; `scratch`: random weights (or `pretrained_ecapa_path`'s pretrained ECAPA, or "
        "the `ge2e` preset's weights from Resemblyzer's wheel).",
    )
    stopped: Literal["cap", "patience"] = Field(
        "cap",
        description="`patience`: VER_S stopped improving (`plateau_epoch`), the learning rate "
        "annealed over `patience` more epochs (fewer at the cap) and training stopped; `cap`: "
        "trained all `config.epochs` without a plateau, or reached the cap with its best epoch "
        "the last one (still improving; `stop_reason`).",
    )

    @property
    def best_w_target(self) -> float:
        """w_T of ``best_epoch`` as logged in the history (0 in modes off and observe)."""
        for record in self.history:
            if record.epoch == self.best_epoch:
                return record.w_target
        raise ValueError(f"best_epoch {self.best_epoch} is not in the training history")

    def load_encoder(self, which: Literal["best", "last"] = "best") -> SpeakerEncoder:
        """The trained recognizer (eval mode, CPU)."""
        path = self.best_checkpoint if which == "best" else self.last_checkpoint
        return encoder_from_checkpoint(load_checkpoint(path))


ProgressCallback = Callable[[int, int, int, float, dict[str, float]], None]
"""``(epoch, step, steps_per_epoch, eta_seconds, metrics)``: called after every training step
(metrics: running ``loss_source`` / ``loss_target`` means, ``lr``, ``w_target``) and once more
after validation with ``step == steps_per_epoch`` (metrics add ``ver_source`` / ``ver_target``)."""

CheckpointCallback = Callable[[int, Path], None]
"""``(epoch, output_dir)``: called after epoch ``epoch``'s checkpoint files (``last.pt``,
``best.pt``, ``history.json``) were written to ``output_dir`` (e.g. to copy them off the host)."""
