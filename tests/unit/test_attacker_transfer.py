"""Transfer (a recognizer started from another's checkpoint) and the epochs cap with patience."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from test_attacker_training import PROBES, TRAIN, VAL, _records, tiny_config

from services.attacker import training
from services.attacker.checkpoint import load_checkpoint
from services.attacker.embeddings import extract_embeddings
from services.attacker.training import train_attacker
from services.attacker.training_records import EpochRecord
from services.attacker.training_schedule import (
    cool_down_epochs,
    cool_down_learning_rate,
    fine_tune_learning_rate,
    plateau_epoch,
    select_best_epoch,
    should_stop,
    stop_reason,
)
from services.errors import ConfigError

# ----------------------------------------------------------------- patience (pure)


def _history(vers: list[float | None], **kw: object) -> tuple[list[EpochRecord], object]:
    cfg = tiny_config(epochs=20, **kw)
    return _records(vers, cfg.epochs, cfg.adversarial_start_epoch), cfg


@pytest.mark.parametrize(
    ("vers", "stop"),
    [
        ([50.0, 40.0, 30.0], False),  # too few epochs to judge patience 3
        ([50.0, 40.0, 40.0, 40.0, 40.0], True),  # 3 epochs without a new low
        ([50.0, 40.0, 40.0, 40.0, 38.0], False),  # 2 points lower: improving
        ([50.0, 40.0, 40.0, 40.0, 39.5], True),  # 0.5 points is within the 1-point margin
        ([50.0, 40.0, 30.0, 20.0, 10.0], False),
        ([50.0, None, 40.0, 40.0, 40.0], False),  # no validation data: never stops early
    ],
)
def test_should_stop_after_patience_epochs_without_a_margin_of_improvement(
    vers: list[float | None], stop: bool
) -> None:
    history, cfg = _history(vers)
    assert should_stop(history, cfg) is stop  # type: ignore[arg-type]


def test_should_stop_respects_patience_margin_and_off() -> None:
    history, _ = _history([50.0, 40.0, 40.0, 40.0, 39.5])
    assert not should_stop(history, tiny_config(epochs=20, patience_margin_points=0.25))
    assert not should_stop(history, tiny_config(epochs=20, patience=None))
    assert should_stop(history[:3], tiny_config(epochs=20, patience=1))


def test_adversarial_patience_counts_only_epochs_with_w_t_above_zero() -> None:
    # E = 6: the flat first epochs have w_T = 0 and do not count.
    vers: list[float | None] = [50.0, 40.0, 40.0, 40.0, 40.0, 40.0, 45.0, 44.0]
    kw = {"target_classifier": "adversarial", "adversarial_start_epoch": 6}
    history, cfg = _history(vers, **kw)
    assert not should_stop(history, cfg)  # type: ignore[arg-type]
    history, cfg = _history([*vers, 44.5, 44.5, 44.5], **kw)
    assert should_stop(history, cfg)  # type: ignore[arg-type]


def test_patience_counts_only_after_the_learning_rate_peak() -> None:
    """VER_S may rise while a cyclic schedule climbs to its peak (an 18-epoch scratch run stopped
    at epoch 7 that way under the first rule): those epochs are not a patience window."""
    history, cfg = _history([80.0, 40.0, 45.0, 50.0, 55.0])
    assert should_stop(history, cfg)  # type: ignore[arg-type]
    assert not should_stop(history, cfg, rising_epochs=4)  # type: ignore[arg-type]
    later, _ = _history([80.0, 40.0, 45.0, 50.0, 55.0, 41.0, 42.0, 41.5])
    assert should_stop(later, cfg, rising_epochs=4)  # type: ignore[arg-type]


def test_fine_tune_schedule_warms_up_then_decays_to_base_at_the_cap() -> None:
    lr = [fine_tune_learning_rate(s, 0.0, 1.0, 4, 12) for s in range(13)]
    assert lr[:5] == pytest.approx([0.0, 0.25, 0.5, 0.75, 1.0])
    assert lr[8] == pytest.approx(0.5)
    assert lr[12] == pytest.approx(0.0)
    assert fine_tune_learning_rate(0, 0.1, 1.0, 0, 10) == pytest.approx(1.0)  # no warm-up


def test_the_plateau_is_the_first_epoch_patience_stops_at_and_the_cool_down_fits_the_cap() -> None:
    history, cfg = _history([50.0, 40.0, 40.0, 40.0, 40.0, 30.0, 41.0])
    assert plateau_epoch(history, cfg) == 5  # type: ignore[arg-type]
    assert plateau_epoch(history[:4], cfg) is None  # type: ignore[arg-type]
    assert plateau_epoch(history, tiny_config(epochs=20, patience=None)) is None  # type: ignore[arg-type]
    assert cool_down_epochs(cfg, 5) == 3  # type: ignore[arg-type]
    assert cool_down_epochs(cfg, 19) == 1  # type: ignore[arg-type]
    assert cool_down_epochs(cfg, 20) == 0  # type: ignore[arg-type]
    # At the cap itself there is nothing to anneal: that run trained to its cap.
    capped, cfg5 = _history([50.0, 40.0, 40.0, 40.0, 40.0])
    assert plateau_epoch(capped, cfg5.model_copy(update={"epochs": 5})) is None  # type: ignore[attr-defined]
    assert plateau_epoch(capped, cfg5.model_copy(update={"epochs": 6})) == 5  # type: ignore[attr-defined]


def _stop(vers: list[float], epochs: int) -> str:
    """``stop_reason`` of a run with these VER_S (%) per epoch, patience 3, cap ``epochs``,
    best epoch as ``select_best_epoch`` picks it."""
    history, cfg = _history(vers)
    cfg = cfg.model_copy(update={"epochs": epochs})  # type: ignore[attr-defined]
    return stop_reason(history, cfg, select_best_epoch(history, cfg))


def test_a_run_still_improving_at_its_cap_is_a_cap_stop_not_patience() -> None:
    # A plateau after epoch 5 (40, 40, 40 after 40), then the cool-down (6-8) keeps improving
    # until the cap: the best epoch is the last, so the cap ended it.
    assert _stop([50.0, 40.0, 40.0, 40.0, 40.0, 30.0, 20.0, 15.0], epochs=8) == "cap"
    # Still improving when the cap comes in the middle of the cool-down: a cap stop too.
    assert _stop([50.0, 40.0, 40.0, 40.0, 40.0, 30.0, 20.0], epochs=7) == "cap"
    # No plateau at all: the cap.
    assert _stop([50.0, 40.0, 30.0, 20.0, 10.0], epochs=5) == "cap"


def test_a_plateau_and_its_cool_down_before_the_cap_is_a_patience_stop() -> None:
    # Plateau after epoch 5, cool-down 6-8, stopped at 8 of 20: patience, even though the
    # cool-down's last epoch is its best (the rate annealed; the cap was not what ended it).
    assert _stop([50.0, 40.0, 40.0, 40.0, 40.0, 39.8, 39.7, 39.6], epochs=20) == "patience"
    assert _stop([50.0, 40.0, 40.0, 40.0, 40.0, 41.0, 42.0, 43.0], epochs=20) == "patience"


def test_a_plateau_that_reaches_the_cap_without_improving_is_a_patience_stop() -> None:
    # The cool-down runs into the cap (plateau after 5, cap 7) and the best epoch (2) is not the
    # last: it had stopped learning, so patience, not the cap, describes it.
    assert _stop([50.0, 40.0, 40.0, 40.0, 40.0, 41.0, 42.0], epochs=7) == "patience"
    # The window completes only at the cap's own epoch: no plateau there, a run to the cap.
    assert _stop([50.0, 40.0, 40.0, 40.0, 40.0], epochs=5) == "cap"


def test_cool_down_rate_falls_linearly_to_base_and_never_exceeds_the_schedule() -> None:
    rates = [cool_down_learning_rate(s, 1.0, 10, 0.8, 4, 0.0) for s in range(8, 16)]
    assert rates == pytest.approx([1.0, 1.0, 0.6, 0.4, 0.2, 0.0, 0.0, 0.0])
    # A schedule already lower than the cool-down (its own decay) keeps its rate.
    assert cool_down_learning_rate(11, 0.1, 10, 0.8, 4, 0.0) == pytest.approx(0.1)


# ----------------------------------------------------------------- training with patience


SCRIPTED = [80.0, 60.0, 55.0, 55.0, 56.0, 57.0, 10.0, 5.0, 4.0, 3.0, 2.0, 1.0]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    def validate(self: training._Trainer) -> tuple[float | None, float | None]:
        return SCRIPTED[self.epoch], None

    monkeypatch.setattr(training._Trainer, "validate", validate)


@pytest.mark.slow
def test_on_a_plateau_the_rate_anneals_for_patience_epochs_then_training_stops(
    tmp_path: Path, scripted: None
) -> None:
    cfg = tiny_config(epochs=len(SCRIPTED), patience=3, lr_step_size=1)
    result = train_attacker(TRAIN[::4], [], cfg, tmp_path)
    # Epochs 4-6 are not 1 point below epoch 3's 55: a plateau at epoch 6, then 3 epochs of
    # cool-down (7-9) of the 12-epoch cap.
    assert [r.ver_source for r in result.history] == SCRIPTED[:9]
    assert result.stopped == "patience" and result.best_epoch == 9
    rates = [r.learning_rate for r in result.history]  # each epoch's last step
    uncooled = train_attacker(
        TRAIN[::4], [], cfg.model_copy(update={"patience": None}), tmp_path / "cap"
    )
    assert len(uncooled.history) == 12 and uncooled.stopped == "cap"
    scheduled = [r.learning_rate for r in uncooled.history]
    assert rates[:6] == scheduled[:6]  # the schedule until the plateau
    assert rates[8] == pytest.approx(cfg.base_lr)  # annealed at the end of the cool-down
    assert all(rates[i] <= scheduled[i] for i in range(6, 9))
    again = train_attacker(TRAIN[::4], [], cfg, tmp_path)  # nothing left to do
    assert len(again.history) == 9 and again.resumed_after_epoch == 9


@pytest.mark.slow
def test_a_run_interrupted_in_its_cool_down_resumes_bit_identically(
    tmp_path: Path, scripted: None
) -> None:
    cfg = tiny_config(epochs=len(SCRIPTED), patience=3, lr_step_size=1)
    straight = train_attacker(TRAIN[::4], [], cfg, tmp_path / "straight")

    class Crash(RuntimeError):
        pass

    def crash_in_epoch_8(epoch: int, step: int, steps: int, eta: float, m: dict) -> None:
        if epoch == 8 and step == 1:
            raise Crash

    with pytest.raises(Crash):
        train_attacker(TRAIN[::4], [], cfg, tmp_path / "resumed", progress=crash_in_epoch_8)
    resumed = train_attacker(TRAIN[::4], [], cfg, tmp_path / "resumed")
    assert resumed.resumed_after_epoch == 7
    keys = ("loss_source", "ver_source", "learning_rate")
    assert [[getattr(r, k) for k in keys] for r in resumed.history] == [
        [getattr(r, k) for k in keys] for r in straight.history
    ]
    a = extract_embeddings(tmp_path / "straight" / "last.pt", PROBES, device="cpu")
    b = extract_embeddings(tmp_path / "resumed" / "last.pt", PROBES, device="cpu")
    assert np.array_equal(a, b)


# ----------------------------------------------------------------- transfer


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recognizer trained on the same speakers: the original-speech recognizer's stand-in."""
    out = tmp_path_factory.mktemp("source")
    train_attacker(TRAIN, VAL, tiny_config(epochs=2, seed=3), out)
    return out / "best.pt"


FINE_TUNE = {"epochs": 3, "start": "original", "finetune_lr": 2e-4, "patience": None}


@pytest.mark.slow
def test_a_fine_tune_starts_from_the_source_weights_and_follows_its_schedule(
    tmp_path: Path, source: Path
) -> None:
    cfg = tiny_config(**FINE_TUNE)
    start: dict[str, torch.Tensor] = {}

    def first_step(epoch: int, step: int, steps: int, eta: float, m: dict[str, float]) -> None:
        if not start:
            start["lr"] = torch.tensor(m["lr"])

    result = train_attacker(
        TRAIN, VAL, cfg, tmp_path, transfer_checkpoint=source, progress=first_step
    )
    assert result.start == "original"
    assert float(start["lr"]) == pytest.approx(cfg.base_lr)  # warm-up starts at base_lr
    steps = result.history[0].steps
    peak = fine_tune_learning_rate(steps, cfg.base_lr, cfg.finetune_lr, steps, 3 * steps)
    assert peak == pytest.approx(cfg.finetune_lr)
    assert result.history[-1].learning_rate < cfg.finetune_lr / 2  # decaying toward the cap
    # The same seed from scratch is another recognizer: transfer changed the start.
    from_scratch = cfg.model_copy(update={"epochs": 1, "start": None})
    scratch = train_attacker(TRAIN, VAL, from_scratch, tmp_path / "s")
    assert scratch.start == "scratch"
    ckpt = load_checkpoint(tmp_path / "last.pt")
    assert isinstance(ckpt["init_fingerprint"], str)
    assert "init_fingerprint" not in load_checkpoint(tmp_path / "s" / "last.pt")


@pytest.mark.slow
def test_resuming_an_interrupted_fine_tune_is_bit_identical(tmp_path: Path, source: Path) -> None:
    cfg = tiny_config(**FINE_TUNE)
    straight = train_attacker(TRAIN, VAL, cfg, tmp_path / "straight", transfer_checkpoint=source)

    class Crash(RuntimeError):
        pass

    def crash(epoch: int, step: int, steps: int, eta: float, m: dict[str, float]) -> None:
        if epoch == 2 and step == 2:
            raise Crash

    out = tmp_path / "crashed"
    with pytest.raises(Crash):
        train_attacker(TRAIN, VAL, cfg, out, transfer_checkpoint=source, progress=crash)
    assert load_checkpoint(out / "last.pt")["epoch"] == 1
    resumed = train_attacker(TRAIN, VAL, cfg, out, transfer_checkpoint=source)
    assert resumed.resumed_after_epoch == 1 and resumed.start == "original"
    keys = ("loss_source", "ver_source", "learning_rate")
    assert [[getattr(r, k) for k in keys] for r in resumed.history] == [
        [getattr(r, k) for k in keys] for r in straight.history
    ]
    a = extract_embeddings(tmp_path / "straight" / "last.pt", PROBES, device="cpu")
    b = extract_embeddings(out / "last.pt", PROBES, device="cpu")
    assert np.array_equal(a, b)
    # A resume that would start from another recognizer (or from scratch) is refused.
    other = tmp_path / "straight" / "best.pt"  # same preset, another file
    with pytest.raises(ConfigError, match="init checkpoint differs"):
        train_attacker(TRAIN, VAL, cfg, out, transfer_checkpoint=other)
    with pytest.raises(ConfigError, match="no recognizer to start from"):
        train_attacker(TRAIN, VAL, cfg, out)


def test_transfer_needs_the_same_preset_and_an_existing_file(tmp_path: Path, source: Path) -> None:
    with pytest.raises(ConfigError, match="preset"):
        train_attacker(
            TRAIN, VAL, tiny_config(preset="xvector"), tmp_path, transfer_checkpoint=source
        )
    with pytest.raises(ConfigError, match="file not found"):
        train_attacker(
            TRAIN, VAL, tiny_config(), tmp_path, transfer_checkpoint=tmp_path / "none.pt"
        )


def test_a_start_that_contradicts_the_transfer_is_refused(tmp_path: Path, source: Path) -> None:
    """The trainer records the start it was given a recognizer for; a config saying otherwise
    fails before any work, naming the field."""
    with pytest.raises(ConfigError, match=r"training\.start is 'original' but no recognizer"):
        train_attacker(TRAIN, VAL, tiny_config(start="original"), tmp_path / "a")
    with pytest.raises(ConfigError, match=r"training\.start is 'scratch' but a recognizer"):
        train_attacker(
            TRAIN, VAL, tiny_config(start="scratch"), tmp_path / "b", transfer_checkpoint=source
        )
    assert not (tmp_path / "a" / "last.pt").exists()
