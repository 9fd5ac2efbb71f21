"""Training the attacker's recognizer: GRL, schedules, target classifier modes, determinism."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from speechbrain.nnet.schedulers import CyclicLRScheduler

from services.attacker.checkpoint import load_checkpoint
from services.attacker.embeddings import extract_embeddings
from services.attacker.models import build_embedding_model, get_preset
from services.attacker.training import (
    EpochRecord,
    TrainingConfig,
    TrainingItem,
    confusion_loss,
    cyclic_learning_rate,
    reverse_gradient,
    target_weight,
    train_attacker,
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
    vers = [r.ver_source for r in history]
    assert best["epoch"] == 1 + int(np.argmin(vers))
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
