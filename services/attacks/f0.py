"""F0 tracks with pYIN, cached per utterance and extracted in parallel (PROTOCOLS.md section 5).

``librosa.pyin`` between 65 and 450 Hz on 16 kHz audio, 64 ms frames every 10 ms (Chandra et
al.: 10 ms stride). Its pitch grid has ``resolution_semitones`` between candidates; the default
1/3 semitone gives 101 candidate values from 65 to 450 Hz, close to the 107 distinct integer-lag
values Chandra et al. report, and makes pYIN's Viterbi pass (quadratic in the number of
candidates) about 5x cheaper than librosa's default 0.1 semitone, with the same median F0.
The computation is :mod:`services.attacks.pyin_fast`: ``librosa.pyin``'s output bit for bit (F0,
voiced flags, voiced probabilities; tested against ``librosa.pyin``), with its per-frame trough
loop vectorized and its Viterbi pass restricted to the transitions that can win
(``benchmarks/f0_speed.py``).

A track is the per-frame F0 in Hz with NaN on unvoiced frames (float32). Tracks are cached as
``<cache_dir>/f0/<params key>/<sha[:2]>/<sha>.npy`` where ``sha`` is the SHA-256 of the waveform's
float32 samples, so identical audio is never analysed twice, whatever its utterance id.
Extraction of the missing tracks runs in a ``ProcessPoolExecutor`` (one worker per core by
default); results are written to the cache by the parent process only.

Numba and the pool: pYIN runs on librosa's Numba functions, compiled with ``cache=True``. Workers
that compile them at once on a cold Numba cache race on its index files (GUFunc caching,
https://github.com/numba/numba/issues/10128) and can leave mismatched files that make every
later pYIN call in the installation segfault. So no worker ever compiles: :func:`warm_pyin`
compiles (or loads) pYIN in the parent first, once per process and under a host-wide file lock
(:mod:`services.numba_cache`), and the forked workers inherit the compiled code
(``benchmarks/f0_numba_cache.py`` prices this against a per-worker cache and no cache). A worker
that dies anyway (``BrokenProcessPool``) costs one in-process retry of the missing tracks; if
that fails too, :class:`F0ExtractionError` says so in one line.

Histograms (Chandra et al.): voiced frames only, one bin per pYIN grid value (edges halfway between
grid values on a log-frequency axis), normalized to sum 1.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.context import BaseContext
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from services.audio import SAMPLE_RATE_HZ
from services.numba_cache import warm_once

F0_CACHE_VERSION = 1
"""Bumped when the tracks for given parameters change; part of the cache key."""

WARM_UP_SECONDS = 0.5
"""Length of the tone :func:`warm_pyin` analyses (s): long enough for every pYIN code path."""


class F0ExtractionError(RuntimeError):
    """F0 extraction failed in the worker pool and again in the in-process retry."""


@dataclass(frozen=True)
class F0Params:
    """pYIN settings: F0 range (Hz), frame length and hop (samples at 16 kHz), grid (semitones)."""

    fmin_hz: float = 65.0
    fmax_hz: float = 450.0
    frame_length: int = 1024
    hop_length: int = 160
    resolution_semitones: float = 1.0 / 3.0

    def __post_init__(self) -> None:
        if not 0 < self.fmin_hz < self.fmax_hz < SAMPLE_RATE_HZ / 2:
            raise ValueError(
                f"need 0 < fmin_hz < fmax_hz < {SAMPLE_RATE_HZ / 2}, got "
                f"{self.fmin_hz}, {self.fmax_hz}"
            )
        if self.frame_length < 2 or self.hop_length < 1:
            raise ValueError("frame_length must be >= 2 and hop_length >= 1 samples")
        if not 0 < self.resolution_semitones <= 1:
            raise ValueError(
                f"resolution_semitones must lie in (0, 1], got {self.resolution_semitones}"
            )

    def cache_key(self) -> str:
        """Short hash of the parameters and the cache version."""
        blob = json.dumps({**asdict(self), "version": F0_CACHE_VERSION}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def bins_per_semitone(self) -> int:
        """Grid values per semitone, as ``librosa.pyin`` derives it from the resolution."""
        return int(np.ceil(1.0 / self.resolution_semitones))

    def grid_hz(self) -> NDArray[np.float64]:
        """pYIN's candidate F0 values (Hz), as ``librosa.pyin`` builds them."""
        per = self.bins_per_semitone()
        n_bins = int(np.floor(12 * per * np.log2(self.fmax_hz / self.fmin_hz))) + 1
        return np.asarray(self.fmin_hz * 2.0 ** (np.arange(n_bins) / (12.0 * per)))

    def histogram_edges_hz(self) -> NDArray[np.float64]:
        """Histogram edges (Hz): halfway (geometrically) between neighbouring grid values."""
        step = 1.0 / (12.0 * self.bins_per_semitone())
        grid = self.grid_hz()
        return np.asarray(
            np.concatenate([grid * 2.0 ** (-step / 2), grid[-1:] * 2.0 ** (step / 2)])
        )


@dataclass
class F0ExtractionStats:
    """What one ``f0_tracks`` call did: cache hits, extractions, workers, wall time (s)."""

    n_utterances: int = 0
    cache_hits: int = 0
    extracted: int = 0
    workers: int = 1
    seconds: float = 0.0
    per_utterance_seconds: list[float] = field(default_factory=list, repr=False)


def waveform_sha256(waveform: NDArray[np.floating]) -> str:
    """SHA-256 (hex) of the waveform's float32 samples: the F0 cache key of an utterance."""
    return hashlib.sha256(np.ascontiguousarray(waveform, dtype=np.float32).tobytes()).hexdigest()


def pyin_track(
    waveform: NDArray[np.floating], params: F0Params = F0Params()
) -> NDArray[np.float32]:
    """Per-frame F0 (Hz) of a 16 kHz waveform; NaN on unvoiced frames (float32).

    ``librosa.pyin``'s output, computed by :func:`services.attacks.pyin_fast.pyin` (bit-identical,
    about 4-5x faster; ``librosa.pyin`` itself with a librosa other than 0.11).
    """
    # Heavy imports (librosa, Numba), deferred so that importing this module stays cheap.
    from services.attacks.pyin_fast import pyin

    x = np.asarray(waveform, dtype=np.float32).reshape(-1)
    if x.size < params.frame_length:
        x = np.concatenate([x, np.zeros(params.frame_length - x.size, dtype=np.float32)])
    f0, voiced, _ = pyin(
        x,
        fmin=params.fmin_hz,
        fmax=params.fmax_hz,
        sr=SAMPLE_RATE_HZ,
        frame_length=params.frame_length,
        hop_length=params.hop_length,
        resolution=params.resolution_semitones,
    )
    return np.where(voiced, f0, np.nan).astype(np.float32)


def _timed_track(
    args: tuple[NDArray[np.float32], F0Params],
) -> tuple[NDArray[np.float32], float]:
    waveform, params = args
    start = time.perf_counter()
    track = pyin_track(waveform, params)
    return track, time.perf_counter() - start


def warm_pyin(params: F0Params = F0Params()) -> None:
    """Compile (or load from Numba's cache) every Numba function pYIN uses, in this process.

    Numba compiles per argument type, not per value, so a short tone with the float32 input and
    the frame settings of any real call covers them all. Done once per process (a forked child
    that inherited a warm parent does not need it), under a host-wide lock
    (:mod:`services.numba_cache`).
    """
    t = np.arange(int(WARM_UP_SECONDS * SAMPLE_RATE_HZ)) / SAMPLE_RATE_HZ
    tone = (0.5 * np.sin(2 * np.pi * 150.0 * t)).astype(np.float32)
    warm_once(f"pyin:{params.cache_key()}", lambda: pyin_track(tone, params))


def _pool_context() -> BaseContext:
    # fork where available: workers start in milliseconds and never re-import ``__main__`` (spawn
    # would, breaking scripts without a main guard). pYIN in the child touches only NumPy/Numba.
    return get_context("fork" if "fork" in get_all_start_methods() else "spawn")


def _cache_path(cache_dir: Path, params: F0Params, sha: str) -> Path:
    return cache_dir / "f0" / params.cache_key() / sha[:2] / f"{sha}.npy"


def _write_npy(path: Path, array: NDArray[np.float32]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array)
    tmp.replace(path)  # atomic: a concurrent reader never sees a partial file


def f0_tracks(
    waveforms: Sequence[NDArray[np.floating]],
    *,
    params: F0Params = F0Params(),
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    stats: F0ExtractionStats | None = None,
) -> list[NDArray[np.float32]]:
    """F0 track of every waveform (16 kHz), from the cache or extracted in parallel.

    Args:
        waveforms: mono 16 kHz waveforms.
        params: pYIN settings.
        cache_dir: folder of the per-utterance cache (None: no cache).
        workers: processes for the missing tracks (None: ``os.cpu_count()``; 1: serial, in this
            process).
        stats: filled with cache hits, extractions and wall time when given.

    Returns:
        One float32 track per waveform: F0 in Hz per 10 ms frame, NaN where unvoiced.
    """
    start = time.perf_counter()
    n_workers = max(1, int(workers if workers is not None else (os.cpu_count() or 1)))
    cache = Path(cache_dir) if cache_dir is not None else None
    shas = [waveform_sha256(w) for w in waveforms]
    found: dict[str, NDArray[np.float32]] = {}
    if cache is not None:
        for sha in set(shas):
            path = _cache_path(cache, params, sha)
            if path.is_file():
                found[sha] = np.load(path)
    todo: dict[str, NDArray[np.float32]] = {}
    for sha, w in zip(shas, waveforms, strict=True):
        if sha not in found and sha not in todo:
            todo[sha] = np.ascontiguousarray(w, dtype=np.float32).reshape(-1)
    jobs = [(w, params) for w in todo.values()]
    if jobs:
        warm_pyin(params)
    if n_workers == 1 or len(jobs) < 2:
        results = [_timed_track(job) for job in jobs]
    else:
        results = _pooled_tracks(jobs, n_workers)
    for sha, (track, _) in zip(todo, results, strict=True):
        found[sha] = track
        if cache is not None:
            _write_npy(_cache_path(cache, params, sha), track)
    if stats is not None:
        stats.n_utterances = len(waveforms)
        stats.extracted = len(todo)
        stats.cache_hits = len(waveforms) - len(todo)
        stats.workers = 1 if len(jobs) < 2 else n_workers
        stats.seconds = time.perf_counter() - start
        stats.per_utterance_seconds = [t for _, t in results]
    return [found[sha] for sha in shas]


def _pooled_tracks(
    jobs: list[tuple[NDArray[np.float32], F0Params]], n_workers: int
) -> list[tuple[NDArray[np.float32], float]]:
    """``_timed_track`` of every job in a process pool; a dead worker costs one in-process retry.

    The caller has warmed pYIN in this process (:func:`warm_pyin`), so forked workers never
    compile.
    """
    # Longest first so that no worker is left with a long utterance at the end.
    order = sorted(range(len(jobs)), key=lambda i: -jobs[i][0].size)
    try:
        with ProcessPoolExecutor(
            max_workers=min(n_workers, len(jobs)), mp_context=_pool_context()
        ) as pool:
            done = list(pool.map(_timed_track, [jobs[i] for i in order], chunksize=1))
    except BrokenProcessPool as exc:
        # A worker died (signal, out of memory): its tracks are lost, the others are not worth
        # picking apart. One retry here, serially; the stage fails if that fails too.
        try:
            return [_timed_track(job) for job in jobs]
        except Exception as retry_exc:
            raise F0ExtractionError(
                f"F0 extraction (pYIN): a worker process died ({exc or 'BrokenProcessPool'}) "
                f"and the in-process retry failed: {type(retry_exc).__name__}: {retry_exc}"
            ) from None
    results = [done[0]] * len(jobs)
    for pos, i in enumerate(order):
        results[i] = done[pos]
    return results


def f0_histograms(
    groups: Sequence[Sequence[NDArray[np.float32]]], params: F0Params = F0Params()
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Normalized F0 histogram of each group of tracks (voiced frames pooled over the group).

    Returns:
        ``(histograms (n_groups, n_bins), voiced frame count per group)``; a group without any
        voiced frame has an all-zero row.
    """
    edges = np.log(params.histogram_edges_hz())
    n_bins = edges.size - 1
    values, owner = [], []
    for g, tracks in enumerate(groups):
        for t in tracks:
            v = t[np.isfinite(t)]
            values.append(v)
            owner.append(np.full(v.size, g, dtype=np.int64))
    f0 = np.concatenate(values) if values else np.zeros(0)
    who = np.concatenate(owner) if owner else np.zeros(0, dtype=np.int64)
    bins = np.clip(
        np.searchsorted(edges, np.log(np.maximum(f0, 1e-6)), side="right") - 1, 0, n_bins - 1
    )
    counts = np.bincount(who * n_bins + bins, minlength=len(groups) * n_bins).reshape(
        len(groups), n_bins
    )
    totals = counts.sum(axis=1)
    hist = counts / np.maximum(totals, 1)[:, None]
    return hist.astype(np.float64), totals.astype(np.int64)
