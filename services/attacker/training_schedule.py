"""The attacker trainer's schedules and stop rules (``training.py``): the w_T schedule of the
target classifier, the learning-rate schedules (cyclic from scratch, warm-up and decay when
fine-tuning a transferred recognizer, the cool-down after a plateau), the best-epoch rule
(``best.pt``) and the patience rules that end training. They read only the history, so a resumed
run decides as an uninterrupted one would."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from services.attacker.training_config import TrainingConfig
from services.attacker.training_records import EpochRecord


def target_weight(epoch: int, epochs: int, start_epoch: int) -> float:
    """w_T of 1-based ``epoch``: 0 for the first ``start_epoch`` epochs, then linear to 1.

    ``w_T = (epoch - start_epoch) / (epochs - start_epoch)`` for ``epoch > start_epoch``; always 0
    when ``start_epoch >= epochs`` (the baseline without adversarial gradients).
    """
    if epoch <= start_epoch or epochs <= start_epoch:
        return 0.0
    return min(1.0, (epoch - start_epoch) / (epochs - start_epoch))


ADVERSARIAL_CHECKPOINT_RULE = "lowest VER_S among epochs with w_T > 0"
"""How ``best.pt`` is chosen in ``adversarial`` mode (see ``select_best_epoch``); the pipeline
puts it in the train stage's inputs, so models cached under the older rule (lowest VER_S over
all epochs) are not reused."""


def select_best_epoch(history: Sequence[EpochRecord], config: TrainingConfig) -> int:
    """The 1-based epoch whose weights ``best.pt`` keeps; 0 while no epoch is eligible.

    The eligible epoch with the lowest VER_S, the earliest on ties; an epoch without VER_S (no
    validation data) counts as better than every earlier one, so the latest eligible epoch is
    kept. In ``adversarial`` mode (both adversaries: they share the w_T schedule) only epochs
    with ``w_target > 0`` are eligible: an epoch with w_T = 0 is a recognizer that never received
    an adversarial gradient, and reporting it as the adversarial model would describe the
    wrong recognizer. If the schedule never leaves 0 (E >= epochs, Franzreb et al.'s baseline) every
    epoch is eligible. Modes ``off`` and ``observe``: every epoch.
    """
    best: EpochRecord | None = None
    for record in eligible_records(history, config):
        if (
            best is None
            or record.ver_source is None
            or best.ver_source is None
            or record.ver_source < best.ver_source
        ):
            best = record
    return best.epoch if best is not None else 0


def fine_tune_learning_rate(
    step: int, base_lr: float, peak_lr: float, warmup_steps: float, total_steps: float
) -> float:
    """Learning rate at optimizer step ``step`` (0-based) of a fine-tune: linear from ``base_lr``
    to ``peak_lr`` over ``warmup_steps``, then linear back to ``base_lr`` at ``total_steps``."""
    if warmup_steps > 0 and step < warmup_steps:
        return base_lr + (peak_lr - base_lr) * step / warmup_steps
    rest = max(total_steps - warmup_steps, 1.0)
    frac = min(1.0, max(0.0, (step - warmup_steps) / rest))
    return peak_lr + (base_lr - peak_lr) * frac


def eligible_records(history: Sequence[EpochRecord], config: TrainingConfig) -> list[EpochRecord]:
    """The epochs ``best.pt`` may hold (``select_best_epoch``'s rule), in order."""
    adversarial_only = (
        config.target_classifier == "adversarial" and config.adversarial_start_epoch < config.epochs
    )
    return [r for r in history if not (adversarial_only and r.w_target <= 0.0)]


PATIENCE_RULE = (
    "patience counted over eligible epochs after the learning-rate peak; "
    "on a plateau the rate anneals to base_lr over patience epochs, then training stops; "
    "a run that reaches the cap with its best epoch last is a cap stop"
)
"""How training stops; the pipeline puts it in the train stage's inputs, so recognizers stopped
under an earlier rule are not reused: the first counted patience from epoch 1 (it stopped long
cyclic schedules while their rate was still rising), the second stopped at the plateau itself
(before the rate had come down), the third labelled a run that was still improving at the cap
``patience`` when a plateau had been found earlier (so the trust check skipped its still-falling
test)."""


def should_stop(
    history: Sequence[EpochRecord], config: TrainingConfig, rising_epochs: float = 0.0
) -> bool:
    """True when training has stopped learning (``patience``), before the epochs cap.

    The last ``patience`` eligible epochs with a VER_S (%), all after the learning-rate peak
    (epoch > ``rising_epochs``: the warm-up of a fine-tune, the first half-cycle of the cyclic
    schedule, during which VER_S may rise with the rate), have a lowest VER_S not
    ``patience_margin_points`` below the lowest of the eligible epochs before them. Never without
    ``patience``, without validation data, or before such a window exists.
    """
    if config.patience is None:
        return False
    eligible = eligible_records(history, config)
    if any(r.ver_source is None for r in eligible):
        return False
    window = [r for r in eligible if r.epoch > rising_epochs][-config.patience :]
    before = [r for r in eligible if r.epoch < (window[0].epoch if window else 0)]
    if len(window) < config.patience or not before:
        return False
    lowest_before = min(float(r.ver_source or 0.0) for r in before)
    lowest_recent = min(float(r.ver_source or 0.0) for r in window)
    return lowest_recent > lowest_before - config.patience_margin_points


def plateau_epoch(
    history: Sequence[EpochRecord], config: TrainingConfig, rising_epochs: float = 0.0
) -> int | None:
    """The epoch after which patience first found a plateau (``should_stop`` on the history up
    to it), where the cool-down starts; None while there is none (or without ``patience``). The
    cap's own epoch is no plateau: training ends there anyway, as a run to the cap."""
    if config.patience is None:
        return None
    for end in range(1, len(history) + 1):
        if history[end - 1].epoch >= config.epochs:
            break
        if should_stop(history[:end], config, rising_epochs):
            return history[end - 1].epoch
    return None


def stop_reason(
    history: Sequence[EpochRecord],
    config: TrainingConfig,
    best_epoch: int,
    rising_epochs: float = 0.0,
) -> Literal["cap", "patience"]:
    """Why a run with this ``history`` ended: ``patience`` or ``cap``.

    ``patience`` when a plateau was found (``plateau_epoch``) and the run either ended before the
    epochs cap (its cool-down was over) or reached the cap with its best epoch earlier than the
    last (a plateau at the cap: it had stopped improving). ``cap`` when there was no plateau, or
    when the run reached the cap with its best epoch the last one: VER_S was still falling, so
    the cap, not patience, ended it (a cool-down that runs into the cap while VER_S keeps falling
    is such a run), and the trust check's still-falling test applies.
    """
    if not history or plateau_epoch(history, config, rising_epochs) is None:
        return "cap"
    last = history[-1].epoch
    if last >= config.epochs and best_epoch == last:
        return "cap"
    return "patience"


def cool_down_epochs(config: TrainingConfig, plateau: int) -> int:
    """Epochs of annealing after the plateau at epoch ``plateau``: ``patience``, or fewer when
    the epochs cap comes first."""
    return max(0, min(config.patience or 0, config.epochs - plateau))


def cool_down_learning_rate(
    step: int, scheduled: float, start_step: int, start_lr: float, steps: int, base_lr: float
) -> float:
    """The rate at optimizer step ``step`` of a cool-down that starts at ``start_step`` with
    ``start_lr`` (the schedule's rate there) and falls linearly to ``base_lr`` at its last step
    (``steps`` steps in all); never above ``scheduled``, the rate without a cool-down."""
    if step < start_step or steps <= 0:
        return scheduled
    frac = min(1.0, (step - start_step + 1) / steps)
    return min(scheduled, start_lr + (base_lr - start_lr) * frac)


def cyclic_learning_rate(step: int, base_lr: float, max_lr: float, step_size: float) -> float:
    """Triangular cyclic learning rate at optimizer step ``step`` (0-based).

    SpeechBrain's ``CyclicLRScheduler(mode="triangular").clr``: rises linearly from ``base_lr`` to
    ``max_lr`` over ``step_size`` steps, falls back over the next ``step_size``, and repeats.
    """
    cycle = math.floor(1 + step / (2 * step_size))
    x = abs(step / step_size - 2 * cycle + 1)
    return base_lr + (max_lr - base_lr) * max(0.0, 1.0 - x)
