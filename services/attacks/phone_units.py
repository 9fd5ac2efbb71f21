"""Phone-like units: energy VAD, MFCC frames, a k-means codebook, segment histograms.

The open stand-in for Chandra et al.'s VQ-VAE phone units (PROTOCOLS.md section 5):

1. **Frames**: 13 MFCCs c1..c13 (c0, the level, is left out) of 25 ms frames every 10 ms
   (40 mel bands, 16 kHz), mean-normalized per utterance so that units describe spectral shape
   changes (phonetic content) rather than the recording's average colour.
2. **Energy VAD**: a frame is speech when its log energy is within ``vad_range_db`` (default
   30 dB) of the utterance's loudest frame; other frames are dropped.
3. **Codebook**: k-means (``n_units``, default 64; k-means++ seeding, Lloyd iterations, all
   distances as one matrix product) on speech frames of the attacker-train utterances, at most
   ``max_train_frames`` of them drawn uniformly (seeded).
4. **Embedding** of an utterance: its speech frames, in order, are cut into ``n_segments``
   (default 20) uniform segments; each segment's unit histogram is normalized to sum 1 and the
   embedding is the mean of the non-empty segments' histograms (a vector of ``n_units``
   probabilities). Chandra et al. says only that codebook histograms are extracted from 20 uniform
   segments; averaging gives every stretch of the utterance the same weight whatever its number
   of speech frames. A reference's embedding is the mean over its utterances' embeddings (each
   utterance weighs the same), i.e. the histogram pooled over all its segments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from services.audio import SAMPLE_RATE_HZ


@dataclass(frozen=True)
class PhoneUnitParams:
    """Settings of the phone-unit representation (see the module docstring)."""

    n_units: int = 64
    n_segments: int = 20
    n_mfcc: int = 13
    n_mels: int = 40
    frame_length: int = 400
    hop_length: int = 160
    vad_range_db: float = 30.0
    max_train_frames: int = 20000
    kmeans_iterations: int = 50

    def __post_init__(self) -> None:
        if self.n_units < 2 or self.n_segments < 1 or self.n_mfcc < 1:
            raise ValueError("n_units must be >= 2, n_segments >= 1 and n_mfcc >= 1")
        if self.vad_range_db <= 0:
            raise ValueError(f"vad_range_db must be > 0, got {self.vad_range_db}")


def speech_frames(
    waveform: NDArray[np.floating], params: PhoneUnitParams = PhoneUnitParams()
) -> NDArray[np.float64]:
    """Mean-normalized MFCCs c1..c{n_mfcc} of the speech frames (VAD), shape (frames, n_mfcc)."""
    import librosa  # heavy import, deferred

    x = np.asarray(waveform, dtype=np.float32).reshape(-1)
    if x.size < params.frame_length:
        x = np.concatenate([x, np.zeros(params.frame_length - x.size, dtype=np.float32)])
    power = (
        np.abs(
            librosa.stft(
                x,
                n_fft=512,
                hop_length=params.hop_length,
                win_length=params.frame_length,
                window="hann",
                center=True,
            )
        )
        ** 2
    )
    mel = librosa.feature.melspectrogram(S=power, sr=SAMPLE_RATE_HZ, n_mels=params.n_mels)
    log_mel = librosa.power_to_db(mel, ref=1.0, amin=1e-10, top_db=None)
    mfcc = librosa.feature.mfcc(S=log_mel, n_mfcc=params.n_mfcc + 1)[1:].T
    energy_db = 10.0 * np.log10(np.maximum(power.sum(axis=0), 1e-12))
    keep = energy_db >= energy_db.max() - params.vad_range_db
    feats = mfcc - mfcc[keep].mean(axis=0)
    return np.asarray(feats[keep], dtype=np.float64)


def _squared_distances(x: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
    d = (x * x).sum(axis=1)[:, None] - 2.0 * (x @ c.T) + (c * c).sum(axis=1)[None, :]
    return np.asarray(np.maximum(d, 0.0))


def kmeans(
    x: NDArray[np.floating], k: int, *, seed: int = 0, iterations: int = 50
) -> NDArray[np.float64]:
    """k-means codebook (k, d) of the rows of ``x``: k-means++ seeding, then Lloyd iterations.

    Stops when no assignment changes. Empty clusters are re-seeded with the point farthest from
    its centroid. Deterministic for a given ``seed``.
    """
    data = np.asarray(x, dtype=np.float64)
    if data.ndim != 2 or data.shape[0] < k:
        raise ValueError(f"k-means needs at least k={k} rows of a 2-D array, got {data.shape}")
    rng = np.random.default_rng(seed)
    centres = np.empty((k, data.shape[1]))
    centres[0] = data[rng.integers(data.shape[0])]
    closest = _squared_distances(data, centres[:1])[:, 0]
    for j in range(1, k):  # k-means++: each new centre drawn with probability ~ squared distance
        total = closest.sum()
        pick = (
            rng.choice(data.shape[0], p=closest / total) if total > 0 else rng.integers(len(data))
        )
        centres[j] = data[pick]
        closest = np.minimum(closest, _squared_distances(data, centres[j : j + 1])[:, 0])
    labels = np.full(data.shape[0], -1)
    for _ in range(iterations):
        dist = _squared_distances(data, centres)
        new = dist.argmin(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros_like(centres)
        np.add.at(sums, labels, data)
        empty = counts == 0
        centres[~empty] = sums[~empty] / counts[~empty, None]
        if empty.any():
            far = np.argsort(-dist[np.arange(data.shape[0]), labels])[: int(empty.sum())]
            centres[empty] = data[far]
    return centres


def learn_codebook(
    waveforms: Sequence[NDArray[np.floating]],
    params: PhoneUnitParams = PhoneUnitParams(),
    seed: int = 0,
) -> NDArray[np.float64]:
    """k-means codebook (n_units, n_mfcc) on the speech frames of attacker-train ``waveforms``."""
    frames = [speech_frames(w, params) for w in waveforms]
    data = np.concatenate(frames) if frames else np.zeros((0, params.n_mfcc))
    if data.shape[0] < params.n_units:
        raise ValueError(
            f"codebook training needs at least n_units={params.n_units} speech frames, "
            f"the attacker-train waveforms give {data.shape[0]}"
        )
    rng = np.random.default_rng([seed, 1])
    if data.shape[0] > params.max_train_frames:
        data = data[rng.choice(data.shape[0], params.max_train_frames, replace=False)]
    return kmeans(data, params.n_units, seed=seed, iterations=params.kmeans_iterations)


def unit_sequence(frames: NDArray[np.float64], codebook: NDArray[np.float64]) -> NDArray[np.int64]:
    """Index of the nearest codebook entry of every frame."""
    if frames.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(_squared_distances(frames, codebook).argmin(axis=1), dtype=np.int64)


def segment_histogram_embedding(
    units: NDArray[np.int64], n_units: int, n_segments: int = 20
) -> NDArray[np.float64]:
    """Mean over the non-empty uniform segments of their normalized unit histograms (n_units,).

    All zeros when ``units`` is empty.
    """
    n = units.size
    if n == 0:
        return np.zeros(n_units)
    segment = (np.arange(n) * n_segments) // n
    counts = np.bincount(segment * n_units + units, minlength=n_segments * n_units).reshape(
        n_segments, n_units
    )
    sizes = counts.sum(axis=1)
    used = sizes > 0
    return np.asarray((counts[used] / sizes[used, None]).mean(axis=0))


def phone_unit_embeddings(
    waveforms: Sequence[NDArray[np.floating]],
    codebook: NDArray[np.float64],
    params: PhoneUnitParams = PhoneUnitParams(),
) -> NDArray[np.float64]:
    """Segment-histogram embedding (n_utterances, n_units) of every waveform."""
    k = codebook.shape[0]
    return (
        np.stack(
            [
                segment_histogram_embedding(
                    unit_sequence(speech_frames(w, params), codebook), k, params.n_segments
                )
                for w in waveforms
            ]
        )
        if len(waveforms)
        else np.zeros((0, k))
    )
