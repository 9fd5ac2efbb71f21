"""Pitch correlation rho_F0 between original and anonymized speech (VoicePrivacy 2022).

Definition (VoicePrivacy 2022 evaluation plan, "pitch correlation"): for one utterance, the Pearson
correlation coefficient between the F0 contour of the original and the F0 contour of its
anonymized version, over the frames voiced in BOTH contours; the metric of a data set is the mean
over its utterances. rho_F0 is dimensionless in [-1, 1]; the challenge asked for rho_F0 > 0.3.
Pearson's r is invariant to a positive affine map of either contour, so a constant pitch scaling
(every F0 times ``2^(a/12)``) keeps rho_F0 = 1: the metric measures whether intonation survives,
not whether the pitch level does.

F0 comes from the repository's pYIN tracker (`services.attacks.f0`: 10 ms hop, NaN on unvoiced
frames), with a wider search range than the attacks' 65-450 Hz: `UTILITY_F0_PARAMS`, 40-800 Hz.
Anonymized voices leave the natural range: the pitch built-in shifts by up to 12 semitones, so a
254 Hz voice raised 10 semitones (453 Hz) was tracked an octave off (rho_F0 = -0.56) and a 97 Hz
voice lowered 8.5 semitones (59 Hz) not at all with 65-450 Hz; with 40-800 Hz both correlate
above 0.9 (measured on the synthetic corpus, docs/utility.md), for about 30 % more pYIN
time.

Frame alignment. The anonymizer contract keeps the output's duration within one 10 ms frame of the
input's (by cropping or padding the end), so contours normally have the same frame count, or one
frame apart. Counts at most `MAX_FRAME_SLACK` (2) frames apart are compared frame by frame over
the common length. When they differ more, but by at most `MAX_RESAMPLE_RATIO_DIFF` (5 %: a
uniform time scaling), the anonymized contour is resampled to the original's frame count by
nearest-neighbour index mapping (``j = round(i (m-1)/(n-1))``; nearest neighbour, not linear
interpolation, so voicing decisions are kept and values are never blended across a
voiced/unvoiced boundary). Larger differences (a submission that changes the speaking rate) are
aligned with dynamic time warping (`librosa.sequence.dtw`) on a cost that compares the voicing
decisions and the per-utterance z-scored log F0 (z-scoring makes the alignment blind to a
constant pitch shift, like Pearson's r itself); the correlation is then taken over the aligned
frame pairs that are voiced in both. DTW's cost matrix is quadratic in length: pairs with more
than `MAX_DTW_CELLS` frame pairs (two 40 s utterances) are resampled instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from services.attacks.f0 import F0Params, f0_tracks
from services.audio import SAMPLE_RATE_HZ
from services.errors import InvalidInputError
from services.numba_cache import warm_once

UTILITY_F0_PARAMS = F0Params(fmin_hz=40.0, fmax_hz=800.0)
"""pYIN settings of rho_F0: 40-800 Hz covers every voice of 85-255 Hz shifted by +-12 semitones."""

MIN_VOICED_FRAMES = 20
"""Fewest frames voiced in both contours (0.2 s at the 10 ms hop) for a defined rho_F0; fewer
gives NaN: a correlation over a handful of frames says nothing about intonation."""

MAX_FRAME_SLACK = 2
"""Frame counts this many frames apart (20 ms) are compared frame by frame (end cropped/padded)."""

MAX_RESAMPLE_RATIO_DIFF = 0.05
"""Largest relative frame-count difference (5 %) aligned by resampling; beyond it, DTW."""

MAX_DTW_CELLS = 16_000_000
"""Largest DTW cost matrix (frames x frames: e.g. two 40 s utterances, ~0.4 GB with librosa's
accumulated-cost copy); longer pairs beyond the resampling tolerance are resampled instead."""

_VOICING_MISMATCH_COST = 3.0
"""DTW cost of pairing a voiced with an unvoiced frame, in z-score units of log F0 (3 sigma:
larger than nearly any pitch difference between two voiced frames)."""


def _as_contour(f0: NDArray[np.floating], name: str) -> NDArray[np.float64]:
    x = np.asarray(f0, dtype=np.float64)
    if x.ndim != 1:
        raise InvalidInputError(f"{name}: an F0 contour must be 1-D (Hz per frame), got {x.shape}")
    # Unvoiced frames are NaN (pYIN's convention); zero or negative F0 (other trackers' convention
    # for unvoiced) is treated the same way.
    return np.where(np.isfinite(x) & (x > 0), x, np.nan)


def resample_contour(f0: NDArray[np.floating], n_frames: int) -> NDArray[np.float64]:
    """``f0`` (Hz, NaN unvoiced) mapped onto ``n_frames`` frames by nearest-neighbour indexing."""
    x = np.asarray(f0, dtype=np.float64)
    if n_frames == x.size:
        return x.copy()
    if x.size == 0 or n_frames == 0:
        return np.full(n_frames, np.nan)
    scale = (x.size - 1) / max(n_frames - 1, 1)
    idx = np.clip(np.rint(np.arange(n_frames) * scale).astype(np.int64), 0, x.size - 1)
    return np.asarray(x[idx])


def _zscored_log(f0: NDArray[np.float64]) -> NDArray[np.float64]:
    log = np.log(f0)  # NaN stays NaN
    voiced = np.isfinite(log)
    if voiced.sum() < 2:
        return np.where(voiced, 0.0, np.nan)
    mu, sd = np.nanmean(log), np.nanstd(log)
    return np.asarray((log - mu) / (sd if sd > 0 else 1.0))


def dtw_align(
    f0_orig: NDArray[np.floating], f0_anon: NDArray[np.floating]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Frame pairs ``(i, j)`` of the DTW path between two contours (Hz, NaN unvoiced), in order.

    Cost of a pair: 0 if both frames are unvoiced, `_VOICING_MISMATCH_COST` if exactly one is
    voiced, else the absolute difference of the per-utterance z-scored log F0.
    """
    import librosa  # heavy import, deferred so that importing this module stays cheap

    a = _zscored_log(np.asarray(f0_orig, dtype=np.float64))
    b = _zscored_log(np.asarray(f0_anon, dtype=np.float64))
    va, vb = np.isfinite(a), np.isfinite(b)
    diff = np.abs(np.nan_to_num(a)[:, None] - np.nan_to_num(b)[None, :])
    cost = np.where(
        va[:, None] & vb[None, :],
        diff,
        np.where(va[:, None] | vb[None, :], _VOICING_MISMATCH_COST, 0.0),
    )
    # librosa's DTW is a cached Numba function: compiled once per host at a time (numba_cache).
    warm_once("dtw", lambda: librosa.sequence.dtw(C=np.ones((2, 2)), backtrack=True))
    _, path = librosa.sequence.dtw(C=cost, backtrack=True)
    path = np.asarray(path)[::-1]  # librosa returns the path from the end
    return path[:, 0].astype(np.int64), path[:, 1].astype(np.int64)


def pitch_correlation(
    f0_orig: NDArray[np.floating],
    f0_anon: NDArray[np.floating],
    *,
    min_voiced_frames: int = MIN_VOICED_FRAMES,
    max_resample_ratio_diff: float = MAX_RESAMPLE_RATIO_DIFF,
) -> float:
    """rho_F0 of one utterance: Pearson's r between two F0 contours over frames voiced in both.

    Args:
        f0_orig: F0 (Hz) per 10 ms frame of the original; NaN (or <= 0) where unvoiced.
        f0_anon: the same for the anonymized utterance (any frame count).
        min_voiced_frames: fewest frames voiced in both (default `MIN_VOICED_FRAMES` = 20,
            0.2 s) for a result; fewer gives NaN.
        max_resample_ratio_diff: frame counts more than `MAX_FRAME_SLACK` frames but at most
            this fraction (default 5 %) apart are aligned by nearest-neighbour resampling of
            ``f0_anon``; larger differences by DTW (resampling again beyond `MAX_DTW_CELLS`).

    Returns:
        r in [-1, 1]; NaN when fewer than ``min_voiced_frames`` frames are voiced in both, or
        when either contour is constant over those frames (r is undefined).
    """
    a = _as_contour(f0_orig, "f0_orig")
    b = _as_contour(f0_anon, "f0_anon")
    if a.size == 0 or b.size == 0:
        return float("nan")
    if abs(b.size - a.size) <= MAX_FRAME_SLACK:
        n = min(a.size, b.size)
        x, y = a[:n], b[:n]
    elif (
        abs(b.size - a.size) <= max_resample_ratio_diff * a.size or a.size * b.size > MAX_DTW_CELLS
    ):
        x, y = a, resample_contour(b, a.size)
    else:
        i, j = dtw_align(a, b)
        x, y = a[i], b[j]
    both = np.isfinite(x) & np.isfinite(y)
    if int(both.sum()) < max(min_voiced_frames, 2):
        return float("nan")
    x, y = x[both], y[both]
    dx, dy = x - x.mean(), y - y.mean()
    denom = float(np.sqrt(np.dot(dx, dx) * np.dot(dy, dy)))
    # A constant contour (e.g. a monotone robot voice) has no intonation to correlate with.
    if denom <= 1e-12 * max(float(np.dot(x, x)), 1.0):
        return float("nan")
    return float(np.clip(np.dot(dx, dy) / denom, -1.0, 1.0))


def pitch_correlation_from_audio(
    original: Sequence[NDArray[np.floating]],
    anonymized: Sequence[NDArray[np.floating]],
    sample_rate: int = SAMPLE_RATE_HZ,
    *,
    params: F0Params = UTILITY_F0_PARAMS,
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    min_voiced_frames: int = MIN_VOICED_FRAMES,
) -> dict[str, Any]:
    """rho_F0 of each (original, anonymized) utterance pair and their mean.

    Args:
        original: original waveforms (mono, ``sample_rate``).
        anonymized: the anonymized waveforms, same order and count.
        sample_rate: Hz; the F0 tracker works at 16 kHz only.
        params, cache_dir, workers: passed to `f0_tracks` (pYIN settings, default
            `UTILITY_F0_PARAMS`; per-utterance cache; processes).
        min_voiced_frames: see `pitch_correlation`.

    Returns:
        ``per_utterance`` (list of r, NaN where undefined), ``mean`` (mean over the defined ones;
        NaN when none is), ``n_scored`` (utterances with a defined r), ``n_utterances``,
        ``min_voiced_frames``.
    """
    if sample_rate != SAMPLE_RATE_HZ:
        raise InvalidInputError(
            f"pitch correlation needs {SAMPLE_RATE_HZ} Hz audio, got {sample_rate} Hz; "
            "resample first"
        )
    if len(original) != len(anonymized):
        raise InvalidInputError(
            f"pitch correlation needs one anonymized utterance per original: got "
            f"{len(original)} originals and {len(anonymized)} anonymized"
        )
    tracks = f0_tracks(
        [*original, *anonymized], params=params, cache_dir=cache_dir, workers=workers
    )
    n = len(original)
    values = [
        pitch_correlation(tracks[k], tracks[n + k], min_voiced_frames=min_voiced_frames)
        for k in range(n)
    ]
    arr = np.asarray(values, dtype=np.float64)
    scored = np.isfinite(arr)
    return {
        "per_utterance": [float(v) for v in arr],
        "mean": float(arr[scored].mean()) if scored.any() else float("nan"),
        "n_scored": int(scored.sum()),
        "n_utterances": n,
        "min_voiced_frames": int(min_voiced_frames),
    }
