"""Pitch scaling with duration kept (PROTOCOLS.md sections 7-8; Liu et al. eq. 2).

``p = 2^(a/12) p_0``: the whole spectrum (F0 and formants, like SoundStretch's pitch option used by
Liu et al.) is scaled by ``r = 2^(a/12)``. Implementation: polyphase resampling by a rational
approximation ``p/q`` of ``r`` (length ``n q / p``, so played at 16 kHz every frequency is scaled
by ``r``), then a phase vocoder stretches the result back to exactly ``n`` samples. The phase
vocoder is vectorized over frames: magnitudes are interpolated between analysis frames and the
synthesis phases are a cumulative sum of the measured phase advances.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from scipy.signal import resample_poly

from services.anonymizers.base import AnonymizationItem, VoiceProfile
from services.anonymizers.builtin import BuiltinAnonymizer
from services.anonymizers.dsp import istft, stft
from services.anonymizers.voice import median_f0_hz
from services.anonymizers.warps import PARAMETER_RANGES

_N_FFT = 1024
_HOP = 256
_MAX_DENOMINATOR = 200
MAX_SEMITONES = 12.0
"""Largest pitch shift (either direction) the anonymizer accepts or derives, in semitones."""


def phase_vocoder_to_length(
    x: np.ndarray, length: int, n_fft: int = _N_FFT, hop: int = _HOP
) -> np.ndarray:
    """Time-stretch ``x`` to exactly ``length`` samples, keeping its pitch (phase vocoder).

    With ``length == len(x)`` the synthesis phases equal the analysis phases (up to rounding), so
    the stretch is the identity.
    """
    x = np.asarray(x, dtype=np.float64)
    window = np.hanning(n_fft + 1)[:-1]  # periodic Hann: constant overlap-add at hop n_fft / 4
    spec = stft(x, n_fft, hop, window)
    n_in = spec.shape[0]
    n_out = 1 + length // hop
    rate = len(x) / max(length, 1)
    t = np.arange(n_out) * rate  # input frame position of each output frame
    spec = np.concatenate([spec, np.zeros((2, spec.shape[1]))], axis=0)
    i0 = np.minimum(np.floor(t).astype(int), n_in - 1)
    frac = (t - i0)[:, None]
    mag = (1.0 - frac) * np.abs(spec[i0]) + frac * np.abs(spec[i0 + 1])
    expected = 2.0 * np.pi * hop * np.arange(spec.shape[1]) / n_fft
    dphi = np.angle(spec[i0 + 1]) - np.angle(spec[i0]) - expected[None, :]
    dphi = dphi - 2.0 * np.pi * np.round(dphi / (2.0 * np.pi))
    advance = expected[None, :] + dphi
    phase = np.angle(spec[0])[None, :] + np.concatenate(
        [np.zeros((1, spec.shape[1])), np.cumsum(advance[:-1], axis=0)], axis=0
    )
    return istft(mag * np.exp(1j * phase), n_fft, hop, window, length)


def pitch_shift(x: np.ndarray, semitones: float) -> np.ndarray:
    """Scale every frequency of a 16 kHz waveform by ``2^(semitones/12)``, same length out."""
    x = np.asarray(x, dtype=np.float64)
    ratio = Fraction(2.0 ** (semitones / 12.0)).limit_denominator(_MAX_DENOMINATOR)
    if ratio == 1:
        resampled = x
    else:
        # Fewer samples (up < down) played at the same rate = higher frequencies.
        resampled = resample_poly(x, ratio.denominator, ratio.numerator)
    if len(resampled) < 2:
        return np.zeros_like(x)
    return phase_vocoder_to_length(resampled, len(x))


class PitchShiftAnonymizer(BuiltinAnonymizer):
    """Pitch scaling in semitones, duration kept.

    Target mode: the shift ``12 log2(F0_target / F0_source)`` between median F0s, plus a jitter of
    std ``jitter`` semitones, clipped to +-12. Fixed mode: ``semitones`` for every utterance.
    Random / target-id-only mode: 2.75 to 11 semitones up or down (25-100 % of Liu et al.'s range).
    """

    name = "pitch"
    family = "pitch"
    parameter_name = "semitones"
    parameter_low = -MAX_SEMITONES
    parameter_high = MAX_SEMITONES
    identity = 0.0

    def __init__(self, semitones: float | None = None, jitter: float = 0.3) -> None:
        super().__init__(fixed=semitones, jitter=jitter)

    def _draw_away_from_identity(self, u_side: float, u_size: float) -> float:
        half = PARAMETER_RANGES["pitch"][1]  # 11 semitones, Liu et al. Table 1
        size = (0.25 + 0.75 * u_size) * half
        return size if u_side < 0.5 else -size

    def _source_profile(self, item: AnonymizationItem, x: np.ndarray) -> VoiceProfile:
        # Only F0 matters here; skip the formant analysis of a full profile.
        if item.source_profile is not None:
            return item.source_profile
        return VoiceProfile(median_f0_hz=median_f0_hz(x), formant_scale=1.0)

    def _parameter_from_profiles(self, source: VoiceProfile, target: VoiceProfile) -> float:
        return 12.0 * float(np.log2(target.median_f0_hz / source.median_f0_hz))

    def transform(self, waveform: np.ndarray, parameter: float) -> np.ndarray:
        return pitch_shift(waveform, parameter)
