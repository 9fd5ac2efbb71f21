"""Built-in anonymizers: pitch, VTLN, McAdams; parameter modes, output contract, registry."""

from __future__ import annotations

from functools import cache

import librosa
import numpy as np
import pytest
from scipy.signal import lfilter, welch

from services.anonymizers.base import AnonymizationItem, TargetVoice, VoiceProfile
from services.anonymizers.builtin import PEAK_LIMIT, BuiltinAnonymizer
from services.anonymizers.mcadams import McAdamsAnonymizer
from services.anonymizers.pitch import PitchShiftAnonymizer
from services.anonymizers.registry import build_anonymizer
from services.anonymizers.voice import estimate_voice_profile, median_f0_hz
from services.anonymizers.vtln import VTLNAnonymizer
from services.anonymizers.warps import WARP_FAMILIES, inverse_warp
from services.corpus.synthetic import sample_speakers, synthesize_utterance
from services.errors import InvalidInputError

SR = 16_000


def harmonic_tone(f0: float, duration_s: float = 1.5, peak: float = 0.5) -> np.ndarray:
    t = np.arange(int(duration_s * SR)) / SR
    x = sum(np.sin(2 * np.pi * h * f0 * t) / h for h in range(1, int(7000 / f0) + 1))
    x = lfilter([1.0], [1.0, -1.2, 0.6], x)  # a broad resonance, a little like a vowel
    return (peak * x / np.max(np.abs(x))).astype(np.float32)


def resonant_noise(freq_hz: float, bandwidth_hz: float = 120.0, seconds: float = 3.0) -> np.ndarray:
    """White noise through one resonator: a smooth spectrum with a single peak at ``freq_hz``."""
    noise = np.random.default_rng(0).standard_normal(int(seconds * SR))
    r = np.exp(-np.pi * bandwidth_hz / SR)
    theta = 2 * np.pi * freq_hz / SR
    x = lfilter([1.0], [1.0, -2 * r * np.cos(theta), r * r], noise)
    return (0.3 * x / np.max(np.abs(x))).astype(np.float32)


def spectral_peak_hz(x: np.ndarray) -> float:
    f, p = welch(x, SR, nperseg=1024)
    smooth = np.convolve(10 * np.log10(p + 1e-20), np.ones(5) / 5, mode="same")
    band = (f > 200) & (f < 7000)
    return float(f[band][np.argmax(smooth[band])])


def item(x: np.ndarray, utt_id: str = "u1", target: TargetVoice | None = None) -> AnonymizationItem:
    return AnonymizationItem(
        utt_id=utt_id,
        waveform=x,
        sample_rate=SR,
        source_speaker_id="spk",
        source_gender="m",
        target=target,
    )


def yin_median(x: np.ndarray) -> float:
    """Median F0 by librosa's YIN (independent of the anonymizers' own tracker)."""
    return float(np.median(librosa.yin(x, fmin=50, fmax=700, sr=SR, frame_length=2048)[5:-5]))


def snr_db(reference: np.ndarray, estimate: np.ndarray) -> float:
    err = reference.astype(np.float64) - estimate
    if not np.any(err):
        return float("inf")
    return float(10 * np.log10(np.sum(reference.astype(np.float64) ** 2) / np.sum(err**2)))


@cache
def corpus_utterance(index: int = 1, seconds: float = 3.0) -> tuple[np.ndarray, float]:
    """A synthetic-corpus utterance (16 kHz) and its speaker's F0 parameter (Hz)."""
    speaker = sample_speakers(4, seed=0)[index]
    wav = synthesize_utterance(speaker, np.random.default_rng(5), duration_s=seconds)
    return wav, speaker.f0_hz


ALL_BUILTINS = [
    PitchShiftAnonymizer(semitones=4.0),
    *(VTLNAnonymizer(warp=w, alpha=None) for w in WARP_FAMILIES),
    McAdamsAnonymizer(alpha=0.8),
]


# -- pitch -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("semitones", "factor"), [(12.0, 2.0), (-12.0, 0.5), (7.0, 2 ** (7 / 12))])
def test_pitch_shift_scales_f0_of_a_harmonic_tone(semitones: float, factor: float) -> None:
    x = harmonic_tone(140.0)
    y = PitchShiftAnonymizer(semitones=semitones).anonymize([item(x)], seed=0)[0]
    assert len(y) == len(x)
    assert yin_median(y) == pytest.approx(140.0 * factor, rel=0.03)


@pytest.mark.parametrize("semitones", [12.0, -12.0])
def test_pitch_shift_doubles_or_halves_f0_of_synthetic_speech(semitones: float) -> None:
    x, _ = corpus_utterance()
    y = PitchShiftAnonymizer(semitones=semitones).anonymize([item(x)], seed=0)[0]
    ratio = median_f0_hz(y) / median_f0_hz(x)
    assert ratio == pytest.approx(2.0 ** (semitones / 12), rel=0.03)


def test_pitch_target_mode_moves_median_f0_to_the_target_within_a_semitone() -> None:
    x, _ = corpus_utterance(index=1)
    source_f0 = median_f0_hz(x)
    for target_f0 in (0.7 * source_f0, 1.6 * source_f0):
        target = TargetVoice("t1", "f", VoiceProfile(median_f0_hz=target_f0, formant_scale=1.0))
        y = PitchShiftAnonymizer().anonymize([item(x, target=target)], seed=3)[0]
        assert abs(12 * np.log2(median_f0_hz(y) / target_f0)) < 1.0


# -- identity parameters -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "anonymizer",
    [
        PitchShiftAnonymizer(semitones=0.0),
        VTLNAnonymizer("bilinear", alpha=0.0),
        VTLNAnonymizer("quadratic", alpha=0.0),
        VTLNAnonymizer("power", alpha=0.0),
        VTLNAnonymizer("piecewise_linear", alpha=1.0),
        VTLNAnonymizer("power", alpha=0.0, mode="spectrum"),
        McAdamsAnonymizer(alpha=1.0),
    ],
    ids=lambda a: str(a.config()),
)
def test_identity_parameters_return_the_input(anonymizer: BuiltinAnonymizer) -> None:
    x, _ = corpus_utterance()
    y = anonymizer.anonymize([item(x)], seed=0)[0]
    assert snr_db(x, y) > 30.0


def test_non_identity_parameters_change_the_signal() -> None:
    x, _ = corpus_utterance()
    for anonymizer in (
        PitchShiftAnonymizer(semitones=3.0),
        VTLNAnonymizer("power", alpha=0.2),
        McAdamsAnonymizer(alpha=0.8),
    ):
        assert snr_db(x, anonymizer.anonymize([item(x)], seed=0)[0]) < 10.0


# -- VTLN / McAdams move spectral peaks where the math says --------------------------------------


@pytest.mark.parametrize("mode", ["envelope", "spectrum"])
@pytest.mark.parametrize(
    ("family", "alpha"),
    [
        ("bilinear", -0.2),
        ("bilinear", 0.2),
        ("quadratic", 1.5),
        ("power", 0.3),
        ("power", -0.2),
        ("piecewise_linear", 0.8),
        ("piecewise_linear", 1.25),
    ],
)
def test_vtln_moves_a_spectral_peak_to_the_inverse_warp(
    family: str, alpha: float, mode: str
) -> None:
    peak = 1500.0
    x = resonant_noise(peak)
    y = VTLNAnonymizer(family, alpha=alpha, mode=mode).anonymize([item(x)], seed=0)[0]
    expected = float(inverse_warp(family, np.pi * peak / 8000.0, alpha)) / np.pi * 8000.0
    measured = spectral_peak_hz(y)
    assert (measured - peak) * (expected - peak) > 0, "peak moved the wrong way"
    assert measured == pytest.approx(expected, rel=0.06)


def test_vtln_envelope_mode_keeps_f0_and_spectrum_mode_moves_it() -> None:
    x = harmonic_tone(150.0)
    kept = VTLNAnonymizer("piecewise_linear", alpha=0.8).anonymize([item(x)], seed=0)[0]
    moved = VTLNAnonymizer("piecewise_linear", alpha=0.8, mode="spectrum").anonymize(
        [item(x)], seed=0
    )[0]
    assert yin_median(kept) == pytest.approx(150.0, rel=0.02)
    assert yin_median(moved) == pytest.approx(150.0 / 0.8, rel=0.04)


def test_vtln_target_mode_moves_formant_scale_toward_the_target() -> None:
    x, _ = corpus_utterance(index=0)
    source = estimate_voice_profile(x)
    for factor in (0.85, 1.18):
        target = TargetVoice(
            "t", "f", VoiceProfile(source.median_f0_hz, source.formant_scale * factor)
        )
        y = VTLNAnonymizer("bilinear").anonymize([item(x, target=target)], seed=0)[0]
        after = estimate_voice_profile(y).formant_scale
        assert abs(np.log(after / target.profile.formant_scale)) < abs(np.log(factor))  # type: ignore[union-attr]
        assert (after - source.formant_scale) * (factor - 1.0) > 0


@pytest.mark.parametrize("alpha", [0.8, 1.15])
def test_mcadams_moves_a_pole_angle_phi_to_phi_power_alpha(alpha: float) -> None:
    peak = 1000.0
    x = resonant_noise(peak)
    y = McAdamsAnonymizer(alpha=alpha).anonymize([item(x)], seed=0)[0]
    phi = 2 * np.pi * peak / SR
    expected = phi**alpha * SR / (2 * np.pi)
    assert spectral_peak_hz(y) == pytest.approx(expected, rel=0.05)


# -- output contract, determinism, modes -------------------------------------------------------


@pytest.mark.parametrize("anonymizer", ALL_BUILTINS, ids=lambda a: str(a.config()))
def test_output_contract_on_a_full_scale_input(anonymizer: BuiltinAnonymizer) -> None:
    loud = harmonic_tone(180.0, duration_s=1.2345, peak=1.0)
    short = harmonic_tone(220.0, duration_s=0.05)
    outputs = anonymizer.anonymize([item(loud, "a"), item(short, "b")], seed=1)
    for x, y in zip((loud, short), outputs, strict=True):
        assert y.dtype == np.float32 and y.ndim == 1
        assert len(y) == len(x)
        assert np.all(np.isfinite(y))
        assert np.max(np.abs(y)) <= PEAK_LIMIT + 1e-6


@pytest.mark.parametrize("name", ["pitch", "vtln", "mcadams"])
def test_deterministic_for_a_seed_and_independent_of_batch_order(name: str) -> None:
    x1, x2 = harmonic_tone(120.0, 1.0), harmonic_tone(200.0, 1.0)
    target = TargetVoice("t9", "f", VoiceProfile(230.0, 1.1))
    items = [item(x1, "a", target), item(x2, "b", target)]
    anonymizer = build_anonymizer(name, {})
    first = anonymizer.anonymize(items, seed=7)
    again = build_anonymizer(name, {}).anonymize(items[::-1], seed=7)[::-1]
    for y1, y2 in zip(first, again, strict=True):
        np.testing.assert_array_equal(y1, y2)
    other_seed = anonymizer.anonymize(items, seed=8)
    assert not np.array_equal(first[0], other_seed[0])  # the per-utterance jitter changed


def test_fixed_mode_uses_one_value_and_target_id_mode_one_value_per_target() -> None:
    x = harmonic_tone(120.0, 0.5)
    fixed = PitchShiftAnonymizer(semitones=-3.0)
    assert {fixed.parameter_for(item(x, f"u{i}"), seed=i) for i in range(5)} == {-3.0}

    no_jitter = McAdamsAnonymizer(jitter=0.0)
    t1, t2 = TargetVoice("target-1", "f"), TargetVoice("target-2", "f")
    values_1 = {no_jitter.parameter_for(item(x, f"u{i}", t1), seed=i) for i in range(5)}
    values_2 = {no_jitter.parameter_for(item(x, f"u{i}", t2), seed=i) for i in range(5)}
    assert len(values_1) == 1 and len(values_2) == 1 and values_1 != values_2
    (alpha,) = values_1
    assert 0.75 <= alpha <= 0.9


def test_random_mode_draws_per_utterance_within_range() -> None:
    x = harmonic_tone(120.0, 0.5)
    vtln = VTLNAnonymizer("power")
    values = [vtln.parameter_for(item(x, f"u{i}"), seed=0) for i in range(20)]
    assert len(set(values)) == 20
    assert all(-0.5 <= v <= 0.5 and abs(v) >= 0.125 - 1e-9 for v in values)


# -- registry ----------------------------------------------------------------------------------


def test_registry_builds_each_builtin_with_string_params() -> None:
    pitch = build_anonymizer("pitch", {"semitones": "-4"})
    assert isinstance(pitch, PitchShiftAnonymizer) and pitch.fixed == -4.0
    vtln = build_anonymizer("vtln", {"warp": "quadratic", "alpha": "0.4", "mode": "spectrum"})
    assert isinstance(vtln, VTLNAnonymizer) and vtln.family == "quadratic" and vtln.fixed == 0.4
    assert isinstance(build_anonymizer("mcadams", {"alpha": 0.8}), McAdamsAnonymizer)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("robot", {}, "unknown anonymizer 'robot'"),
        ("pitch", {"semitone": 3}, "unknown parameter"),
        ("pitch", {"semitones": "three"}, "must be a number"),
        ("pitch", {"semitones": 30}, "outside"),
        ("vtln", {"warp": "cubic"}, "unknown warp"),
        ("vtln", {"warp": "power", "alpha": 0.9}, "outside"),
        ("vtln", {"mode": "cepstrum"}, "mode"),
        ("mcadams", {"alpha": "nan"}, "finite"),
    ],
)
def test_registry_rejects_bad_names_and_params(name: str, params: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        build_anonymizer(name, params)


def test_wrong_sample_rate_is_invalid_input() -> None:
    bad = AnonymizationItem("u", np.zeros(800, dtype=np.float32), 8000, "s", "f")
    with pytest.raises(InvalidInputError, match="u: sample rate 8000"):
        McAdamsAnonymizer(alpha=0.8).anonymize([bad], seed=0)
