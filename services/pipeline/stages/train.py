"""The train stage: the attacker's recognizer per (training data condition, seed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.attacker.training import (
    ADVERSARIAL_CHECKPOINT_RULE,
    TrainedAttacker,
    TrainingItem,
    train_attacker,
)
from services.corpus.manifest import Manifest
from services.pipeline.sets import ConditionSets
from services.pipeline.stage_runner import StageOutcome
from services.pipeline.stages.context import StageContext

TrainedModels = Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]]
"""The trained recognizers by (data condition trained on, seed), with their train stages."""


def train_recognizer(
    ctx: StageContext, data: ConditionSets, condition: str, seed: int
) -> tuple[TrainedAttacker, StageOutcome]:
    """Train the recognizer on ``data`` (original or anonymized speech) with ``seed``."""
    training = ctx.config.training.model_copy(update={"seed": seed})
    if condition == "original" and training.target_classifier != "off":
        # Original speech has no targets: there is nothing for a target head to learn.
        training = training.model_copy(update={"target_classifier": "off"})
    inputs = {
        "condition": condition,
        "train": data.keys["train"],
        "validation": data.keys["validation"],
        "training": training.model_dump(mode="json", exclude={"device", "dataloader_workers"}),
    }
    if training.target_classifier == "adversarial":
        # Adversarial models cached under the older rule may hold a w_T = 0 epoch.
        inputs["checkpoint_rule"] = ADVERSARIAL_CHECKPOINT_RULE

    def make(folder: Path) -> dict[str, Any]:
        def items(m: Manifest) -> list[TrainingItem]:
            waves = ctx.audio.load(m)
            return [
                TrainingItem(w, u.speaker_id, u.target_id)
                for w, u in zip(waves, m.utterances, strict=True)
            ]

        train_items, val_items = items(data.train), items(data.validation)
        label = f"{condition} seed {seed}"

        def report(
            epoch: int, step: int, steps: int, eta: float, metrics: dict[str, float]
        ) -> None:
            frac = ((epoch - 1) + step / max(steps, 1)) / training.epochs
            msg = f"{label}: epoch {epoch}/{training.epochs} step {step}/{steps} ETA {eta:.0f}s"
            ctx.progress("train", min(frac, 1.0), msg)

        result = train_attacker(train_items, val_items, training, folder / "model", progress=report)
        (folder / "trained.json").write_text(result.model_dump_json(indent=2))
        return {"trained": "trained.json"}

    outcome = ctx.runner.run("train", inputs, make, resumable=True)
    trained = TrainedAttacker.model_validate_json((outcome.folder / "trained.json").read_text())
    # Paths recorded while training point into the temporary folder that became ``folder``.
    trained = trained.model_copy(
        update={
            "output_dir": outcome.folder / "model",
            "best_checkpoint": outcome.folder / "model" / trained.best_checkpoint.name,
            "last_checkpoint": outcome.folder / "model" / trained.last_checkpoint.name,
        }
    )
    return trained, outcome
