"""Training the attacker's recognizer: GRL, schedules, target classifier modes, determinism."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from speechbrain.nnet.schedulers import CyclicLRScheduler

from services.attacker import training
from services.attacker.checkpoint import load_checkpoint, save_checkpoint
from services.attacker.embeddings import extract_embeddings
from services.attacker.models import build_embedding_model, get_preset
from services.attacker.training import train_attacker
from services.attacker.training_config import TrainingConfig
from services.attacker.training_losses import confusion_loss, reverse_gradient
from services.attacker.training_records import EpochRecord, ProgressCallback, TrainingItem
from services.attacker.training_schedule import (
    cyclic_learning_rate,
    select_best_epoch,
    target_weight,
)
from services.errors import ConfigError, InvalidInputError

SR = 16_000


def harmonic_voices(
    n_speakers: int = 4, n_utts: int = 8, seed: int = 0, n_targets: int = 3
) -> list[TrainingItem]:
    """Speakers = harmonic tones with their own F0 and spectral tilt; targets assigned per utt."""
    rng = np.random.default_rng(seed)
    items = []
    for k in range(n_speakers):
        f0 = 100.0 * 1.35**k
        tilt = 0.5 + 0.4 * k
        for u in range(n_utts):
            n = int(rng.uniform(1.0, 2.0) * SR)
            t = np.arange(n) / SR
            vibrato = 1 + 0.05 * np.sin(2 * np.pi * rng.uniform(2, 5) * t)
            f = f0 * (1 + 0.03 * rng.standard_normal()) * vibrato
            phase = 2 * np.pi * np.cumsum(f) / SR
            h = np.arange(1, 20)
            amp = h ** (-tilt) * (h * f0 < 7000)
            w = (amp[:, None] * np.sin(h[:, None] * phase[None, :])).sum(0)
            w = 0.3 * w / np.abs(w).max() + 0.01 * rng.standard_normal(n)
            items.append(TrainingItem(w.astype(np.float32), f"s{k}", f"t{(u + k) % n_targets}"))
    return items


TRAIN = harmonic_voices()
VAL = harmonic_voices(n_utts=2, seed=1)
PROBES = [it.waveform for it in harmonic_voices(n_utts=1, seed=2)]


def tiny_config(**kw: object) -> TrainingConfig:
    base: dict[str, object] = {
        "preset": "tiny",
        "epochs": 3,
        "batch_size": 8,
        "crop_seconds": 1.0,
        "device": "cpu",
        "seed": 7,
    }
    base.update(kw)
    return TrainingConfig.model_validate(base)


# ----------------------------------------------------------------- pure functions


def test_gradient_reversal_is_identity_forward_and_scales_gradient_by_minus_weight() -> None:
    torch.manual_seed(0)
    x = torch.randn(5, 7, requires_grad=True)
    g = torch.randn(5, 7)
    for w in (0.0, 0.3, 1.0):
        x.grad = None
        y = reverse_gradient(x, w)
        assert torch.equal(y, x)
        y.backward(g)
        assert x.grad is not None
        assert torch.equal(x.grad, g * -w)


def test_target_weight_schedule() -> None:
    epochs, start = 10, 6
    w = [target_weight(e, epochs, start) for e in range(1, epochs + 1)]
    assert w[:start] == [0.0] * start  # zero for the first E epochs
    assert w[-1] == 1.0
    steps = np.diff(w[start - 1 :])
    assert np.allclose(steps, 1 / (epochs - start))  # linear rise
    assert w == [0, 0, 0, 0, 0, 0, 0.25, 0.5, 0.75, 1.0]
    # E >= epochs: the baseline, never any adversarial gradient.
    assert all(target_weight(e, 10, 10) == 0.0 for e in range(1, 11))
    assert target_weight(1, 1, 0) == 1.0


def test_cyclic_learning_rate_matches_speechbrain_triangular() -> None:
    sb = CyclicLRScheduler(base_lr=1e-8, max_lr=1e-3, step_size=7)
    for step in range(40):
        assert math.isclose(cyclic_learning_rate(step, 1e-8, 1e-3, 7), sb.clr(step), rel_tol=1e-12)
    assert cyclic_learning_rate(0, 1e-8, 1e-3, 7) == pytest.approx(1e-8)
    assert cyclic_learning_rate(7, 1e-8, 1e-3, 7) == pytest.approx(1e-3)
    assert cyclic_learning_rate(14, 1e-8, 1e-3, 7) == pytest.approx(1e-8)


def test_presets_build_and_unknown_preset_is_rejected() -> None:
    model = build_embedding_model("tiny")
    out = model.eval()(torch.randn(2, 150, 80), torch.tensor([1.0, 0.6]))
    assert out.shape == (2, get_preset("tiny").embedding_dim)
    assert get_preset("standard").channels == (1024, 1024, 1024, 1024, 3072)
    assert get_preset("vpc").channels == (512, 512, 512, 512, 1536)
    assert get_preset("xvector").embedding_dim == 512
    with pytest.raises(ConfigError, match="huge"):
        get_preset("huge")
    with pytest.raises(ValueError, match="preset"):
        TrainingConfig.model_validate({"preset": "huge"})


# ----------------------------------------------------------------- bad input


def test_bad_training_input_names_the_problem(tmp_path: Path) -> None:
    cfg = tiny_config(epochs=1)
    with pytest.raises(InvalidInputError, match="train_items"):
        train_attacker([], [], cfg, tmp_path)
    bad = [*TRAIN[:3], TrainingItem(TRAIN[3].waveform.astype(np.float64), "s0", None)]
    with pytest.raises(InvalidInputError, match=r"train_items waveforms\[3\].*float64"):
        train_attacker(bad, [], cfg, tmp_path)
    bad = [*TRAIN[:3], TrainingItem(np.stack([TRAIN[3].waveform] * 2), "s0", None)]
    with pytest.raises(InvalidInputError, match=r"\[3\].*2-D"):
        train_attacker(bad, [], cfg, tmp_path)
    with pytest.raises(InvalidInputError, match=r"validation.*speakers"):
        train_attacker(TRAIN, [TrainingItem(VAL[0].waveform, "nobody", None)], cfg, tmp_path)
    no_targets = [TrainingItem(it.waveform, it.speaker, None) for it in TRAIN]
    with pytest.raises(ConfigError, match="target_classifier"):
        train_attacker(no_targets, [], tiny_config(target_classifier="observe"), tmp_path)


# ----------------------------------------------------------------- target classifier modes


def _one_step_encoder(tmp_path: Path, name: str, **kw: object) -> dict[str, torch.Tensor]:
    # 8 items with batch 8: exactly one optimizer step.
    cfg = tiny_config(epochs=1, batch_size=8, lr_step_size=1, **kw)
    train_attacker(TRAIN[::4], [], cfg, tmp_path / name)
    state: dict[str, torch.Tensor] = load_checkpoint(tmp_path / name / "last.pt")["encoder"]
    return state


@pytest.mark.slow
def test_observe_mode_leaks_no_gradient_into_the_recognizer(tmp_path: Path) -> None:
    off = _one_step_encoder(tmp_path, "off", target_classifier="off")
    observe = _one_step_encoder(tmp_path, "observe", target_classifier="observe")
    adv_zero = _one_step_encoder(
        tmp_path, "adv0", target_classifier="adversarial", adversarial_start_epoch=1
    )
    adv_full = _one_step_encoder(
        tmp_path, "adv1", target_classifier="adversarial", adversarial_start_epoch=0
    )
    init_changed = [k for k in off if not torch.equal(off[k], observe[k])]
    assert init_changed == []
    assert all(torch.equal(off[k], adv_zero[k]) for k in off)  # w_T = 0: no reversed gradient
    assert any(not torch.equal(off[k], adv_full[k]) for k in off)  # w_T = 1: it does reach it


def test_confusion_loss_is_log_k_at_a_uniform_posterior_and_pushes_only_embeddings() -> None:
    weights = torch.randn(5, 8, requires_grad=True)
    # An embedding orthogonal to every class vector scores 0 everywhere: uniform posterior.
    emb = torch.zeros(1, 8)
    emb[0, 0] = 1.0
    with torch.no_grad():
        weights[:, 0] = 0.0
    assert float(confusion_loss(emb, weights, 30.0)) == pytest.approx(math.log(5), rel=1e-6)

    emb = torch.randn(4, 8, requires_grad=True)
    loss = confusion_loss(emb, weights, 30.0)
    assert float(loss) > math.log(5)  # any non-uniform posterior costs more
    loss.backward()
    assert emb.grad is not None and bool(emb.grad.abs().sum() > 0)
    assert weights.grad is None  # the head is not trained to be confusable


def _one_step_state(tmp_path: Path, name: str, **kw: object) -> dict[str, dict[str, torch.Tensor]]:
    cfg = tiny_config(epochs=1, batch_size=8, lr_step_size=1, **kw)
    train_attacker(TRAIN[::4], [], cfg, tmp_path / name)
    return load_checkpoint(tmp_path / name / "last.pt")  # type: ignore[no-any-return]


@pytest.mark.slow
def test_confusion_adversary_trains_the_head_like_observe_and_pushes_the_recognizer(
    tmp_path: Path,
) -> None:
    observe = _one_step_state(tmp_path, "observe", target_classifier="observe")
    common = {"target_classifier": "adversarial", "adversary": "confusion"}
    off_phase = _one_step_state(tmp_path, "c0", adversarial_start_epoch=1, **common)
    on_phase = _one_step_state(tmp_path, "c1", adversarial_start_epoch=0, **common)
    for state in (off_phase, on_phase):  # the head learns on detached embeddings either way
        assert all(
            torch.equal(observe["target_head"][k], state["target_head"][k])
            for k in observe["target_head"]
        )
    enc = observe["encoder"]
    assert all(torch.equal(enc[k], off_phase["encoder"][k]) for k in enc)  # w_T = 0: no push
    assert any(not torch.equal(enc[k], on_phase["encoder"][k]) for k in enc)  # w_T = 1: pushed


# ----------------------------------------------------------------- training, history, resume


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[EpochRecord]]:
    out = tmp_path_factory.mktemp("straight")
    cfg = tiny_config(target_classifier="adversarial", adversarial_start_epoch=1)
    result = train_attacker(TRAIN, VAL, cfg, out)
    return out, result.history


@pytest.mark.slow
def test_training_learns_easy_speakers_and_logs_complete_history(
    straight_run: tuple[Path, list[EpochRecord]],
) -> None:
    out, history = straight_run
    assert [r.epoch for r in history] == [1, 2, 3]
    assert history[-1].loss_source < history[0].loss_source
    chance = 100.0 * (1 - 1 / 4)
    assert history[-1].ver_source is not None and history[-1].ver_source < chance / 2
    assert [r.w_target for r in history] == [0.0, 0.5, 1.0]
    on_disk = json.loads((out / "history.json").read_text())
    assert [EpochRecord.model_validate(r) for r in on_disk] == history
    for rec in on_disk:
        for key in EpochRecord.model_fields:
            assert key in rec
        assert rec["ver_target"] is not None and rec["loss_target"] is not None
        assert rec["throughput"] > 0 and rec["epoch_seconds"] >= rec["train_seconds"]
    best = load_checkpoint(out / "best.pt")
    # Adversarial mode with E = 1: only epochs 2 and 3 (w_T > 0) may be kept.
    adversarial = [r for r in history if r.w_target > 0]
    assert best["epoch"] == min(adversarial, key=lambda r: r.ver_source or 0.0).epoch
    assert best["epoch"] > 1
    assert "optimizer" not in best


@pytest.mark.slow
def test_resume_after_crash_is_bit_identical(
    tmp_path: Path, straight_run: tuple[Path, list[EpochRecord]]
) -> None:
    straight_dir, straight_history = straight_run
    cfg = tiny_config(target_classifier="adversarial", adversarial_start_epoch=1)

    class Crash(RuntimeError):
        pass

    def crash_in_epoch_3(epoch: int, step: int, steps: int, eta: float, m: dict) -> None:
        if epoch == 3 and step == 2:  # after two optimizer steps of epoch 3
            raise Crash

    with pytest.raises(Crash):
        train_attacker(TRAIN, VAL, cfg, tmp_path, progress=crash_in_epoch_3)
    assert load_checkpoint(tmp_path / "last.pt")["epoch"] == 2
    resumed = train_attacker(TRAIN, VAL, cfg, tmp_path)
    keys = ("loss_source", "loss_target", "ver_source", "ver_target", "learning_rate", "w_target")
    assert [[getattr(r, k) for k in keys] for r in resumed.history] == [
        [getattr(r, k) for k in keys] for r in straight_history
    ]
    a = extract_embeddings(straight_dir / "last.pt", PROBES, device="cpu")
    b = extract_embeddings(tmp_path / "last.pt", PROBES, device="cpu")
    assert np.array_equal(a, b)
    assert resumed.best_epoch == load_checkpoint(straight_dir / "best.pt")["epoch"]
    a = extract_embeddings(straight_dir / "best.pt", PROBES, device="cpu")
    b = extract_embeddings(tmp_path / "best.pt", PROBES, device="cpu")
    assert np.array_equal(a, b)
    with pytest.raises(ConfigError, match="epochs"):
        train_attacker(TRAIN, VAL, cfg.model_copy(update={"epochs": 4}), tmp_path)


@pytest.mark.slow
def test_same_seed_gives_bit_identical_embeddings_and_other_seed_does_not(tmp_path: Path) -> None:
    cfg = tiny_config(epochs=1, target_classifier="observe")
    data = TRAIN[::2]
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        train_attacker(data, [], cfg.model_copy(update={"seed": seed}), tmp_path / name)
    emb = {n: extract_embeddings(tmp_path / n / "last.pt", PROBES, device="cpu") for n in "abc"}
    assert np.array_equal(emb["a"], emb["b"])
    assert not np.array_equal(emb["a"], emb["c"])


@pytest.mark.slow
def test_progress_callback_reports_every_step_and_epoch_end(tmp_path: Path) -> None:
    calls: list[tuple[int, int, int, float, dict]] = []
    cfg = tiny_config(epochs=1, target_classifier="observe")
    result = train_attacker(
        TRAIN,
        VAL,
        cfg,
        tmp_path,
        progress=lambda *a: calls.append(a),  # type: ignore[arg-type]
    )
    steps = result.history[0].steps
    assert steps == 4
    assert [c[1] for c in calls] == [1, 2, 3, 4, 4]
    assert all(c[2] == steps for c in calls)
    assert all(c[3] >= 0 for c in calls)
    assert "ver_source" in calls[-1][4] and "loss_source" in calls[0][4]
    assert result.history[0].w_target == 0.0  # observe mode never reverses gradients


# ----------------------------------------------------------------- which epoch best.pt keeps

# 5 epochs, E = 2: w_T = 0, 0, 1/3, 2/3, 1. The scripted VER_S is lowest at epoch 2 (w_T = 0);
# among the epochs with w_T > 0 it is lowest at epoch 3.
SCRIPT_EPOCHS, SCRIPT_E = 5, 2
SCRIPTED_VER_S = [50.0, 10.0, 30.0, 40.0, 35.0]


def _records(vers: list[float | None], epochs: int, start: int) -> list[EpochRecord]:
    return [
        EpochRecord(
            epoch=e,
            steps=1,
            loss_source=1.0,
            loss_target=1.0,
            ver_source=v,
            ver_target=50.0,
            learning_rate=1e-3,
            w_target=target_weight(e, epochs, start),
            train_seconds=1.0,
            validation_seconds=1.0,
            epoch_seconds=2.0,
            audio_seconds=8.0,
            throughput=8.0,
        )
        for e, v in enumerate(vers, start=1)
    ]


def test_select_best_epoch_skips_w_t_zero_epochs_in_adversarial_mode_only() -> None:
    history = _records(list(SCRIPTED_VER_S), SCRIPT_EPOCHS, SCRIPT_E)
    schedule = {"epochs": SCRIPT_EPOCHS, "adversarial_start_epoch": SCRIPT_E}
    for adversary in ("reversal", "confusion"):
        adversarial = tiny_config(target_classifier="adversarial", adversary=adversary, **schedule)
        assert select_best_epoch(history, adversarial) == 3
        assert select_best_epoch(history[:2], adversarial) == 0  # none eligible yet
    for mode in ("off", "observe"):
        assert select_best_epoch(history, tiny_config(target_classifier=mode, **schedule)) == 2
    # E >= epochs (w_T never leaves 0, Franzreb et al.'s baseline): every epoch is eligible.
    baseline = tiny_config(target_classifier="adversarial", epochs=5, adversarial_start_epoch=5)
    assert select_best_epoch(_records(list(SCRIPTED_VER_S), 5, 5), baseline) == 2
    # Ties keep the earliest eligible epoch; without validation, the latest eligible epoch.
    adversarial = tiny_config(target_classifier="adversarial", **schedule)
    assert select_best_epoch(_records([9.0, 9.0, 5.0, 5.0, 7.0], 5, 2), adversarial) == 3
    assert select_best_epoch(_records([None] * 5, 5, 2), adversarial) == 5


@pytest.fixture
def scripted_validation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real training steps, but epoch e validates to VER_S = SCRIPTED_VER_S[e - 1]."""

    def validate(self: training._Trainer) -> tuple[float | None, float | None]:
        return SCRIPTED_VER_S[self.epoch], None  # self.epoch = epochs completed so far

    monkeypatch.setattr(training._Trainer, "validate", validate)


def _scripted_config(**kw: object) -> TrainingConfig:
    return tiny_config(
        epochs=SCRIPT_EPOCHS, adversarial_start_epoch=SCRIPT_E, batch_size=8, lr_step_size=1, **kw
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "adversary", "expected"),
    [("adversarial", "reversal", 3), ("adversarial", "confusion", 3), ("observe", "reversal", 2)],
)
def test_best_checkpoint_of_an_adversarial_run_had_w_t_above_zero(
    tmp_path: Path, scripted_validation: None, mode: str, adversary: str, expected: int
) -> None:
    cfg = _scripted_config(target_classifier=mode, adversary=adversary)
    result = train_attacker(TRAIN[::4], [], cfg, tmp_path)  # 8 items: one step per epoch
    assert [r.ver_source for r in result.history] == SCRIPTED_VER_S  # history unchanged
    assert result.best_epoch == expected
    best = load_checkpoint(tmp_path / "best.pt")
    assert best["epoch"] == best["best_epoch"] == expected
    if mode == "adversarial":
        assert result.best_epoch > SCRIPT_E
        assert result.best_w_target == pytest.approx(1 / 3)
    else:  # observe: lowest VER_S over all epochs; w_T is 0 throughout
        assert result.best_w_target == 0.0


class _Crash(RuntimeError):
    pass


def _crash_in(epoch: int) -> ProgressCallback:
    def progress(e: int, step: int, steps: int, eta: float, metrics: dict[str, float]) -> None:
        if e == epoch and step == 1:
            raise _Crash

    return progress


@pytest.mark.slow
@pytest.mark.parametrize("crash_epoch", [3, 5])
def test_resume_keeps_the_adversarial_checkpoint_rule(
    tmp_path: Path, scripted_validation: None, crash_epoch: int
) -> None:
    cfg = _scripted_config(target_classifier="adversarial")
    with pytest.raises(_Crash):
        train_attacker(TRAIN[::4], [], cfg, tmp_path, progress=_crash_in(crash_epoch))
    assert load_checkpoint(tmp_path / "last.pt")["epoch"] == crash_epoch - 1
    result = train_attacker(TRAIN[::4], [], cfg, tmp_path)
    assert result.best_epoch == 3
    assert load_checkpoint(tmp_path / "best.pt")["epoch"] == 3


@pytest.mark.slow
def test_resume_from_a_checkpoint_kept_by_the_older_rule(
    tmp_path: Path, scripted_validation: None
) -> None:
    """The older rule kept epoch 2 (w_T = 0); resuming re-applies the current rule."""
    cfg = _scripted_config(target_classifier="adversarial")

    def crash_under_old_rule(folder: Path, epoch: int) -> None:
        with pytest.raises(_Crash):
            train_attacker(TRAIN[::4], [], cfg, folder, progress=_crash_in(epoch))
        payload = load_checkpoint(folder / "last.pt")
        payload["best_epoch"] = 2
        save_checkpoint(payload, folder / "last.pt")
        (folder / "best.pt").unlink(missing_ok=True)

    # Crashed in epoch 3: no eligible epoch yet, the first one becomes best.pt.
    crash_under_old_rule(tmp_path / "in3", 3)
    assert train_attacker(TRAIN[::4], [], cfg, tmp_path / "in3").best_epoch == 3
    assert load_checkpoint(tmp_path / "in3" / "best.pt")["epoch"] == 3
    # Crashed in epoch 4: epoch 3 is the resumed state, written as best.pt before training on.
    crash_under_old_rule(tmp_path / "in4", 4)
    with pytest.raises(_Crash):
        train_attacker(TRAIN[::4], [], cfg, tmp_path / "in4", progress=_crash_in(4))
    assert load_checkpoint(tmp_path / "in4" / "best.pt")["epoch"] == 3
    assert train_attacker(TRAIN[::4], [], cfg, tmp_path / "in4").best_epoch == 3
    # Crashed in epoch 5: epoch 3's weights are gone, so resuming cannot keep the rule.
    crash_under_old_rule(tmp_path / "in5", 5)
    with pytest.raises(ConfigError, match=r"epoch 2 .*selects epoch 3.*resume=False"):
        train_attacker(TRAIN[::4], [], cfg, tmp_path / "in5")
