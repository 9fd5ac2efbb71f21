"""Feature-domain transforms of the pre-restoration attack against the attacker's own features."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from services.anonymizers.builtin import finish_waveform
from services.anonymizers.pitch import pitch_shift
from services.anonymizers.vtln import vtln_warp
from services.anonymizers.warps import IDENTITY_PARAMETER, TRANSFORM_FAMILIES, parameter_grid
from services.attacker.models import SpeakerEncoder
from services.attacks.feature_warp import (
    FeatureDomainTransformer,
    mel_matrix,
    pitch_window,
    smearing_frames,
    smoothing_kernels,
    source_frequencies,
    warp_matrices,
)
from services.corpus.synthetic import sample_speakers, synthesize_utterance

SR = 16_000


@pytest.fixture(scope="module")
def encoder() -> SpeakerEncoder:
    torch.manual_seed(0)
    return SpeakerEncoder("tiny").eval()


@pytest.fixture(scope="module")
def speech() -> np.ndarray:
    return synthesize_utterance(
        sample_speakers(1, seed=3)[0], np.random.default_rng(5), duration_s=2.0
    )


def _features(encoder: SpeakerEncoder, wav: np.ndarray) -> torch.Tensor:
    with torch.inference_mode():
        return encoder.features(torch.from_numpy(np.ascontiguousarray(wav)).unsqueeze(0))[0]


def test_identity_features_equal_the_attackers_fbank(
    encoder: SpeakerEncoder, speech: np.ndarray
) -> None:
    plan = [(f, float(IDENTITY_PARAMETER[f])) for f in TRANSFORM_FAMILIES]
    feats = FeatureDomainTransformer(encoder.features, plan).transform(speech)
    ref = _features(encoder, speech)
    assert feats.shape == (len(plan), *ref.shape)
    assert float((feats - ref).abs().max()) < 1e-3  # dB; rounding only


def test_identity_warp_matrices_are_the_identity() -> None:
    for family in TRANSFORM_FAMILIES:
        w = warp_matrices(family, [IDENTITY_PARAMETER[family]], 201)[0]
        np.testing.assert_allclose(w, np.eye(201), atol=1e-9)


def test_warp_matrix_rows_interpolate_the_source_frequency() -> None:
    n = 201
    omega = np.linspace(0, np.pi, n)
    for family in TRANSFORM_FAMILIES:
        params = parameter_grid(family)
        w = warp_matrices(family, params, n)
        bins = np.arange(n, dtype=np.float64)
        for r, a in enumerate(params):
            src = source_frequencies(family, omega, float(a)) / np.pi * (n - 1)
            inside = src <= n - 1 + 1e-9
            # A linear ramp is reproduced exactly by linear interpolation.
            np.testing.assert_allclose((w[r] @ bins)[inside], src[inside], atol=1e-6)
            assert np.all(w[r][~inside] == 0.0)


def test_pitch_warp_moves_a_tone_by_the_semitone_ratio(encoder: SpeakerEncoder) -> None:
    t = np.arange(SR) / SR
    tone = (0.5 * np.sin(2 * np.pi * 1000.0 * t)).astype(np.float32)
    tr = FeatureDomainTransformer(
        encoder.features, [("pitch", 0.0), ("pitch", 12.0), ("pitch", -7.0)]
    )
    power = tr.power_spectrum(tone).numpy().mean(axis=0)
    w = warp_matrices("pitch", [12.0, -7.0], power.size)
    hz = np.linspace(0, SR / 2, power.size)
    assert abs(hz[np.argmax(w[0] @ power)] - 2000.0) <= 40.0  # one bin (40 Hz)
    assert abs(hz[np.argmax(w[1] @ power)] - 1000.0 * 2 ** (-7 / 12)) <= 40.0


def test_mel_matrix_reproduces_speechbrains_filterbank(
    encoder: SpeakerEncoder, speech: np.ndarray
) -> None:
    cf = encoder.features.fbank.compute_fbanks
    tr = FeatureDomainTransformer(encoder.features, [("pitch", 0.0)])
    power = tr.power_spectrum(speech).unsqueeze(0)
    with torch.inference_mode():
        expected = cf(power)
        got = cf._amplitude_to_DB(power @ mel_matrix(encoder.features))
    torch.testing.assert_close(got, expected)


@pytest.mark.parametrize(
    ("family", "parameter"),
    [
        ("pitch", 4.0),
        ("pitch", -5.0),
        ("bilinear", 0.1),
        ("power", -0.2),
        ("piecewise_linear", 1.2),
    ],
)
def test_feature_warp_matches_the_waveform_transform(
    encoder: SpeakerEncoder, speech: np.ndarray, family: str, parameter: float
) -> None:
    """Warping the power spectrum ~ transforming the waveform and recomputing the features.

    Compared on the long-term log-mel spectrum (frame-level values differ by the phase vocoder's
    smearing): the warped features must be much closer to the transformed waveform's than the
    untransformed features are.
    """
    x = speech.astype(np.float64)
    if family == "pitch":
        y = finish_waveform(pitch_shift(x, parameter), x)
    else:
        y = finish_waveform(vtln_warp(x, family, parameter, "spectrum"), x)
    tr = FeatureDomainTransformer(encoder.features, [(family, parameter)])
    cf = encoder.features.fbank.compute_fbanks
    with torch.inference_mode():
        warped = cf._amplitude_to_DB((tr.power_spectrum(speech) @ tr.composite).unsqueeze(0))
        reference = cf(tr.power_spectrum(y).unsqueeze(0))
        untouched = cf(tr.power_spectrum(speech).unsqueeze(0))

    def long_term(db: torch.Tensor) -> np.ndarray:
        lt = db[0].mean(0).numpy()
        return lt - lt.mean()

    ref = long_term(reference)
    err = np.abs(long_term(warped) - ref).mean()
    err_untouched = np.abs(long_term(untouched) - ref).mean()
    assert err < 0.6 * err_untouched
    assert err < 2.5  # dB
    assert np.corrcoef(long_term(warped), ref)[0, 1] > 0.97


def test_smoothing_kernels_are_normalized_gaussians_and_the_identity_is_untouched() -> None:
    h, w = smoothing_kernels([0.0, 0.6, 1.5])
    assert h == 5 and w.shape == (11, 3)
    np.testing.assert_allclose(w.sum(axis=0), 1.0)
    np.testing.assert_array_equal(w[:, 0], np.eye(11)[5])  # sigma 0: unit impulse
    lags = np.arange(-5, 6)
    std = np.sqrt((w * lags[:, None] ** 2).sum(axis=0))
    assert abs(std[2] - 1.5) < 0.05 and abs(std[1] - 0.6) < 0.05
    assert smearing_frames("pitch", 0.0) == 0.0 and smearing_frames("piecewise_linear", 1.0) == 0.0
    pitch = [smearing_frames("pitch", float(a)) for a in parameter_grid("pitch") if a != 0]
    assert np.all(np.diff(pitch) > 0)  # a longer analysis window for higher ratios


def test_antialiased_warp_matrices_keep_every_source_bin_and_equal_linear_when_stretching() -> None:
    n = 201
    linear = warp_matrices("pitch", [4.0, -12.0], n)
    smooth = warp_matrices("pitch", [4.0, -12.0], n, antialias=True)
    np.testing.assert_allclose(smooth[0], linear[0], atol=1e-12)  # stretching: no change
    inside = smooth[1].sum(axis=1) > 0
    np.testing.assert_allclose(smooth[1][inside].sum(axis=1), 1.0)
    # An octave down reads every second source bin: linear interpolation skips the odd ones.
    assert np.all(linear[1][:, 1:199:2].sum(axis=0) < 1e-9)
    assert np.all(smooth[1][:, :199].sum(axis=0) > 0.1)


@pytest.mark.parametrize(("family", "parameter"), [("pitch", 4.0), ("bilinear", -0.14)])
def test_time_smoothing_brings_the_frames_closer_to_the_waveform_transform(
    encoder: SpeakerEncoder, speech: np.ndarray, family: str, parameter: float
) -> None:
    """Frame-level mean |log-mel difference| to the transformed waveform's features."""
    x = speech.astype(np.float64)
    if family == "pitch":
        y = finish_waveform(pitch_shift(x, parameter), x)
    else:
        y = finish_waveform(vtln_warp(x, family, parameter, "spectrum"), x)
    reference = _features(encoder, y)
    plan = [(family, parameter)]
    errors = [
        float(
            (
                FeatureDomainTransformer(encoder.features, plan, time_smoothing=s).transform(
                    speech
                )[0]
                - reference
            )
            .abs()
            .mean()
        )
        for s in (False, True)
    ]
    assert errors[1] < 0.85 * errors[0]


def test_pitch_window_scales_with_the_pitch_ratio() -> None:
    assert pitch_window(0.0) == 400
    assert pitch_window(12.0) == 800 and pitch_window(-12.0) == 200
    assert pitch_window(4.0) == 504  # 400 * 2^(4/12) = 503.97
    assert all(pitch_window(float(a)) % 2 == 0 for a in parameter_grid("pitch"))


# Measured ratios (scaled / warp): 0.85 at +4, 0.94 at -5, 0.79 at +9 semitones. Upward shifts
# gain most: there the warp widens every harmonic's mainlobe by the ratio.
@pytest.mark.parametrize(("parameter", "bound"), [(4.0, 0.9), (-5.0, 0.97), (9.0, 0.85)])
def test_scaled_pitch_window_is_closer_to_the_waveform_pitch_shift_than_the_warp(
    encoder: SpeakerEncoder, speech: np.ndarray, parameter: float, bound: float
) -> None:
    """Frame-level mean |log-mel difference| to the phase-vocoder pitch shift's features: the
    scaled-window STFT keeps the harmonics' mainlobe width, the warp widens it by the ratio."""
    x = speech.astype(np.float64)
    reference = _features(encoder, finish_waveform(pitch_shift(x, parameter), x))
    plan = [("pitch", parameter)]
    errors = [
        float(
            (
                FeatureDomainTransformer(
                    encoder.features, plan, scaled_pitch_window=scaled
                ).transform(speech)[0]
                - reference
            )
            .abs()
            .mean()
        )
        for scaled in (False, True)
    ]
    assert errors[1] < bound * errors[0]


def test_scaled_pitch_window_leaves_the_other_families_and_the_identity_alone(
    encoder: SpeakerEncoder, speech: np.ndarray
) -> None:
    plan = [("pitch", 0.0), ("pitch", 3.0), ("bilinear", 0.1), ("power", -0.2)]
    on = FeatureDomainTransformer(encoder.features, plan).transform(speech).clone()
    off = FeatureDomainTransformer(encoder.features, plan, scaled_pitch_window=False).transform(
        speech
    )
    torch.testing.assert_close(on[[0, 2, 3]], off[[0, 2, 3]], rtol=0, atol=0)
    assert float((on[1] - off[1]).abs().mean()) > 0.1
