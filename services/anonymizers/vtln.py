"""VTLN anonymization: frequency warping of the short-time spectrum (PROTOCOLS.md sections 7-8).

STFT (512-point periodic Hann, hop 128 at 16 kHz), then for every frame at once
``Y(omega) = X(omega'(omega))`` with one of the four warps of `services.anonymizers.warps`,
interpolated linearly between FFT bins, and least-squares overlap-add resynthesis.

Two modes:

* ``envelope`` (default): only the spectral envelope is warped: the cepstrally smoothed log
  magnitude ``E`` (30 cepstral coefficients, 1.9 ms) gives the gain ``exp(E(omega'(omega)) -
  E(omega))`` (limited to +-40 dB) applied to ``X``; the harmonics and the phase of the source stay,
  so F0 is kept and formants move. This is what pitch-synchronous VTLN (Sundermann & Ney 2003, the
  toolbox Liu et al. used) does.
* ``spectrum``: the whole magnitude is warped, and the phases are re-integrated from the warped
  instantaneous frequencies (phase vocoder), so F0 harmonics move with the formants (closest to
  the feature-domain warping of the pre-restoration attack).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from services.anonymizers.base import VoiceProfile
from services.anonymizers.builtin import BuiltinAnonymizer
from services.anonymizers.dsp import istft, stft
from services.anonymizers.warps import (
    IDENTITY_PARAMETER,
    PARAMETER_RANGES,
    check_warp_family,
    fit_warp_to_scale,
    inverse_warp,
    warp,
)
from services.errors import InvalidInputError

VTLNMode = Literal["envelope", "spectrum"]

_N_FFT = 512
_HOP = 128
_N_CEPSTRUM = 30
_MAX_LOG_GAIN = np.log(100.0)  # 40 dB


def warp_spectrogram_bins(n_bins: int, family: str, a: float) -> tuple[np.ndarray, np.ndarray]:
    """Source bin ``i0`` and fraction for each output bin: ``Y[k] = (1-f) X[i0] + f X[i0+1]``."""
    omega = np.linspace(0.0, np.pi, n_bins)
    source = warp(family, omega, a) / np.pi * (n_bins - 1)
    i0 = np.clip(np.floor(source).astype(int), 0, n_bins - 2)
    return i0, np.clip(source - i0, 0.0, 1.0)


def cepstral_envelope(log_mag: np.ndarray, n_coefficients: int = _N_CEPSTRUM) -> np.ndarray:
    """Cepstrally smoothed log magnitude of each row of ``log_mag`` (natural log units)."""
    n_fft = 2 * (log_mag.shape[1] - 1)
    cep = np.fft.irfft(log_mag, n_fft, axis=1)
    lifter = np.zeros(n_fft)
    lifter[:n_coefficients] = 1.0
    lifter[n_fft - n_coefficients + 1 :] = 1.0
    return np.fft.rfft(cep * lifter[None, :], axis=1).real


def _warped_phase(
    spec: np.ndarray, i0: np.ndarray, frac: np.ndarray, family: str, a: float
) -> np.ndarray:
    """Phase-vocoder phases that make each moved component oscillate at its new frequency.

    The instantaneous frequency of the source bin (phase advance between frames) is mapped
    through the inverse warp and integrated over frames (cumulative sum), so harmonics really
    move (with the original phase they would keep their old periodicity).
    """
    n_bins = spec.shape[1]
    bin_omega = np.pi * np.arange(n_bins) / (n_bins - 1)
    phase = np.angle(spec)
    expected = bin_omega * _HOP
    dphi = np.diff(phase, axis=0, prepend=phase[:1]) - expected[None, :]
    dphi = dphi - 2.0 * np.pi * np.round(dphi / (2.0 * np.pi))
    inst = np.clip(bin_omega[None, :] + dphi / _HOP, 0.0, np.pi)  # radians per sample
    nearest = np.where(frac < 0.5, i0, i0 + 1)
    moved = inverse_warp(family, inst[:, nearest], a)
    start = phase[0, nearest]
    advance = np.cumsum(moved[1:] * _HOP, axis=0)
    return np.concatenate([start[None, :], start[None, :] + advance], axis=0)


def vtln_warp(x: np.ndarray, family: str, a: float, mode: VTLNMode = "envelope") -> np.ndarray:
    """Warp the frequency axis of a 16 kHz waveform's short-time spectrum; same length out."""
    x = np.asarray(x, dtype=np.float64)
    window = np.hanning(_N_FFT + 1)[:-1]
    spec = stft(x, _N_FFT, _HOP, window)
    i0, frac = warp_spectrogram_bins(spec.shape[1], family, a)
    if mode == "spectrum":
        mag = np.abs(spec)
        warped = (1.0 - frac) * mag[:, i0] + frac * mag[:, i0 + 1]
        out = warped * np.exp(1j * _warped_phase(spec, i0, frac, family, a))
    else:
        envelope = cepstral_envelope(np.log(np.abs(spec) + 1e-9))
        warped_env = (1.0 - frac) * envelope[:, i0] + frac * envelope[:, i0 + 1]
        gain = np.exp(np.clip(warped_env - envelope, -_MAX_LOG_GAIN, _MAX_LOG_GAIN))
        out = spec * gain
    return istft(out, _N_FFT, _HOP, window, len(x))


class VTLNAnonymizer(BuiltinAnonymizer):
    """Vocal-tract-length warping with one of the four warps of Liu et al.

    Target mode: the parameter whose warp best scales 300-4000 Hz by ``formant_scale_target /
    formant_scale_source`` (`fit_warp_to_scale`), plus a jitter of std ``jitter`` x half the
    family's range, clipped to the family's Table 1 range. Fixed mode: ``alpha`` for everything.
    """

    name = "vtln"
    parameter_name = "alpha"

    def __init__(
        self,
        warp: str = "bilinear",
        alpha: float | None = None,
        jitter: float = 0.05,
        mode: str = "envelope",
    ) -> None:
        try:
            self.family = check_warp_family(warp)
        except ValueError as exc:
            raise InvalidInputError(f"vtln: {exc}") from exc
        if mode not in ("envelope", "spectrum"):
            raise InvalidInputError(f"vtln: mode must be 'envelope' or 'spectrum', got {mode!r}")
        self.mode: VTLNMode = mode  # type: ignore[assignment]
        lo, hi, _ = PARAMETER_RANGES[self.family]
        self.parameter_low, self.parameter_high = lo, hi
        self.identity = IDENTITY_PARAMETER[self.family]
        self.half_range = (hi - lo) / 2.0
        super().__init__(fixed=alpha, jitter=jitter * self.half_range)
        self.relative_jitter = float(jitter)

    def _parameter_from_profiles(self, source: VoiceProfile, target: VoiceProfile) -> float:
        return fit_warp_to_scale(self.family, target.formant_scale / source.formant_scale)

    def transform(self, waveform: np.ndarray, parameter: float) -> np.ndarray:
        return vtln_warp(waveform, self.family, parameter, self.mode)

    def config(self) -> dict[str, object]:
        # ``jitter`` as given (a fraction of half the range), not the absolute std used inside.
        return {**super().config(), "jitter": self.relative_jitter, "mode": self.mode}
