"""The signal tools of the synthetic corpus (``services.corpus.synthetic``): the STFT frame
constants, the formant resonators' magnitude response, STFT / overlap-add, smoothing, and the
Rosenberg glottal pulse table.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt
from numpy.lib.stride_tricks import sliding_window_view
from scipy.ndimage import uniform_filter1d

from services.audio import SAMPLE_RATE_HZ

FloatArray = npt.NDArray[np.float64]
Float32Array = npt.NDArray[np.float32]

_N_FFT = 512  # 32 ms frames: resolves harmonics of an 85 Hz voice
_HOP = 128  # 8 ms; Hann analysis and synthesis windows at 75 % overlap sum to 1.5
_RAMP = 80  # samples (5 ms); gains are smoothed twice, so transitions last about 10 ms
_WINDOW = np.hanning(_N_FFT + 1)[:-1]  # periodic Hann
_WINDOW32 = _WINDOW.astype(np.float32)
_PULSE_TABLE_SIZE = 4096  # glottal pulse looked up by phase: 1/4096 cycle is far below a sample
_OLA_GAIN = float(np.sum(_WINDOW**2) / _HOP)
_OMEGA = 2.0 * np.pi * np.fft.rfftfreq(_N_FFT, 1.0 / SAMPLE_RATE_HZ) / SAMPLE_RATE_HZ
_FREQS_HZ = np.fft.rfftfreq(_N_FFT, 1.0 / SAMPLE_RATE_HZ)
# Fades the top of the band to zero (6.8-8 kHz) so nothing piles up at Nyquist.
_TOP_TAPER = np.where(
    _FREQS_HZ < 6800.0,
    1.0,
    0.5 * (1.0 + np.cos(np.pi * np.clip((_FREQS_HZ - 6800.0) / 1200.0, 0, 1))),
)


def _resonator_magnitude(freqs_hz: FloatArray, bandwidths_hz: FloatArray) -> FloatArray:
    """|H| on the STFT bins of a cascade of unit-DC-gain two-pole resonators.

    ``freqs_hz`` / ``bandwidths_hz``: (frames, K). Returns (frames, bins).

    |D_k(e^jw)|^2 of each denominator is a cosine polynomial of degree 2; their product (degree
    2K) is formed per frame from the coefficients and evaluated on all bins with one matrix
    product, instead of evaluating every resonator on every bin.
    """
    r = np.exp(-np.pi * bandwidths_hz / SAMPLE_RATE_HZ)
    a1 = -2.0 * r * np.cos(2.0 * np.pi * freqs_hz / SAMPLE_RATE_HZ)
    a2 = r * r
    # Laurent coefficients of D(z) D(1/z), z^0 .. z^2 (symmetric).
    factors = np.stack([1.0 + a1 * a1 + a2 * a2, a1 * (1.0 + a2), a2], axis=-1)
    full = np.concatenate([factors[..., :0:-1], factors], axis=-1)  # z^-2 .. z^2
    poly = full[:, 0, :]
    for k in range(1, full.shape[1]):
        nxt = np.zeros((poly.shape[0], poly.shape[1] + 4))
        for j in range(5):
            nxt[:, j : j + poly.shape[1]] += poly * full[:, k, j : j + 1]
        poly = nxt
    degree = poly.shape[1] // 2
    half = poly[:, degree:].copy()
    half[:, 1:] *= 2.0
    power = half @ np.cos(np.arange(degree + 1)[:, None] * _OMEGA[None, :])
    gain = np.prod(np.abs(1.0 + a1 + a2), axis=1)
    return np.asarray(gain[:, None] / np.sqrt(np.maximum(power, 1e-30)))


_PAD_LEFT = _N_FFT - _HOP  # every sample is then covered by N_FFT / HOP frames


def _n_frames(n: int) -> int:
    return -(-(n + _PAD_LEFT) // _HOP)


def _stft(x: Float32Array) -> npt.NDArray[np.complex64]:
    """STFT of ``x`` (periodic Hann, 512 / hop 128), single precision."""
    n_frames = _n_frames(len(x))
    total = (n_frames - 1) * _HOP + _N_FFT
    xp = np.pad(x, (_PAD_LEFT, total - _PAD_LEFT - len(x)))
    frames = sliding_window_view(xp, _N_FFT)[::_HOP] * _WINDOW32
    return cast(npt.NDArray[np.complex64], np.fft.rfft(frames, axis=1))  # numpy keeps float32


def _overlap_add(spec: npt.NDArray[np.complex64], n: int) -> Float32Array:
    """Inverse of ``_stft`` (weighted overlap-add), ``n`` samples."""
    frames = np.fft.irfft(spec, n=_N_FFT, axis=1) * _WINDOW32
    ratio = _N_FFT // _HOP
    blocks = frames.reshape(len(frames), ratio, _HOP)
    out = np.zeros((len(frames) + ratio - 1, _HOP), dtype=np.float32)
    for r in range(ratio):
        out[r : r + len(frames)] += blocks[:, r, :]
    return out.reshape(-1)[_PAD_LEFT : _PAD_LEFT + n] / np.float32(_OLA_GAIN)


def _smooth(x: FloatArray, size: int, axis: int = 0) -> FloatArray:
    """Moving average applied twice (triangular kernel of about 2 * size)."""
    once = uniform_filter1d(x, size, axis=axis, mode="nearest")
    return np.asarray(uniform_filter1d(once, size, axis=axis, mode="nearest"))


def _rosenberg_table(open_quotient: float) -> Float32Array:
    """Rosenberg glottal flow over one cycle (peak 1), ``_PULSE_TABLE_SIZE`` phase points.

    Opening (70 % of the open phase) is a raised cosine, closing a quarter cosine; the abrupt
    closure gives the flow derivative its high-frequency energy (higher quotient: steeper tilt).
    """
    p = np.arange(_PULSE_TABLE_SIZE) / _PULSE_TABLE_SIZE
    t_open, t_close = 0.7 * open_quotient, 0.3 * open_quotient
    flow = np.where(
        p < t_open,
        0.5 * (1.0 - np.cos(np.pi * p / t_open)),
        np.where(p < t_open + t_close, np.cos(0.5 * np.pi * (p - t_open) / t_close), 0.0),
    )
    return flow.astype(np.float32)
