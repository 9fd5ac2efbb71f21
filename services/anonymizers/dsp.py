"""Vectorized signal-processing primitives shared by the built-in anonymizers.

Framing, weighted overlap-add, batched LPC (autocorrelation + Levinson-Durbin over all frames at
once), polynomial roots and products over frames, and a YIN F0 tracker. Loops run over the LPC
order or the few overlap phases of a frame, never over frames or samples.
"""

from __future__ import annotations

import numpy as np


def frame_signal(x: np.ndarray, frame_length: int, hop: int) -> np.ndarray:
    """Frames ``(n_frames, frame_length)`` of ``x`` starting at 0, hop, ...; zero-padded at the end.

    ``n_frames = ceil(len(x) / hop)``, so every sample lies in at least one frame.
    """
    n = len(x)
    n_frames = max(1, -(-n // hop))
    total = (n_frames - 1) * hop + frame_length
    padded = np.zeros(total, dtype=np.float64)
    padded[:n] = x
    idx = np.arange(frame_length)[None, :] + hop * np.arange(n_frames)[:, None]
    return padded[idx]


def overlap_add(frames: np.ndarray, hop: int, length: int | None = None) -> np.ndarray:
    """Overlap-add ``(n_frames, frame_length)`` frames at ``hop``; cropped/padded to ``length``.

    Vectorized by splitting each frame into ``ceil(frame_length / hop)`` hop-sized blocks; the
    loop runs over those blocks (typically 2 to 4), not over frames.
    """
    n_frames, frame_length = frames.shape
    n_blocks = -(-frame_length // hop)
    padded = np.zeros((n_frames, n_blocks * hop), dtype=frames.dtype)
    padded[:, :frame_length] = frames
    out = np.zeros((n_frames + n_blocks - 1) * hop, dtype=frames.dtype)
    for b in range(n_blocks):
        out[b * hop : b * hop + n_frames * hop] += padded[:, b * hop : (b + 1) * hop].reshape(-1)
    if length is None:
        return out
    if len(out) >= length:
        return out[:length]
    return np.concatenate([out, np.zeros(length - len(out), dtype=out.dtype)])


def weighted_overlap_add(
    frames: np.ndarray, window: np.ndarray, hop: int, length: int, analysis_window: np.ndarray
) -> np.ndarray:
    """Least-squares inverse of windowed framing: ``sum_t w s_t / sum_t w * w_a`` (Griffin-Lim).

    ``frames`` are synthesis frames *before* the synthesis ``window`` is applied; dividing by the
    overlap-added product of synthesis and analysis windows makes analysis followed by synthesis of
    unmodified frames the identity.
    """
    num = overlap_add(frames * window[None, :], hop, length)
    n_frames = frames.shape[0]
    den = overlap_add(np.tile(window * analysis_window, (n_frames, 1)), hop, length)
    return num / np.maximum(den, 1e-3 * float(np.max(den)))


def autocorrelation(frames: np.ndarray, max_lag: int) -> np.ndarray:
    """Autocorrelation lags 0..``max_lag`` of each row (via FFT); ``(n_frames, max_lag + 1)``."""
    n = frames.shape[1]
    n_fft = 1 << int(np.ceil(np.log2(2 * n - 1)))
    spec = np.fft.rfft(frames, n_fft, axis=1)
    r = np.fft.irfft(spec.real**2 + spec.imag**2, n_fft, axis=1)
    return r[:, : max_lag + 1]


def levinson(r: np.ndarray, order: int) -> np.ndarray:
    """LPC polynomials ``A(z) = 1 + a_1 z^-1 + ...`` from autocorrelations, batched over rows.

    ``r`` is ``(n_frames, >= order + 1)``; returns ``(n_frames, order + 1)`` with a leading 1.
    A tiny white-noise correction keeps silent frames well posed (their A is then ~1).
    """
    r = np.asarray(r, dtype=np.float64)
    n_frames = r.shape[0]
    r0 = r[:, 0] * (1.0 + 1e-9) + 1e-12
    a = np.zeros((n_frames, order + 1))
    a[:, 0] = 1.0
    err = r0.copy()
    for i in range(1, order + 1):
        acc = r[:, i] + np.sum(a[:, 1:i] * r[:, i - 1 : 0 : -1], axis=1)
        k = -acc / err
        prev = a[:, 1:i].copy()
        a[:, 1:i] = prev + k[:, None] * prev[:, ::-1]
        a[:, i] = k
        err = err * (1.0 - k * k)
        err = np.maximum(err, 1e-12 * r0)
    return a


def lpc(frames: np.ndarray, order: int) -> np.ndarray:
    """LPC polynomials (autocorrelation method) of each row of ``frames``; ``(n, order + 1)``."""
    return levinson(autocorrelation(frames, order), order)


def polynomial_roots(a: np.ndarray) -> np.ndarray:
    """Roots of each row polynomial ``a[:, 0] z^p + ... + a[:, p]`` (companion eigenvalues)."""
    n_frames, p1 = a.shape
    p = p1 - 1
    companion = np.zeros((n_frames, p, p))
    companion[:, 0, :] = -a[:, 1:] / a[:, :1]
    companion[:, np.arange(1, p), np.arange(p - 1)] = 1.0
    return np.linalg.eigvals(companion)


def polynomial_from_roots(roots: np.ndarray) -> np.ndarray:
    """Monic polynomial coefficients (highest power first) of each row of ``roots``; complex."""
    n_frames, p = roots.shape
    coeffs = np.zeros((n_frames, p + 1), dtype=np.complex128)
    coeffs[:, 0] = 1.0
    for j in range(p):
        coeffs[:, 1 : j + 2] = coeffs[:, 1 : j + 2] - roots[:, j : j + 1] * coeffs[:, : j + 1]
    return coeffs


def yin_f0(
    x: np.ndarray,
    sample_rate: int,
    fmin: float = 50.0,
    fmax: float = 420.0,
    frame_s: float = 0.04,
    hop_s: float = 0.01,
    threshold: float = 0.2,
) -> tuple[np.ndarray, np.ndarray]:
    """YIN F0 track (de Cheveigne & Kawahara 2002), vectorized over frames.

    Returns ``(f0_hz, voiced)`` per ``hop_s`` frame. A frame is voiced when the cumulative mean
    normalized difference dips below ``threshold`` in the lag range ``[1/fmax, 1/fmin]`` and its
    energy is within 40 dB of the loudest frame.
    """
    frame_length = round(frame_s * sample_rate)
    hop = round(hop_s * sample_rate)
    tau_min = max(2, int(np.floor(sample_rate / fmax)))
    tau_max = min(frame_length - 2, int(np.ceil(sample_rate / fmin)))
    frames = frame_signal(np.asarray(x, dtype=np.float64), frame_length, hop)
    # Difference function d(tau) = sum over the first half window of (x_j - x_{j+tau})^2.
    w = frame_length - tau_max
    n_fft = 1 << int(np.ceil(np.log2(frame_length + w)))
    spec = np.fft.rfft(frames, n_fft, axis=1)
    head = np.fft.rfft(frames[:, :w], n_fft, axis=1)
    cross = np.fft.irfft(spec * np.conj(head), n_fft, axis=1)[:, : tau_max + 1]
    sq = np.cumsum(np.concatenate([np.zeros((frames.shape[0], 1)), frames**2], axis=1), axis=1)
    taus = np.arange(tau_max + 1)
    energy_shifted = sq[:, taus + w] - sq[:, taus]
    d = sq[:, w : w + 1] + energy_shifted - 2.0 * cross
    d = np.maximum(d, 0.0)
    d[:, 0] = 0.0
    cum = np.cumsum(d[:, 1:], axis=1) / np.arange(1, tau_max + 1)[None, :]
    cmnd = np.ones_like(d)
    cmnd[:, 1:] = d[:, 1:] / np.maximum(cum, 1e-12)
    search = cmnd[:, tau_min : tau_max + 1]
    below = search < threshold
    has_dip = below.any(axis=1)
    # First lag below threshold, then walk to the bottom of that dip (local minimum).
    first = np.where(has_dip, np.argmax(below, axis=1), np.argmin(search, axis=1))
    n_lags = search.shape[1]
    rising = np.ones_like(below)
    rising[:, :-1] = search[:, 1:] >= search[:, :-1]
    at_or_after = np.arange(n_lags)[None, :] >= first[:, None]
    idx = np.argmax(rising & at_or_after, axis=1)
    tau = idx + tau_min
    # Parabolic interpolation of the dip for sub-sample lag precision.
    rows = np.arange(len(tau))
    t_lo = np.clip(tau - 1, 1, tau_max)
    t_hi = np.clip(tau + 1, 1, tau_max)
    y0, y1, y2 = cmnd[rows, t_lo], cmnd[rows, tau], cmnd[rows, t_hi]
    denom = y0 - 2.0 * y1 + y2
    shift = np.where(np.abs(denom) > 1e-12, 0.5 * (y0 - y2) / np.where(denom == 0, 1, denom), 0.0)
    shift = np.clip(shift, -1.0, 1.0)
    f0 = sample_rate / (tau + shift)
    frame_energy = sq[:, -1]
    loud = frame_energy > 1e-4 * max(float(frame_energy.max()), 1e-20)
    voiced = has_dip & loud & (f0 >= fmin) & (f0 <= fmax)
    return f0, voiced


def stft(x: np.ndarray, n_fft: int, hop: int, window: np.ndarray) -> np.ndarray:
    """Centred STFT ``(n_frames, n_fft // 2 + 1)``: frame t is centred on sample ``t * hop``.

    The signal is zero-padded by ``n_fft // 2`` on both sides.
    """
    half = n_fft // 2
    padded = np.concatenate([np.zeros(half), np.asarray(x, dtype=np.float64), np.zeros(half)])
    n_frames = 1 + len(x) // hop
    frames = frame_signal(padded, n_fft, hop)[:n_frames]
    return np.fft.rfft(frames * window[None, :], axis=1)


def istft(spec: np.ndarray, n_fft: int, hop: int, window: np.ndarray, length: int) -> np.ndarray:
    """Inverse of `stft` (least-squares weighted overlap-add), cropped to ``length`` samples."""
    frames = np.fft.irfft(spec, n_fft, axis=1)
    half = n_fft // 2
    y = weighted_overlap_add(frames, window, hop, length + 2 * half, window)
    return y[half : half + length]
