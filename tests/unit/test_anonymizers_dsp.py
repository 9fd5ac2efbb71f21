"""Batched DSP primitives and voice profiles of the built-in anonymizers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import solve_toeplitz
from scipy.signal import lfilter

from services.anonymizers.dsp import (
    autocorrelation,
    frame_signal,
    istft,
    lpc,
    overlap_add,
    polynomial_from_roots,
    polynomial_roots,
    stft,
    yin_f0,
)
from services.anonymizers.voice import REFERENCE_F0_HZ, estimate_voice_profile, median_f0_hz

SR = 16_000


def harmonic_vowel(
    f0: float, scale: float = 1.0, duration_s: float = 1.5, formants=(500, 1500, 2500, 3500)
) -> np.ndarray:
    """Harmonics of ``f0`` (1/h amplitudes) through resonators at ``scale`` x ``formants`` Hz."""
    t = np.arange(int(duration_s * SR)) / SR
    x = sum(np.sin(2 * np.pi * h * f0 * t) / h for h in range(1, int(7000 / f0) + 1))
    for f, bw in zip(formants, (80, 100, 120, 150), strict=True):
        r = np.exp(-np.pi * bw / SR)
        theta = 2 * np.pi * f * scale / SR
        x = lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], x)
    return (0.5 * x / np.max(np.abs(x))).astype(np.float32)


def test_lpc_matches_scipy_toeplitz_solve() -> None:
    rng = np.random.default_rng(0)
    frames = lfilter([1.0], [1.0, -0.9, 0.4], rng.standard_normal((5, 400)), axis=1)
    a = lpc(frames, 12)
    r = autocorrelation(frames, 12)
    for i in range(5):
        coeffs = solve_toeplitz(r[i, :12], -r[i, 1:13])
        np.testing.assert_allclose(a[i, 1:], coeffs, rtol=1e-5, atol=1e-7)
        assert a[i, 0] == 1.0


def test_lpc_of_silence_is_finite() -> None:
    a = lpc(np.zeros((3, 320)), 20)
    assert np.all(np.isfinite(a))


def test_roots_and_polynomial_round_trip() -> None:
    rng = np.random.default_rng(1)
    coeffs = np.concatenate([np.ones((4, 1)), 0.1 * rng.standard_normal((4, 8))], axis=1)
    back = polynomial_from_roots(polynomial_roots(coeffs))
    np.testing.assert_allclose(back.real, coeffs, atol=1e-9)
    np.testing.assert_allclose(back.imag, 0.0, atol=1e-9)


def test_framing_and_overlap_add_reconstruct_with_rectangular_frames() -> None:
    x = np.random.default_rng(2).standard_normal(1000)
    frames = frame_signal(x, 400, 100)
    assert frames.shape == (10, 400)
    np.testing.assert_allclose(overlap_add(frames, 100, 1000)[300:700], 4 * x[300:700])


def test_stft_istft_is_identity() -> None:
    x = np.random.default_rng(3).standard_normal(5001)
    win = np.hanning(513)[:-1]
    y = istft(stft(x, 512, 128, win), 512, 128, win, len(x))
    np.testing.assert_allclose(y, x, atol=1e-9)


@pytest.mark.parametrize("f0", [70.0, 123.0, 260.0, 400.0])
def test_yin_tracks_a_harmonic_tone(f0: float) -> None:
    x = harmonic_vowel(f0)
    est, voiced = yin_f0(x, SR)
    assert voiced.mean() > 0.9
    assert np.median(est[voiced]) == pytest.approx(f0, rel=0.01)


def test_yin_calls_noise_and_silence_unvoiced() -> None:
    noise = np.random.default_rng(4).standard_normal(SR).astype(np.float32) * 0.1
    _, voiced = yin_f0(noise, SR)
    assert voiced.mean() < 0.1
    assert median_f0_hz(np.zeros(SR, dtype=np.float32)) == REFERENCE_F0_HZ


def test_voice_profile_recovers_f0_and_formant_scale_ratio() -> None:
    base = estimate_voice_profile(harmonic_vowel(110.0, 1.0))
    short_tract = estimate_voice_profile(harmonic_vowel(220.0, 1.2))
    assert base.median_f0_hz == pytest.approx(110.0, rel=0.02)
    assert short_tract.median_f0_hz == pytest.approx(220.0, rel=0.02)
    assert base.formant_scale == pytest.approx(1.0, rel=0.05)
    assert short_tract.formant_scale / base.formant_scale == pytest.approx(1.2, rel=0.05)


def test_voice_profile_pools_several_waveforms() -> None:
    low, high = harmonic_vowel(100.0), harmonic_vowel(300.0, duration_s=0.5)
    pooled = estimate_voice_profile([low, high])
    # Three times as many voiced frames at 100 Hz: the median is the low voice's F0.
    assert pooled.median_f0_hz == pytest.approx(100.0, rel=0.02)
