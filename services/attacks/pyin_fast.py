"""``librosa.pyin`` with the same output, faster: two of its three stages rewritten, exactly.

Where librosa 0.11's pYIN spends its time (``benchmarks/f0_speed.py``, 16 kHz speech, 10 ms hop):
the per-frame Python loop that turns the YIN troughs into candidate probabilities (one
``scipy.stats.boltzmann.pmf`` call per frame, about 60 % of the time) and the Viterbi decoding
(about 30 %; dense over all ``2 x n_pitch_bins`` states: 312 for 40-800 Hz at 1/3 semitone). The
cumulative mean normalized difference (already FFT-based and vectorized over frames) is the rest.

Here the same computations give the same floating-point numbers:

- :func:`observation_probs`: the trough step for all frames at once: the Boltzmann prior values
  come from one ``scipy.stats.boltzmann.pmf`` call on every (rank, count) pair and are laid out
  per trough and threshold by a compiled loop; the sum over thresholds stays one ``dot`` per
  frame, as librosa's (one BLAS call over all frames rounds differently in the last bit).
- :func:`viterbi_exact`: Viterbi over the same log-probabilities, skipping what cannot change the
  result. pYIN's transition matrix is banded (a pitch moves at most 4 semitones per 10 ms frame,
  in either voicing state: 26 predecessors of 312 states at 40-800 Hz), and every transition
  outside the band has the same log-probability ``c = log(0 + tiny)``. So the best off-band
  predecessor of state ``j`` is the first state outside ``j``'s band in the order of
  ``value + c`` (descending, ties by ascending index), found among the 27 best of that order,
  kept sorted once per frame; only the band itself is scanned per state. Ties go to the lowest
  state index, as ``np.argmax``; the additions are the same IEEE-754 sums, so pointers, paths
  and F0 are bit-identical.

The trough step reproduces librosa 0.11's ``pyin`` (0.10 framed differently); with any other
librosa version :func:`pyin` simply calls ``librosa.pyin``. ``tests/unit/test_pyin_fast.py`` checks
equality against ``librosa.pyin`` (F0 in Hz, voiced flags, voiced probabilities).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

VERIFIED_LIBROSA = ("0.11.",)
"""librosa versions whose ``pyin`` this module reproduces; others fall back to ``librosa.pyin``."""

N_THRESHOLDS = 100
BETA_PARAMETERS = (2, 18)
BOLTZMANN_PARAMETER = 2
MAX_TRANSITION_RATE = 35.92
"""Largest pitch change (octaves/s) of a voiced transition: librosa's default."""
SWITCH_PROB = 0.01
NO_TROUGH_PROB = 0.01
FRAMES_PER_BLOCK = 512
"""Frames whose trough priors are held at once (about 15 MB for speech: ~37 troughs a frame)."""


def fast_path_available() -> bool:
    """Whether the installed librosa is one whose ``pyin`` this module reproduces exactly."""
    import librosa

    return str(getattr(librosa, "__version__", "")).startswith(VERIFIED_LIBROSA)


def observation_probs(
    yin_frames: NDArray[np.floating],
    parabolic_shifts: NDArray[np.floating],
    sr: float,
    fmin: float,
    min_period: int,
    n_pitch_bins: int,
    n_bins_per_semitone: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """pYIN's observation probabilities and voiced probability, for all frames at once.

    Args:
        yin_frames: cumulative mean normalized difference, ``(n_lags, n_frames)``.
        parabolic_shifts: parabolic-interpolation offsets of each lag (samples), same shape.
        sr: sample rate (Hz).
        fmin: lowest F0 (Hz) of the pitch grid.
        min_period: shortest period (samples), the lag of row 0.
        n_pitch_bins, n_bins_per_semitone: the pitch grid.

    Returns:
        ``(observation_probs (2 n_pitch_bins, n_frames), voiced_prob (1, n_frames))``, equal to
        librosa 0.11's ``__pyin_helper``.
    """
    import scipy.stats

    thresholds = np.linspace(0, 1, N_THRESHOLDS + 1)
    beta_cdf = scipy.stats.beta.cdf(thresholds, BETA_PARAMETERS[0], BETA_PARAMETERS[1])
    beta_probs = np.diff(beta_cdf)
    troughs = _trough_probs(yin_frames, thresholds, beta_probs)
    if troughs is None:
        lag = frame = np.zeros(0, dtype=np.intp)
        values = np.zeros(0, dtype=yin_frames.dtype)
    else:
        lag, frame, probs = troughs
        values = probs.astype(yin_frames.dtype)  # librosa stores them in an array of that dtype
    # librosa takes the candidates as np.nonzero of a (lag, frame) array: by lag, then frame.
    # The order matters: two candidates of a frame can round to the same pitch bin, the last wins.
    keep = values != 0
    order = np.lexsort((frame[keep], lag[keep]))
    yin_period, frame_index, values = lag[keep][order], frame[keep][order], values[keep][order]
    # From here on, librosa's code as it is (already vectorized over frames).
    period_candidates = min_period + yin_period
    period_candidates = period_candidates + parabolic_shifts[yin_period, frame_index]
    f0_candidates = sr / period_candidates
    bin_index = 12 * n_bins_per_semitone * np.log2(f0_candidates / fmin)
    bin_index = np.clip(np.round(bin_index), 0, n_pitch_bins).astype(int)
    obs = np.zeros((2 * n_pitch_bins, yin_frames.shape[1]))
    obs[bin_index, frame_index] = values
    voiced_prob = np.clip(np.sum(obs[:n_pitch_bins, :], axis=0, keepdims=True), 0, 1)
    obs[n_pitch_bins:, :] = (1 - voiced_prob) / n_pitch_bins
    return obs, voiced_prob


def _trough_probs(
    yin_frames: NDArray[np.floating],
    thresholds: NDArray[np.float64],
    beta_probs: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]] | None:
    """``(lag, frame, probability)`` of every YIN trough; None when no frame has one.

    librosa's per-frame loop, vectorized: a frame's troughs are its local minima over lags (the
    first lag counts when below the second, the last when below the one before); for each of
    the 100 thresholds the troughs below it share the threshold's beta probability by a
    Boltzmann prior on their rank, and the frame's lowest trough takes ``no_trough_prob`` times
    the probability of the thresholds below it. The prior values come from one
    ``scipy.stats.boltzmann.pmf`` call on every (rank, count) pair; the per-frame sum over
    thresholds stays one ``dot`` per frame, as in librosa (a BLAS matrix-vector product over
    all frames at once rounds differently in the last bit).
    """
    import scipy.stats

    y = yin_frames.T  # (n_frames, n_lags)
    is_trough = np.zeros(y.shape, dtype=bool)
    is_trough[:, 1:-1] = (y[:, 1:-1] < y[:, :-2]) & (y[:, 1:-1] <= y[:, 2:])
    is_trough[:, -1] = y[:, -1] < y[:, -2]
    is_trough[:, 0] = y[:, 0] < y[:, 1]
    frame, lag = np.nonzero(is_trough)  # by frame, then lag: librosa's order
    if frame.size == 0:
        return None
    heights = y[frame, lag]
    # Thresholds a trough is not below: it is below thresholds[1:][first_below:].
    first_below = np.searchsorted(thresholds[1:], heights, side="right").astype(np.int64)
    starts = np.flatnonzero(np.r_[True, frame[1:] != frame[:-1]]).astype(np.int64)
    ends = np.r_[starts[1:], frame.size].astype(np.int64)
    most = int(np.max(ends - starts))
    table = np.asarray(
        scipy.stats.boltzmann.pmf(
            np.arange(most)[:, None], BOLTZMANN_PARAMETER, np.arange(most + 1)[None, :]
        )
    )
    global_min = np.empty(starts.size, dtype=np.int64)
    probs = np.empty(frame.size)
    for b in range(0, starts.size, FRAMES_PER_BLOCK):  # bounded memory for long utterances
        s0, e0 = starts[b], ends[min(b + FRAMES_PER_BLOCK, starts.size) - 1]
        block_starts, block_ends = starts[b : b + FRAMES_PER_BLOCK], ends[b : b + FRAMES_PER_BLOCK]
        prior = np.zeros((e0 - s0, thresholds.size - 1))
        _fill_prior(
            block_starts - s0,
            block_ends - s0,
            first_below[s0:e0],
            heights[s0:e0],
            table,
            prior,
            global_min[b : b + FRAMES_PER_BLOCK],
        )
        global_min[b : b + FRAMES_PER_BLOCK] += s0
        for s, e in zip(block_starts - s0, block_ends - s0, strict=True):
            probs[s0 + s : s0 + e] = prior[s:e].dot(beta_probs)
    prefix = np.array([np.sum(beta_probs[:n]) for n in range(beta_probs.size + 1)])
    probs[global_min] += NO_TROUGH_PROB * prefix[first_below[global_min]]
    return lag, frame, probs


@numba.njit(cache=True, nogil=True)
def _fill_prior(
    starts: NDArray[np.int64],
    ends: NDArray[np.int64],
    first_below: NDArray[np.int64],
    heights: NDArray[np.floating],
    table: NDArray[np.float64],
    prior: NDArray[np.float64],
    global_min: NDArray[np.int64],
) -> None:  # pragma: no cover - compiled
    """Boltzmann prior of each trough (rows) at each threshold (columns), in place.

    Trough ``i`` of a frame is below threshold ``j`` when ``first_below[i] <= j``; its prior is
    ``table[rank, count]`` (rank among the frame's troughs below ``j``, their count), else 0.
    ``global_min[f]``: the frame's lowest trough (the first one on ties).
    """
    n_thresholds = prior.shape[1]
    count = np.zeros(n_thresholds + 1, dtype=np.int64)
    rank = np.zeros(n_thresholds, dtype=np.int64)
    for f in range(starts.size):
        s, e = starts[f], ends[f]
        count[:] = 0
        rank[:] = 0
        for i in range(s, e):
            count[first_below[i]] += 1
        for j in range(1, n_thresholds):  # troughs below threshold j: first_below <= j
            count[j] += count[j - 1]
        for i in range(s, e):
            for j in range(first_below[i], n_thresholds):
                prior[i, j] = table[rank[j], count[j]]
                rank[j] += 1
        low = s
        for i in range(s + 1, e):
            if heights[i] < heights[low]:
                low = i
        global_min[f] = low


@numba.njit(cache=True, nogil=True)
def _viterbi_banded(
    log_prob: NDArray[np.float64],
    log_p_init: NDArray[np.float64],
    band_start: NDArray[np.int64],
    band_index: NDArray[np.int64],
    band_value: NDArray[np.float64],
    in_band: NDArray[np.bool_],
    off_band: float,
) -> NDArray[np.uint16]:  # pragma: no cover - compiled
    """librosa's ``_viterbi`` (log_prob ``(n_steps, n_states)``), scanning only what can win.

    ``band_index[band_start[j]:band_start[j + 1]]``: the predecessors ``k`` of ``j`` with a
    non-zero transition, ascending (``band_value``: their log-transitions); every other
    log-transition into ``j`` equals ``off_band``. Per step, the ``n_top`` best states by
    ``value + off_band`` (descending, ties by ascending index) hold every column's best
    off-band predecessor: it is the first of them outside the column's band, and a band holds
    fewer than ``n_top`` states.
    """
    n_steps, n_states = log_prob.shape
    widest = 0
    for j in range(n_states):
        widest = max(widest, band_start[j + 1] - band_start[j])
    n_top = min(widest + 1, n_states)
    state = np.zeros(n_steps, dtype=np.uint16)
    value = np.zeros((n_steps, n_states), dtype=np.float64)
    ptr = np.zeros((n_steps, n_states), dtype=np.uint16)
    value[0] = log_prob[0] + log_p_init
    top_v = np.empty(n_top, dtype=np.float64)
    top_k = np.empty(n_top, dtype=np.int64)
    for t in range(1, n_steps):
        prev = value[t - 1]
        filled = 0
        for k in range(n_states):  # insertion into the sorted top list, stable for ties
            v = prev[k] + off_band
            if filled < n_top or v > top_v[filled - 1]:
                if filled < n_top:
                    filled += 1
                p = filled - 1
                while p > 0 and top_v[p - 1] < v:
                    top_v[p], top_k[p] = top_v[p - 1], top_k[p - 1]
                    p -= 1
                top_v[p], top_k[p] = v, k
        for j in range(n_states):
            off_k = -1
            off_v = 0.0
            for r in range(filled):
                if not in_band[top_k[r], j]:
                    off_k, off_v = top_k[r], top_v[r]
                    break
            best_k = off_k
            best = off_v
            for b in range(band_start[j], band_start[j + 1]):  # first argmax within the band
                k = band_index[b]
                v = prev[k] + band_value[b]
                if best_k < 0 or v > best or (v == best and k < best_k):
                    best, best_k = v, k
            ptr[t, j] = best_k
            value[t, j] = log_prob[t, j] + best
    state[-1] = np.argmax(value[-1])
    for t in range(n_steps - 2, -1, -1):
        state[t] = ptr[t + 1, state[t + 1]]
    return state


def viterbi_exact(
    prob: NDArray[np.float64], transition: NDArray[np.float64], p_init: NDArray[np.float64]
) -> NDArray[np.uint16]:
    """``librosa.sequence.viterbi(prob, transition, p_init=p_init)`` for 2-D ``prob``, equal.

    Args:
        prob: observation probabilities, ``(n_states, n_steps)``.
        transition: row-stochastic ``(n_states, n_states)``, mostly zeros (banded).
        p_init: initial state distribution.

    Returns:
        The most likely state sequence (uint16, as librosa).
    """
    from librosa.util import tiny

    epsilon = tiny(prob)
    log_trans = np.log(transition + epsilon)
    log_prob = np.log(prob + epsilon)
    log_p_init = np.log(p_init + epsilon)
    in_band = transition > 0
    off_values = log_trans[~in_band]  # all log(0 + tiny)
    off_band = float(off_values[0]) if off_values.size else 0.0
    if not np.all(off_values == off_band):  # pragma: no cover - cannot happen: all equal
        raise AssertionError("off-band log-transitions differ")
    k_index, j_index = np.nonzero(in_band.T)  # by column j, then row k ascending
    band_index = j_index.astype(np.int64)
    band_start = np.searchsorted(k_index, np.arange(transition.shape[0] + 1)).astype(np.int64)
    return np.asarray(
        _viterbi_banded(
            np.ascontiguousarray(log_prob.T),
            log_p_init,
            band_start,
            band_index,
            np.ascontiguousarray(log_trans.T[in_band.T]),
            np.ascontiguousarray(in_band),
            off_band,
        )
    )


def pyin(
    y: NDArray[np.floating],
    *,
    fmin: float,
    fmax: float,
    sr: float,
    frame_length: int,
    hop_length: int,
    resolution: float,
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.float64]]:
    """``librosa.pyin`` of a 1-D signal with its other parameters at their defaults; same output.

    Args:
        y: mono audio (float32 or float64; as ``librosa.pyin``, the dtype matters to the result).
        fmin, fmax: F0 search range (Hz).
        sr: sample rate (Hz).
        frame_length, hop_length: frame and hop (samples); frames are centred, zero-padded.
        resolution: pitch-grid step (semitones).

    Returns:
        ``(f0 (Hz, NaN where unvoiced), voiced_flag, voiced_prob)``, one value per frame.
    """
    import librosa

    if not fast_path_available() or np.ndim(y) != 1:
        out: Any = librosa.pyin(
            y,
            fmin=fmin,
            fmax=fmax,
            sr=sr,
            frame_length=frame_length,
            hop_length=hop_length,
            resolution=resolution,
        )
        return out
    from librosa.core import pitch as lp

    # Validation, framing and the YIN stage: librosa's own functions, in its order.
    check_yin_params = getattr(lp, "__check_yin_params")  # a double-underscore module name
    check_yin_params(sr=sr, fmax=fmax, fmin=fmin, frame_length=frame_length)
    librosa.util.valid_audio(y)
    pad = frame_length // 2
    y_frames = librosa.util.frame(
        np.pad(y, [(pad, pad)], mode="constant"), frame_length=frame_length, hop_length=hop_length
    )
    min_period = int(np.floor(sr / fmax))
    max_period = min(int(np.ceil(sr / fmin)), frame_length - 1)
    yin_frames = lp._cumulative_mean_normalized_difference(y_frames, min_period, max_period)
    parabolic_shifts = lp._parabolic_interpolation(yin_frames)
    n_bins_per_semitone = int(np.ceil(1.0 / resolution))
    n_pitch_bins = int(np.floor(12 * n_bins_per_semitone * np.log2(fmax / fmin))) + 1
    obs, voiced_prob = observation_probs(
        yin_frames, parabolic_shifts, sr, fmin, min_period, n_pitch_bins, n_bins_per_semitone
    )
    max_semitones_per_frame = round(MAX_TRANSITION_RATE * 12 * hop_length / sr)
    transition_width = max_semitones_per_frame * n_bins_per_semitone + 1
    transition = librosa.sequence.transition_local(
        n_pitch_bins, transition_width, window="triangle", wrap=False
    )
    transition = np.kron(librosa.sequence.transition_loop(2, 1 - SWITCH_PROB), transition)
    p_init = np.ones(2 * n_pitch_bins) / (2 * n_pitch_bins)
    states = viterbi_exact(obs, transition, p_init)
    freqs = fmin * 2 ** (np.arange(n_pitch_bins) / (12 * n_bins_per_semitone))
    f0 = freqs[states % n_pitch_bins]
    voiced_flag = states < n_pitch_bins
    f0[~voiced_flag] = np.nan
    return f0, voiced_flag, voiced_prob[0]
