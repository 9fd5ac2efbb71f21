"""Training-batch augmentation: shapes, speed factors, achieved SNR, determinism per seed,
fidelity to SpeechBrain's DropFreq, DropChunk, generated noises and room responses."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from services.attacker.augmentation import (
    BatchAugmenter,
    apply_fir,
    colored_noise,
    drop_freq_filter,
    room_impulse_responses,
)
from services.attacker.training_config import AugmentationConfig

RATE = 16000
OFF = {"noise_prob": 0.0, "reverb_prob": 0.0, "drop_freq_prob": 0.0, "drop_chunk_prob": 0.0}


def _batch(n: int = 6, seconds: float = 1.0, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = torch.arange(int(seconds * RATE)) / RATE
    f0 = 100.0 + 40.0 * torch.arange(n)[:, None]
    voiced = sum(torch.sin(2 * math.pi * h * f0 * t) / h for h in range(1, 6))
    return (0.2 * voiced + 0.01 * torch.randn(n, t.numel(), generator=g)).to(torch.float32)


@pytest.mark.parametrize("speed", [0.9, 1.0, 1.1])
def test_speed_factor_changes_the_length_as_expected(speed: float) -> None:
    x = _batch()
    out = BatchAugmenter(AugmentationConfig(speeds=(speed,), **OFF)).augment(x, 0)
    assert out.speed == speed and out.waveforms.shape[0] == x.shape[0]
    assert abs(out.waveforms.shape[1] - x.shape[1] / speed) <= 1
    if speed == 1.0:
        assert torch.equal(out.waveforms, x)  # nothing else enabled: untouched


def test_all_augmentations_keep_shape_dtype_and_finite_values() -> None:
    x = _batch(8)
    cfg = AugmentationConfig(speeds=(1.0,), noise_prob=1, reverb_prob=1, drop_freq_prob=1,
                             drop_chunk_prob=1)  # fmt: skip
    before = x.clone()
    out = BatchAugmenter(cfg).augment(x, 3)
    assert torch.equal(x, before)  # the caller's batch is not written into
    assert out.waveforms.shape == x.shape and out.waveforms.dtype == torch.float32
    assert torch.isfinite(out.waveforms).all()
    assert not torch.allclose(out.waveforms, x)
    assert np.isfinite(out.snr_db).all() and np.isfinite(out.rt60_seconds).all()
    assert out.drop_freq.all() and out.drop_chunk.all()


@pytest.mark.parametrize("kind", ["white", "pink", "brown", "babble"])
def test_noise_is_added_at_the_drawn_snr(kind: str) -> None:
    x = _batch(6)
    cfg = AugmentationConfig(speeds=(1.0,), **{**OFF, "noise_prob": 1.0}, noise_types=(kind,),
                             snr_db=(-5.0, 20.0))  # fmt: skip
    out = BatchAugmenter(cfg).augment(x, 11)
    noise = (out.waveforms - x).double()
    achieved = 10 * torch.log10(x.double().pow(2).mean(1) / noise.pow(2).mean(1))
    np.testing.assert_allclose(achieved.numpy(), out.snr_db, atol=0.01)
    assert ((out.snr_db >= -5.0) & (out.snr_db <= 20.0)).all()
    assert np.ptp(out.snr_db) > 1.0  # drawn per crop
    assert out.noise_type == [kind] * 6


def test_babble_is_other_crops_and_a_single_crop_gets_pink_noise() -> None:
    x = _batch(4)
    cfg = AugmentationConfig(speeds=(1.0,), **{**OFF, "noise_prob": 1.0}, noise_types=("babble",),
                             babble_speakers=1)  # fmt: skip
    out = BatchAugmenter(cfg).augment(x, 5)
    noise = (out.waveforms - x).double()
    # crop 0's noise is a scaled copy of crop 1
    corr = np.corrcoef(noise[0].numpy(), x[1].double().numpy())[0, 1]
    assert corr > 0.999
    single = BatchAugmenter(cfg).augment(x[:1], 5)
    assert single.noise_type == ["pink"]


def test_generated_noise_colours_have_the_expected_spectral_tilt() -> None:
    g = torch.Generator().manual_seed(0)
    low_share = {}
    for kind, alpha in (("white", 0.0), ("pink", 1.0), ("brown", 2.0)):
        n = colored_noise(4, RATE, alpha, g).double()
        assert n.pow(2).mean(1).numpy() == pytest.approx(np.ones(4))
        psd = torch.fft.rfft(n, dim=1).abs().pow(2).mean(0)
        f = torch.fft.rfftfreq(RATE, 1 / RATE)
        low_share[kind] = float(psd[(f > 0) & (f < 500)].sum() / psd.sum())
        # slope of log power vs log frequency over 100 Hz - 4 kHz is about -alpha
        band = (f > 100) & (f < 4000)
        slope = np.polyfit(np.log(f[band].numpy()), np.log(psd[band].numpy()), 1)[0]
        assert slope == pytest.approx(-alpha, abs=0.15)
    assert low_share["white"] < low_share["pink"] < low_share["brown"]


def test_same_seed_same_batch_other_seed_other_batch_and_global_rng_untouched() -> None:
    x = _batch(6)
    cfg = AugmentationConfig(reverb_prob=0.5)
    aug = BatchAugmenter(cfg)
    state = torch.get_rng_state()
    a = aug.augment(x, (0, 2, 7))
    assert torch.equal(torch.get_rng_state(), state)
    b = BatchAugmenter(cfg).augment(x, (0, 2, 7))
    assert torch.equal(a.waveforms, b.waveforms)
    np.testing.assert_array_equal(a.snr_db, b.snr_db)
    others = [aug.augment(x, (0, 2, step)) for step in (8, 9, 10)]
    assert any(
        o.waveforms.shape != a.waveforms.shape or not torch.equal(o.waveforms, a.waveforms)
        for o in others
    )


def test_drop_freq_filter_equals_speechbrains_dropfreq() -> None:
    from speechbrain.augment.time_domain import DropFreq

    x = _batch(3, 0.5)
    for seed in (1, 2, 3):
        torch.manual_seed(seed)  # DropFreq draws: count, then frequencies
        count = torch.randint(1, 4, (1,))
        freqs = torch.rand(count) * (1 - 1e-14) + 1e-14
        torch.manual_seed(seed)
        expected = DropFreq(drop_freq_width=0.05)(x)
        ours = apply_fir(x, drop_freq_filter(freqs.double(), 0.05))
        assert (ours - expected).abs().max() < 1e-4 * expected.abs().max()


def test_drop_chunk_zeroes_chunks_of_the_configured_length() -> None:
    x = _batch(5) + 1.0  # no natural zeros
    cfg = AugmentationConfig(speeds=(1.0,), **{**OFF, "drop_chunk_prob": 1.0},
                             drop_chunk_count=(1, 1), drop_chunk_seconds=(0.05, 0.05))  # fmt: skip
    out = BatchAugmenter(cfg).augment(x, 2).waveforms
    zeros = (out == 0).sum(dim=1)
    assert (zeros == round(0.05 * RATE)).all()


def test_room_responses_decay_by_60_db_over_rt60_and_keep_rms() -> None:
    g = torch.Generator().manual_seed(0)
    rt60 = torch.tensor([0.3, 0.6], dtype=torch.float64)
    rir = room_impulse_responses(rt60, RATE, g).double()
    assert rir.shape == (2, math.ceil(0.6 * RATE)) and (rir[:, 0] == 1.0).all()
    # energy of the reflections in the first vs the last 50 ms of each RT60 window
    for i, t60 in enumerate((0.3, 0.6)):
        n = int(t60 * RATE)
        head = rir[i, 1:800].pow(2).mean()
        tail = rir[i, n - 800 : n].pow(2).mean()
        assert 10 * math.log10(head / tail) == pytest.approx(60.0 * (n - 800) / n, abs=3.0)
    x = _batch(4)
    cfg = AugmentationConfig(speeds=(1.0,), **{**OFF, "reverb_prob": 1.0})
    out = BatchAugmenter(cfg).augment(x, 4)
    np.testing.assert_allclose(
        out.waveforms.pow(2).mean(1).sqrt().numpy(), x.pow(2).mean(1).sqrt().numpy(), rtol=1e-4
    )
    assert ((out.rt60_seconds >= 0.2) & (out.rt60_seconds <= 0.8)).all()


def test_config_rejects_inverted_ranges_and_bad_input() -> None:
    with pytest.raises(ValidationError, match="snr_db"):
        AugmentationConfig(snr_db=(10.0, 0.0))
    with pytest.raises(ValidationError, match="speeds"):
        AugmentationConfig(speeds=(0.0, 1.0))
    with pytest.raises(ValueError, match="batch, samples"):
        BatchAugmenter(AugmentationConfig()).augment(torch.zeros(16000), 0)


# -- the hook in the training loop ---------------------------------------------------------------


def test_unset_augmentation_leaves_training_configs_and_stage_keys_as_they_were() -> None:
    from services.attacker.training_config import TrainingConfig

    assert "augmentation" not in TrainingConfig().model_dump(mode="json")
    with_aug = TrainingConfig(augmentation=AugmentationConfig())
    dumped = with_aug.model_dump(mode="json")
    assert dumped["augmentation"]["speeds"] == [0.9, 1.0, 1.1]
    assert TrainingConfig.model_validate(dumped) == with_aug  # a checkpoint's config round-trips


@pytest.mark.slow
def test_training_with_augmentation_is_deterministic_and_differs_from_without(
    tmp_path: Path,
) -> None:
    from services.attacker.embeddings import extract_embeddings
    from services.attacker.training import train_attacker
    from services.attacker.training_config import TrainingConfig
    from services.attacker.training_records import TrainingItem

    rng = np.random.default_rng(0)
    items = [
        TrainingItem(_batch(1, 1.2, seed=k)[0].numpy() * (1 + 0.1 * k), f"s{k % 3}", None)
        for k in range(9)
    ]
    base = TrainingConfig(preset="tiny", epochs=1, batch_size=4, crop_seconds=1.0, device="cpu")
    aug = base.model_copy(update={"augmentation": AugmentationConfig(noise_prob=1.0)})
    for name, cfg in (("a", aug), ("b", aug), ("plain", base)):
        train_attacker(items, [], cfg, tmp_path / name)
    probes = [rng.standard_normal(RATE).astype(np.float32) * 0.1]
    emb = {
        n: extract_embeddings(tmp_path / n / "last.pt", probes, device="cpu")
        for n in ("a", "b", "plain")
    }
    assert np.array_equal(emb["a"], emb["b"])
    assert not np.array_equal(emb["a"], emb["plain"])
