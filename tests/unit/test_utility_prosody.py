"""Pitch correlation rho_F0 (VoicePrivacy 2022) against its definition."""

from __future__ import annotations

import numpy as np
import pytest

from services.utility.prosody import (
    MIN_VOICED_FRAMES,
    pitch_correlation,
    pitch_correlation_from_audio,
    resample_contour,
)


def contour(n: int = 300, seed: int = 0) -> np.ndarray:
    """An intonation-like F0 contour (Hz): declination, two accents, noise, unvoiced gaps."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, n)
    f0 = 140.0 * 2 ** (
        (-2 * t + 3 * np.exp(-((t - 0.3) ** 2) / 0.005) + 2 * np.exp(-((t - 0.7) ** 2) / 0.01)) / 12
    )
    f0 = f0 * (1 + 0.01 * rng.standard_normal(n))
    f0[rng.random(n) < 0.25] = np.nan
    f0[:15] = np.nan
    return f0


def test_identical_contour_correlates_perfectly() -> None:
    f0 = contour()
    assert pitch_correlation(f0, f0.copy()) == pytest.approx(1.0, abs=1e-12)


def test_constant_pitch_scaling_keeps_correlation_one() -> None:
    f0 = contour()
    for semitones in (-7.0, 4.0, 12.0):
        assert pitch_correlation(f0, f0 * 2 ** (semitones / 12)) == pytest.approx(1.0, abs=1e-12)


def test_inverted_contour_correlates_negatively() -> None:
    f0 = contour()
    mirrored = 2 * np.nanmean(f0) - f0  # high where the original is low
    assert pitch_correlation(f0, mirrored) == pytest.approx(-1.0, abs=1e-12)


def test_unrelated_contour_correlates_weakly() -> None:
    f0 = contour(seed=1)
    noise = np.where(np.isfinite(f0), np.random.default_rng(5).uniform(100, 200, f0.size), np.nan)
    assert abs(pitch_correlation(f0, noise)) < 0.3


def test_unvoiced_only_or_too_few_common_frames_is_nan() -> None:
    f0 = contour()
    assert np.isnan(pitch_correlation(f0, np.full(f0.size, np.nan)))
    assert np.isnan(pitch_correlation(f0, np.zeros(f0.size)))  # 0 Hz = unvoiced elsewhere
    few = np.full(f0.size, np.nan)
    idx = np.flatnonzero(np.isfinite(f0))[: MIN_VOICED_FRAMES - 1]
    few[idx] = f0[idx]
    assert np.isnan(pitch_correlation(f0, few))
    few[np.flatnonzero(np.isfinite(f0))[MIN_VOICED_FRAMES - 1]] = 150.0
    assert np.isfinite(pitch_correlation(f0, few))


def test_monotone_output_is_nan() -> None:
    f0 = contour()
    assert np.isnan(pitch_correlation(f0, np.where(np.isfinite(f0), 120.0, np.nan)))


def test_one_frame_longer_output_is_compared_frame_by_frame() -> None:
    f0 = contour()
    longer = np.concatenate([f0, [150.0]])
    assert pitch_correlation(f0, longer) == pytest.approx(1.0, abs=1e-12)
    assert pitch_correlation(f0, f0[:-1]) == pytest.approx(1.0, abs=1e-12)


def test_slightly_time_scaled_output_is_resampled() -> None:
    f0 = contour(400)
    scaled = resample_contour(f0, 412)  # 3 % longer: within the resampling tolerance
    assert resample_contour(scaled, f0.size).size == f0.size
    assert pitch_correlation(f0, scaled) > 0.97


def test_time_stretched_output_is_aligned_by_dtw() -> None:
    f0 = contour(400)
    # 30 % slower: far beyond the 5 % resampling tolerance; nearest-neighbour stretch.
    slow = resample_contour(f0, 520) * 2 ** (3 / 12)
    r = pitch_correlation(f0, slow)
    assert r > 0.95
    # Without alignment, comparing the first 400 frames would miss the accents entirely.
    naive = slow[:400]
    both = np.isfinite(f0) & np.isfinite(naive)
    assert np.corrcoef(f0[both], naive[both])[0, 1] < r - 0.2


def test_bad_shapes_are_rejected() -> None:
    from services.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="1-D"):
        pitch_correlation(np.zeros((3, 3)), np.zeros(9))
    with pytest.raises(InvalidInputError, match="16000 Hz"):
        pitch_correlation_from_audio([np.zeros(8000)], [np.zeros(8000)], sample_rate=8000)
    with pytest.raises(InvalidInputError, match="one anonymized utterance per original"):
        pitch_correlation_from_audio([np.zeros(8000)], [])


def test_pitch_anonymizer_keeps_rho_f0_high_on_synthetic_speech() -> None:
    from services.anonymizers.base import AnonymizationItem
    from services.anonymizers.registry import build_anonymizer
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    speakers = sample_speakers(2, seed=3)
    originals = [
        synthesize_utterance(spk, np.random.default_rng(10 + k), duration_s=2.0)
        for k, spk in enumerate(speakers)
    ]
    items = [
        AnonymizationItem(f"u{k}", x, 16_000, spk.speaker_id, spk.gender)
        for k, (x, spk) in enumerate(zip(originals, speakers, strict=True))
    ]
    anonymized = build_anonymizer("pitch", {"semitones": 4.0}).anonymize(items, seed=0)
    out = pitch_correlation_from_audio(originals, anonymized, workers=1)
    assert out["n_utterances"] == 2 and out["n_scored"] == 2
    assert out["mean"] > 0.7, out
    # The same speech against another utterance's pitch: no intonation in common.
    swapped = pitch_correlation_from_audio(originals, anonymized[::-1], workers=1)
    assert swapped["mean"] < out["mean"] - 0.3, (swapped, out)


def test_voices_shifted_out_of_the_natural_range_are_still_tracked() -> None:
    """A low voice lowered an octave (below the attacks' 65 Hz floor) keeps its intonation."""
    from services.anonymizers.base import AnonymizationItem
    from services.anonymizers.registry import build_anonymizer
    from services.attacks.f0 import F0Params
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    low = min(sample_speakers(8, seed=5), key=lambda s: s.f0_hz)
    assert low.f0_hz / 2 < 65.0
    x = synthesize_utterance(low, np.random.default_rng(1), duration_s=2.0)
    item = AnonymizationItem("u", x, 16_000, low.speaker_id, low.gender)
    y = build_anonymizer("pitch", {"semitones": -12.0}).anonymize([item], seed=0)[0]
    out = pitch_correlation_from_audio([x], [y], workers=1)
    assert out["n_scored"] == 1 and out["mean"] > 0.8, out
    # The attacks' 65-450 Hz search finds no voiced frame in the lowered voice.
    narrow = pitch_correlation_from_audio([x], [y], workers=1, params=F0Params())
    assert narrow["n_scored"] == 0


def test_very_long_contours_are_resampled_instead_of_dtw(monkeypatch: pytest.MonkeyPatch) -> None:
    import services.utility.prosody as prosody

    def no_dtw(*_: object) -> None:
        raise AssertionError("DTW must not run on long contours")

    f0 = contour(400)
    slow = resample_contour(f0, 520)
    monkeypatch.setattr(prosody, "MAX_DTW_CELLS", 400 * 520 - 1)
    monkeypatch.setattr(prosody, "dtw_align", no_dtw)
    assert pitch_correlation(f0, slow) > 0.5
