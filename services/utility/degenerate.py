"""The usable-speech guard: is an anonymizer's output speech at all?

An anonymizer that outputs silence or noise defeats every attacker, so privacy metrics alone would
rank it first. This guard flags such output from cheap signal statistics (plus, when given, the
ASR's transcripts and the recognizer's embeddings), so that it never ranks above usable speech.

Per utterance (all statistics vectorized over frames; 64 ms Hann frames every 16 ms):

- ``rms_dbfs``: ``20 log10(sqrt(mean(x^2)))`` (dB full scale; a full-scale sine is -3 dBFS);
- active frames: frame power within 30 dB of the utterance's loudest frame (and above -100 dBFS);
- ``flatness``: median over active frames of the spectral flatness (geometric over arithmetic mean
  of the power spectrum, 100 Hz - 7 kHz): ~0.56 for white noise, below 0.05 for voiced speech;
- ``voiced_fraction``: share of active frames that are voiced: cepstral peak prominence (the
  real cepstrum of the log power spectrum in dB, peak over a straight-line baseline, quefrency
  1.25 - 25 ms, i.e. F0 40 - 800 Hz) above ``voicing_cpp_db``;
- ``clipped_share``: share of samples with ``|x| >= clipping_level``.

Reason codes (raised when MORE than ``utterance_share`` of the utterances show the per-utterance
condition; the set-level ones as stated):

- ``silence``: RMS below ``silence_rms_dbfs``;
- ``near_silence``: not silent, but RMS below ``near_silence_rms_dbfs`` or (originals given)
  more than ``near_silence_drop_db`` below the original's RMS;
- ``noise``: not (near-)silent, and voiced fraction below ``noise_max_voiced_fraction`` or
  flatness above ``noise_min_flatness``;
- ``clipping``: clipped share above ``clipping_max_share``;
- ``no_words`` (transcripts given): the ASR's transcript is empty;
- ``constant_output`` (set level): the anonymized embeddings of different speakers have a mean
  cosine of at least ``constant_max_cosine`` (one voice for everyone), or more than
  ``utterance_share`` of the non-silent utterances duplicate another's waveform (the first second,
  level-normalized, correlates with another utterance's with ``|r| >= duplicate_min_correlation``;
  checked on at most `MAX_DUPLICATE_CHECK` utterances spread evenly over the set).

If no single per-utterance reason exceeds ``utterance_share`` but the utterances with ANY of them
do, every per-utterance reason present is raised (a mix of silence and noise is not usable either).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from services.errors import InvalidInputError
from services.utility.config import UsableSpeechThresholds

REASONS: tuple[str, ...] = (
    "silence",
    "near_silence",
    "noise",
    "constant_output",
    "clipping",
    "no_words",
)
"""Every reason code, in the order they are reported."""

PER_UTTERANCE_REASONS: tuple[str, ...] = (
    "silence",
    "near_silence",
    "noise",
    "clipping",
    "no_words",
)

FRAME_S = 0.064
"""Analysis frame (s): resolves harmonics down to ~40 Hz F0 with a Hann window."""
HOP_S = 0.016
"""Frame hop (s)."""
ACTIVE_RANGE_DB = 30.0
"""Active frames: power within this many dB of the utterance's loudest frame."""
ACTIVE_FLOOR_DBFS = -100.0
"""Active frames: mean sample power above this level (dBFS); digital silence is never active."""
F0_RANGE_HZ = (40.0, 800.0)
"""Pitch range of the cepstral voicing test (Hz): wider than speech, to keep shifted voices."""
FLATNESS_BAND_HZ = (100.0, 7000.0)
"""Band of the spectral flatness (Hz)."""
MAX_DUPLICATE_CHECK = 400
"""Utterances compared for duplicate waveforms (pairwise correlations: quadratic)."""
DUPLICATE_PREFIX_S = 1.0
"""Length of the compared waveform prefix (s)."""
FRAME_BLOCK = 4096
"""Frames analysed at once (bounds memory on long recordings)."""
EXAMPLES_PER_REASON = 5
"""Utterance indices listed per reason in ``stats['examples']``."""


@dataclass
class UsableSpeech:
    """The guard's verdict: ``usable`` is False when any reason was raised.

    ``reasons``: reason codes (`REASONS` order). ``stats``: the statistics behind them (JSON-able;
    None where not computed).
    """

    usable: bool
    reasons: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class UtteranceStats:
    """Signal statistics of one utterance (see the module docstring); NaN where undefined."""

    rms_dbfs: float
    flatness: float
    voiced_fraction: float
    clipped_share: float


def _as_waveform(x: NDArray[np.floating], k: int) -> NDArray[np.float64]:
    w = np.asarray(x, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise InvalidInputError(f"utterance {k}: a waveform must be a non-empty 1-D array")
    if not np.isfinite(w).all():
        raise InvalidInputError(f"utterance {k}: waveform contains NaN or infinity")
    return w


def rms_dbfs(x: NDArray[np.floating]) -> float:
    """RMS level of a waveform in dBFS (samples in [-1, 1]); -inf for digital silence."""
    ms = float(np.mean(np.square(np.asarray(x, dtype=np.float64))))
    return float(10.0 * np.log10(ms)) if ms > 0 else float("-inf")


def utterance_stats(
    x: NDArray[np.floating], sample_rate: int, thresholds: UsableSpeechThresholds
) -> UtteranceStats:
    """Level, flatness, voiced fraction and clipping of one waveform (``sample_rate`` Hz)."""
    w = _as_waveform(x, 0)
    clipped = float(np.mean(np.abs(w) >= thresholds.clipping_level))
    level = rms_dbfs(w)
    n = max(16, round(FRAME_S * sample_rate))
    hop = max(1, round(HOP_S * sample_rate))
    if w.size < n:
        w = np.concatenate([w, np.zeros(n - w.size)])
    frames = sliding_window_view(w, n)[::hop]
    window = np.hanning(n)
    freqs = np.fft.rfftfreq(n, 1.0 / sample_rate)
    band = (freqs >= FLATNESS_BAND_HZ[0]) & (freqs <= min(FLATNESS_BAND_HZ[1], sample_rate / 2))
    q = np.arange(
        max(2, int(sample_rate / F0_RANGE_HZ[1])),
        min(n // 2, int(sample_rate / F0_RANGE_HZ[0])) + 1,
    )
    design = np.stack([q.astype(np.float64), np.ones(q.size)], axis=1)
    fit = np.linalg.pinv(design)  # straight-line baseline of the cepstrum over q
    frame_dbfs = np.empty(frames.shape[0])
    flat = np.empty(frames.shape[0])
    cpp = np.empty(frames.shape[0])
    # Blocks of frames bound the memory of long recordings (a block is ~32 MB per array).
    for b in range(0, frames.shape[0], FRAME_BLOCK):
        blk = slice(b, b + FRAME_BLOCK)
        power = np.square(np.abs(np.fft.rfft(frames[blk] * window, axis=1)))
        frame_power = power.sum(axis=1)
        # Parseval on the one-sided spectrum: 2 sum |X_k|^2 ~ n sum (w x)^2; the Hann window's
        # mean square is 3/8, so this is the frame's mean square level in dBFS.
        frame_dbfs[blk] = 10.0 * np.log10(np.maximum(2 * frame_power / (n * n * 0.375), 1e-300))
        pb = power[:, band] + 1e-30
        flat[blk] = np.exp(np.mean(np.log(pb), axis=1)) / np.mean(pb, axis=1)
        # Real cepstrum of the log power spectrum (dB); a floor relative to each frame's power
        # keeps log() finite on exact zeros without changing the spectra of real signals.
        floor = 1e-10 * frame_power[:, None] / power.shape[1] + 1e-300
        cq = np.fft.irfft(10.0 * np.log10(power + floor), n=n, axis=1)[:, q]
        cpp[blk] = (cq - (design @ (fit @ cq.T)).T).max(axis=1)
    active = (frame_dbfs >= frame_dbfs.max() - ACTIVE_RANGE_DB) & (frame_dbfs > ACTIVE_FLOOR_DBFS)
    if not active.any():
        return UtteranceStats(level, float("nan"), float("nan"), clipped)
    voiced = cpp > thresholds.voicing_cpp_db
    return UtteranceStats(
        rms_dbfs=level,
        flatness=float(np.median(flat[active])),
        voiced_fraction=float(np.mean(voiced[active])),
        clipped_share=clipped,
    )


def duplicate_share(
    waveforms: Sequence[NDArray[np.floating]],
    sample_rate: int,
    min_correlation: float,
) -> float:
    """Share of the waveforms whose first `DUPLICATE_PREFIX_S` s correlate (``|r| >=
    min_correlation``) with another's; at most `MAX_DUPLICATE_CHECK`, evenly spread, compared."""
    if len(waveforms) < 2:
        return 0.0
    pick = np.unique(np.linspace(0, len(waveforms) - 1, MAX_DUPLICATE_CHECK).round().astype(int))
    chosen = [np.asarray(waveforms[int(k)], dtype=np.float64) for k in pick]
    length = min(min(w.size for w in chosen), int(DUPLICATE_PREFIX_S * sample_rate))
    prefixes = np.stack([w[:length] for w in chosen])
    prefixes = prefixes - prefixes.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(prefixes, axis=1)
    ok = norms > 0
    unit = prefixes[ok] / norms[ok, None]
    if unit.shape[0] < 2:
        return 0.0
    corr = np.abs(unit @ unit.T)
    np.fill_diagonal(corr, 0.0)
    return float(np.mean(corr.max(axis=1) >= min_correlation))


def cross_speaker_cosine(embeddings: NDArray[np.floating], speakers: Sequence[str]) -> float:
    """Mean cosine over all pairs of utterances of DIFFERENT speakers (no pair matrix formed).

    With unit rows e and per-speaker sums s_i: sum over all ordered pairs = |sum e|^2, over
    same-speaker pairs = sum_i |s_i|^2. NaN when all utterances share one speaker.
    """
    e = np.asarray(embeddings, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] != len(speakers):
        raise InvalidInputError(
            f"anonymized_embeddings: shape {e.shape} for {len(speakers)} speaker labels; "
            "give one (n, d) row per utterance and one speaker per row"
        )
    if not np.isfinite(e).all():
        raise InvalidInputError("anonymized_embeddings contain NaN or infinity")
    norms = np.linalg.norm(e, axis=1)
    unit = e / np.where(norms > 0, norms, 1.0)[:, None]
    _, idx = np.unique(np.asarray([str(s) for s in speakers]), return_inverse=True)
    sums = np.zeros((int(idx.max()) + 1, e.shape[1]))
    np.add.at(sums, idx, unit)
    counts = np.bincount(idx).astype(np.float64)
    total = unit.sum(axis=0)
    pairs = e.shape[0] ** 2 - float(np.sum(counts**2))
    if pairs <= 0:
        return float("nan")
    return float((total @ total - np.sum(sums * sums)) / pairs)


def _finite_or_none(v: float) -> float | None:
    return float(v) if np.isfinite(v) else None


def _median_or_none(values: NDArray[np.float64]) -> float | None:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if finite.size else None


def _check_inputs(
    n: int,
    original: Sequence[NDArray[np.floating]] | None,
    sample_rate: int,
    transcripts: Sequence[str] | None,
    anonymized_embeddings: NDArray[np.floating] | None,
    speakers: Sequence[str] | None,
) -> None:
    """:class:`InvalidInputError` naming the first input of the check that does not fit."""
    if n == 0:
        raise InvalidInputError("usable-speech check: no anonymized utterances given")
    if sample_rate <= 0:
        raise InvalidInputError(f"usable-speech check: sample_rate must be > 0, got {sample_rate}")
    if original is not None and len(original) != n:
        raise InvalidInputError(
            f"usable-speech check: {len(original)} originals for {n} anonymized utterances; "
            "give one original per anonymized utterance, or none"
        )
    if transcripts is not None and len(transcripts) != n:
        raise InvalidInputError(
            f"usable-speech check: {len(transcripts)} transcripts for {n} utterances"
        )
    if anonymized_embeddings is not None and speakers is None:
        raise InvalidInputError(
            "usable-speech check: anonymized_embeddings need `speakers` (one per utterance)"
        )


def assess_usable_speech(
    anonymized: Sequence[NDArray[np.floating]],
    original: Sequence[NDArray[np.floating]] | None,
    sample_rate: int,
    thresholds: UsableSpeechThresholds,
    transcripts: Sequence[str] | None = None,
    anonymized_embeddings: NDArray[np.floating] | None = None,
    speakers: Sequence[str] | None = None,
) -> UsableSpeech:
    """Whether anonymized trial speech is usable speech, and why not (module docstring).

    Args:
        anonymized: anonymized waveforms (mono, ``sample_rate`` Hz, samples in [-1, 1]).
        original: the original waveforms in the same order (for the level drop), or None.
        sample_rate: Hz.
        thresholds: the protocol's `UsableSpeechThresholds`.
        transcripts: the ASR's transcript of each anonymized utterance, or None (no ``no_words``).
        anonymized_embeddings: (n, d) embeddings of the anonymized utterances from the recognizer
            trained on original speech, with ``speakers`` (one source speaker per row); None
            skips the one-voice-for-all test (the duplicate-waveform test always runs).
        speakers: source speaker of each utterance (needed with ``anonymized_embeddings``).

    Returns:
        `UsableSpeech`: ``usable``, ``reasons`` (codes of `REASONS`), ``stats`` (shares of
        utterances per reason, medians of the statistics, examples of flagged utterances).
    """
    n = len(anonymized)
    _check_inputs(n, original, sample_rate, transcripts, anonymized_embeddings, speakers)
    waves = [_as_waveform(x, k) for k, x in enumerate(anonymized)]
    per = [utterance_stats(w, sample_rate, thresholds) for w in waves]
    level = np.array([s.rms_dbfs for s in per])
    flat = np.array([s.flatness for s in per])
    voiced = np.array([s.voiced_fraction for s in per])
    clipped = np.array([s.clipped_share for s in per])

    t = thresholds
    flags: dict[str, NDArray[np.bool_]] = {}
    flags["silence"] = level < t.silence_rms_dbfs
    quiet = level < t.near_silence_rms_dbfs
    drop = np.full(n, np.nan)
    if original is not None:
        orig_level = np.array([rms_dbfs(_as_waveform(x, k)) for k, x in enumerate(original)])
        with np.errstate(invalid="ignore"):
            drop = orig_level - level
        quiet |= np.isfinite(orig_level) & (drop > t.near_silence_drop_db)
    flags["near_silence"] = quiet & ~flags["silence"]
    audible = ~(flags["silence"] | flags["near_silence"])
    with np.errstate(invalid="ignore"):
        noisy = (voiced < t.noise_max_voiced_fraction) | (flat > t.noise_min_flatness)
    flags["noise"] = audible & np.nan_to_num(noisy, nan=0).astype(bool)
    flags["clipping"] = clipped > t.clipping_max_share
    if transcripts is not None:
        flags["no_words"] = np.array([not str(s).strip() for s in transcripts], dtype=bool)

    shares = {code: float(f.mean()) for code, f in flags.items()}
    reasons = {code for code, share in shares.items() if share > t.utterance_share}
    any_problem = np.logical_or.reduce(list(flags.values()))
    if not reasons and float(any_problem.mean()) > t.utterance_share:
        reasons = {code for code, share in shares.items() if share > 0}

    # One output for everyone: identical waveforms (level-normalized), or one voice.
    non_silent = [w for w, silent in zip(waves, flags["silence"], strict=True) if not silent]
    dup = duplicate_share(non_silent, sample_rate, t.duplicate_min_correlation)
    cosine = float("nan")
    if anonymized_embeddings is not None and speakers is not None:
        cosine = cross_speaker_cosine(anonymized_embeddings, speakers)
    if dup > t.utterance_share or (np.isfinite(cosine) and cosine >= t.constant_max_cosine):
        reasons.add("constant_output")

    stats: dict[str, Any] = {
        "n_utterances": n,
        "share": {code: shares.get(code) for code in PER_UTTERANCE_REASONS},
        "share_any": float(any_problem.mean()),
        # Digital silence is -inf dBFS: reported at a -200 dBFS floor (JSON has no infinity).
        "median_rms_dbfs": _median_or_none(np.maximum(level, -200.0)),
        "median_level_drop_db": _median_or_none(np.minimum(drop, 200.0)),
        "median_flatness": _median_or_none(flat),
        "median_voiced_fraction": _median_or_none(voiced),
        "max_clipped_share": float(clipped.max()),
        "duplicate_share": dup,
        "cross_speaker_cosine": _finite_or_none(cosine),
        "examples": {
            code: np.flatnonzero(f)[:EXAMPLES_PER_REASON].tolist()
            for code, f in flags.items()
            if f.any()
        },
    }
    ordered = [code for code in REASONS if code in reasons]
    return UsableSpeech(usable=not ordered, reasons=ordered, stats=stats)
