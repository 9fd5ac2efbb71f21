"""The train stage: the attacker's recognizer per (training data condition, seed).

A recognizer trained on anonymized speech starts from scratch or (``training.start: original``,
the default whenever the evaluation trains an original-speech recognizer anyway) from the same
seed's recognizer trained on original speech. Where each starts is decided once
(``training_config.recognizer_start``, read through ``plan.recognizer_start_of``);
``plan.with_transfer_sources`` and ``plan.transfer_order`` say which recognizers a run trains and
in which order; the anonymized stage's inputs then name the original stage's key, so caching
stays exact.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig, recognizer_training
from services.attacker.training_records import TrainedAttacker, TrainingItem
from services.attacker.training_schedule import ADVERSARIAL_CHECKPOINT_RULE, PATIENCE_RULE
from services.corpus.manifest import Manifest
from services.field_names import with_former_names
from services.pipeline.checkpoint_sync import CheckpointSync
from services.pipeline.plan import (
    AttackerPlan,
    recognizer_start_of,
)
from services.pipeline.sets import ConditionSets
from services.pipeline.stage_runner import StageOutcome, stage_key
from services.pipeline.stages.context import StageContext
from services.pipeline.workspace import SyncedStageRunner
from services.storage.errors import BlobStoreError

log = logging.getLogger(__name__)

__all__ = ["TrainedModels", "train_recognizer", "transfer_source"]

TrainedModels = Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]]
"""The trained recognizers by (data condition trained on, seed), with their train stages."""


def checkpoint_sync_of(ctx: StageContext, stage: str, key: str) -> CheckpointSync | None:
    """The checkpoint copy of a stage key when the runner shares stages through a blob store."""
    runner = ctx.runner
    if isinstance(runner, SyncedStageRunner) and runner.workspace is not None:
        return CheckpointSync(runner.workspace.store, stage, key)
    return None


def transfer_source(
    attacker: AttackerPlan,
    condition: str,
    seed: int,
    models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
) -> tuple[TrainedAttacker, StageOutcome] | None:
    """The trained recognizer the (``condition``, ``seed``) one starts from; None: scratch.
    Where it starts is decided once (``AttackerPlan.stage_start``)."""
    if attacker.stage_start(condition) != "original":
        return None
    return models[("original", seed)]


def train_recognizer(
    ctx: StageContext,
    data: ConditionSets,
    condition: str,
    seed: int,
    position: tuple[int, int] = (1, 1),
    transfer_from: tuple[TrainedAttacker, StageOutcome] | None = None,
) -> tuple[TrainedAttacker, StageOutcome]:
    """Train the recognizer on ``data`` (original or anonymized speech) with ``seed``.

    ``position`` (i, n): this is recognizer i of the run's n; the train phase's progress covers
    all n (a phase at 100 % after the first of several recognizers would mislead).
    ``transfer_from``: a trained recognizer (same preset) to start from and fine-tune (transfer,
    anonymized speech only); its train stage key goes into this stage's inputs.
    """
    training = _recognizer_training(ctx, condition, seed, transfer_from)
    inputs = _train_inputs(data, condition, training, transfer_from)

    # Each epoch's checkpoints go to the blob store, so a host taking over a killed run (an
    # empty work folder) continues from the last uploaded epoch (services/pipeline/checkpoint_sync).
    sync = checkpoint_sync_of(ctx, "train", stage_key("train", inputs))

    def make(folder: Path) -> dict[str, Any]:
        def items(m: Manifest) -> list[TrainingItem]:
            waves = ctx.audio.load(m)
            return [
                TrainingItem(w, u.speaker_id, u.target_id)
                for w, u in zip(waves, m.utterances, strict=True)
            ]

        train_items, val_items = items(data.train), items(data.validation)
        index, count = position
        label = f"recognizer {index} of {count} ({condition} seed {seed})"

        def report(
            epoch: int, step: int, steps: int, eta: float, metrics: dict[str, float]
        ) -> None:
            frac = ((epoch - 1) + step / max(steps, 1)) / training.epochs
            overall = (index - 1 + min(frac, 1.0)) / max(count, 1)
            msg = f"{label}: epoch {epoch}/{training.epochs} step {step}/{steps} ETA {eta:.0f}s"
            ctx.progress("train", overall, msg)

        model_dir = folder / "model"
        transfer_checkpoint = (
            transfer_from[0].best_checkpoint if transfer_from is not None else None
        )
        if sync is None:
            result = train_attacker(
                train_items,
                val_items,
                training,
                model_dir,
                progress=report,
                transfer_checkpoint=transfer_checkpoint,
            )
        else:
            restored = sync.restore(model_dir)
            if restored:
                ctx.progress(
                    "train",
                    (index - 1) / max(count, 1),
                    f"{label}: resuming after epoch {restored}",
                )
            try:
                result = train_attacker(
                    train_items,
                    val_items,
                    training,
                    model_dir,
                    progress=report,
                    on_checkpoint=sync.epoch_saved,
                    transfer_checkpoint=transfer_checkpoint,
                )
            finally:
                sync.close(model_dir)  # uploads done, snapshots gone before the manifest
        (folder / "trained.json").write_text(result.model_dump_json(indent=2))
        return {"trained": "trained.json"}

    outcome = ctx.runner.run("train", inputs, make, resumable=True)
    if sync is not None:
        _clear_checkpoints(sync, outcome, training.epochs)
    return _trained_in(outcome), outcome


def _recognizer_training(
    ctx: StageContext,
    condition: str,
    seed: int,
    transfer_from: tuple[TrainedAttacker, StageOutcome] | None,
) -> TrainingConfig:
    """The run's training config for the recognizer of ``condition`` with ``seed``, where the
    one rule (``plan.recognizer_start_of``) says it starts; ``transfer_from`` must be the
    recognizer it starts from exactly when that is ``original``."""
    start = recognizer_start_of(ctx.config, condition)
    if (start == "original") != (transfer_from is not None):
        given = "with" if transfer_from is not None else "without"
        raise ValueError(f"the {condition} recognizer starts at {start!r}: not {given} a source")
    training = recognizer_training(ctx.config.training, condition, start)
    return training.model_copy(update={"seed": seed})


def _train_inputs(
    data: ConditionSets,
    condition: str,
    training: TrainingConfig,
    transfer_from: tuple[TrainedAttacker, StageOutcome] | None,
) -> dict[str, Any]:
    """The train stage's inputs (its cache key): data, training config and the rules that
    changed what a cached stage holds."""
    inputs: dict[str, Any] = {
        "condition": condition,
        "train": data.keys["train"],
        "validation": data.keys["validation"],
        # Renamed fields keep their former names here, so stage keys of existing runs stay.
        "training": with_former_names(
            training.model_dump(mode="json", exclude={"device", "dataloader_workers"}),
            TrainingConfig,
        ),
    }
    if transfer_from is not None:
        inputs["init"] = f"train:{transfer_from[1].key}"  # "init": stage keys stay as they were
    if training.preset == "ge2e":
        from services.attacker import ge2e

        inputs["pretrained"] = ge2e.model_key()  # the weights it starts from
    if training.patience is not None:
        inputs["stopping"] = PATIENCE_RULE
    if training.target_classifier == "adversarial":
        # Adversarial models cached under the older rule may hold a w_T = 0 epoch.
        inputs["checkpoint_rule"] = ADVERSARIAL_CHECKPOINT_RULE
    return inputs


def _clear_checkpoints(sync: CheckpointSync, outcome: StageOutcome, epochs: int) -> None:
    """Delete the published stage's per-epoch checkpoints from the blob store."""
    # The stage is published: its checkpoints are not needed. A reused stage has nothing to
    # clear unless a pointer was left (one HEAD), the computing host clears every epoch.
    try:
        if not outcome.reused or sync.store.exists(sync.pointer_key):
            sync.clear(epochs)
    except BlobStoreError as exc:  # leftovers cost storage, never a result
        log.warning("checkpoints of train/%s not deleted: %s", outcome.key, exc)


def _trained_in(outcome: StageOutcome) -> TrainedAttacker:
    """The recognizer a train stage holds, its paths pointing into the stage's folder."""
    trained = TrainedAttacker.model_validate_json((outcome.folder / "trained.json").read_text())
    # Paths recorded while training point into the temporary folder that became ``folder``.
    return trained.model_copy(
        update={
            "output_dir": outcome.folder / "model",
            "best_checkpoint": outcome.folder / "model" / trained.best_checkpoint.name,
            "last_checkpoint": outcome.folder / "model" / trained.last_checkpoint.name,
        }
    )
