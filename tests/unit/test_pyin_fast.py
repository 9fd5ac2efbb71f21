"""services.attacks.pyin_fast against its reference, ``librosa.pyin``: equal output, bit for bit.

Tolerance: none. F0 (Hz, NaN where unvoiced), voiced flags and voiced probabilities must be
identical arrays, on voiced tones with vibrato, noise, silence, synthetic and eSpeak NG speech and
edge lengths, for the attacks' (65-450 Hz) and the utility's (40-800 Hz) settings.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from services.attacks import pyin_fast
from services.attacks.f0 import F0Params, pyin_track
from services.audio import SAMPLE_RATE_HZ
from services.utility.prosody import UTILITY_F0_PARAMS

librosa = pytest.importorskip("librosa")
pytestmark = pytest.mark.skipif(
    not pyin_fast.fast_path_available(), reason="pyin_fast reproduces librosa 0.11 only"
)

SR = SAMPLE_RATE_HZ
SETTINGS = {"attacks": F0Params(), "utility": UTILITY_F0_PARAMS}


def _kwargs(params: F0Params) -> dict[str, float | int]:
    return {
        "fmin": params.fmin_hz,
        "fmax": params.fmax_hz,
        "sr": SR,
        "frame_length": params.frame_length,
        "hop_length": params.hop_length,
        "resolution": params.resolution_semitones,
    }


def _vibrato(seconds: float, f0_hz: float, seed: int) -> NDArray[np.float32]:
    """A harmonic tone with 5 Hz vibrato (+-1 semitone), a glide, pauses and a little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    f = f0_hz * 2 ** ((np.sin(2 * np.pi * 5 * t) + 3 * t / seconds) / 12)
    phase = 2 * np.pi * np.cumsum(f) / SR
    x = np.zeros_like(t)
    for h in range(1, 6):
        x += np.sin(h * phase) / h
    x = x * (np.sin(2 * np.pi * 0.7 * t) > -0.3)  # voiced stretches and silent gaps
    return (0.3 * x + 0.01 * rng.standard_normal(t.size)).astype(np.float32)


def _signals() -> dict[str, NDArray[np.floating]]:
    from services.corpus.synthetic import sample_speakers, synthesize_utterance

    rng = np.random.default_rng(7)
    speakers = sample_speakers(2, seed=3)
    out: dict[str, NDArray[np.floating]] = {
        "vibrato 110 Hz": _vibrato(1.5, 110.0, 0),
        "vibrato 300 Hz": _vibrato(1.0, 300.0, 1),
        "vibrato 60 Hz (below fmin)": _vibrato(0.8, 60.0, 2),
        "white noise": (0.2 * rng.standard_normal(SR)).astype(np.float32),
        "silence": np.zeros(SR // 2, dtype=np.float32),
        "100 samples (one frame)": _vibrato(1.0, 150.0, 3)[:100],
        "frame length": _vibrato(1.0, 150.0, 3)[:1024],
        "one frame + 1": _vibrato(1.0, 150.0, 4)[:1025],
        "odd length": _vibrato(1.0, 200.0, 5)[:4321],
        "float64 tone": _vibrato(0.6, 180.0, 6).astype(np.float64),
    }
    for i, speaker in enumerate(speakers):
        out[f"synthetic speech {i}"] = synthesize_utterance(
            speaker, np.random.default_rng(i), duration_s=2.0
        )
    return out


def _espeak_signals() -> dict[str, NDArray[np.floating]]:
    from services.corpus.espeak import draw_voices, espeak_path, render, sentence

    espeak = espeak_path()
    if espeak is None:
        return {}
    rng = np.random.default_rng(0)
    return {
        f"espeak {voice.voice} p{voice.pitch}": render(voice, sentence(rng), espeak)
        for voice in draw_voices(2, seed=1)
    }


@pytest.fixture(scope="module")
def signals() -> dict[str, NDArray[np.floating]]:
    return {**_signals(), **_espeak_signals()}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_pyin_equals_librosa_pyin_bit_for_bit(
    setting: str, signals: dict[str, NDArray[np.floating]]
) -> None:
    kwargs = _kwargs(SETTINGS[setting])
    voiced_somewhere = 0
    for name, x in signals.items():
        f0_ref, voiced_ref, prob_ref = librosa.pyin(x, **kwargs)
        f0, voiced, prob = pyin_fast.pyin(x, **kwargs)  # type: ignore[arg-type]
        assert np.array_equal(voiced, voiced_ref), name
        assert np.array_equal(f0, f0_ref, equal_nan=True), name
        assert np.array_equal(prob, prob_ref), name
        assert f0.dtype == f0_ref.dtype and prob.dtype == prob_ref.dtype, name
        voiced_somewhere += int(voiced.any())
    assert voiced_somewhere >= 5  # the comparison covers voiced frames, not only silence


def test_pyin_track_is_librosa_pyin_as_before() -> None:
    x = _vibrato(1.2, 140.0, 9)
    params = F0Params()
    f0_ref, voiced_ref, _ = librosa.pyin(x, **_kwargs(params))
    expected = np.where(voiced_ref, f0_ref, np.nan).astype(np.float32)
    assert np.array_equal(pyin_track(x, params), expected, equal_nan=True)


def _transitions() -> list[NDArray[np.float64]]:
    """pYIN-shaped banded transitions, a dense one, and one with an unreachable state."""
    out = []
    for n_bins, width in ((4, 3), (12, 3), (30, 7), (40, 13)):
        local = librosa.sequence.transition_local(n_bins, width, window="triangle", wrap=False)
        out.append(np.kron(librosa.sequence.transition_loop(2, 0.99), local))
    out.append(librosa.sequence.transition_uniform(6))
    unreachable = librosa.sequence.transition_local(8, 3, window="triangle", wrap=False)
    unreachable[:, 1] += unreachable[:, 0]
    unreachable[:, 0] = 0.0  # nothing moves into state 0
    out.append(unreachable)
    return out


def test_viterbi_equals_librosa_viterbi_with_ties() -> None:
    """Random observation probabilities on a coarse grid (many ties) and all-zero frames."""
    rng = np.random.default_rng(0)
    for transition in _transitions():
        n_states = transition.shape[0]
        for n_steps in (1, 2, 200):
            prob = np.round(rng.random((n_states, n_steps)) * 4) / 4  # 0, .25, .5, .75, 1
            prob[:, rng.random(n_steps) < 0.3] = 0.0  # frames with no evidence at all
            p_init = np.full(n_states, 1.0 / n_states)
            expected = librosa.sequence.viterbi(prob, transition, p_init=p_init)
            assert np.array_equal(pyin_fast.viterbi_exact(prob, transition, p_init), expected)


def test_other_librosa_versions_fall_back_to_librosa(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = librosa.pyin

    def spy(y: NDArray[np.floating], **kwargs: object) -> object:
        calls.append(1)
        return real(y, **kwargs)

    monkeypatch.setattr(librosa, "__version__", "0.10.2")
    monkeypatch.setattr(librosa, "pyin", spy)
    pyin_fast.pyin(_vibrato(0.3, 150.0, 0), **_kwargs(F0Params()))  # type: ignore[arg-type]
    assert calls == [1]
