"""Speaker-level bootstrap confidence intervals for the EER and the SRD summaries.

Trials of one speaker are not independent, so the resampling unit is the speaker: each
resample draws as many speakers as there are, with replacement, and keeps every trial of each
drawn speaker once per draw. The interval is the percentile interval of the resampled
statistic. Resampling is seeded through ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.metrics._pav import pav_counts
from services.metrics._validation import (
    as_bool_1d,
    as_finite_1d,
    check_same_length,
    labels_1d,
)
from services.metrics.eer import rocch_eer_from_vertices, rocch_vertices
from services.metrics.srd import MatchingRanks, TieRule, rank_histogram


@dataclass(frozen=True)
class BootstrapInterval:
    """Point estimate and percentile interval; units are those of the statistic."""

    estimate: float
    low: float
    high: float
    confidence: float
    n_resamples: int  # resamples where the statistic was defined
    n_speakers: int


@dataclass(frozen=True)
class SRDBootstrap:
    """Bootstrap intervals of the empirical SRD MeanD (bits) and IdR (%)."""

    mean_disclosure_bits: BootstrapInterval
    identification_rate_percent: BootstrapInterval


def _check_options(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")


def _speaker_multiplicities(
    n_speakers: int, n_resamples: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """(n_resamples, n_speakers) how often each speaker is drawn in each resample."""
    draws = rng.integers(0, n_speakers, size=(n_resamples, n_speakers))
    flat = (draws + n_speakers * np.arange(n_resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n_resamples * n_speakers)
    return counts.reshape(n_resamples, n_speakers).astype(np.int64)


def _interval(
    estimate: float, samples: NDArray[np.float64], confidence: float, n_speakers: int
) -> BootstrapInterval:
    valid = samples[np.isfinite(samples)]
    if valid.size == 0:
        return BootstrapInterval(estimate, np.nan, np.nan, confidence, 0, n_speakers)
    tail = 100.0 * (1.0 - confidence) / 2.0
    low, high = np.percentile(valid, [tail, 100.0 - tail])
    return BootstrapInterval(estimate, float(low), float(high), confidence, valid.size, n_speakers)


def _weighted_eer(unit_t: NDArray[np.int64], unit_n: NDArray[np.int64]) -> float:
    keep = (unit_t + unit_n) > 0
    unit_t, unit_n = unit_t[keep], unit_n[keep]
    n_target, n_nontarget = int(unit_t.sum()), int(unit_n.sum())
    if n_target == 0 or n_nontarget == 0:
        return np.nan
    block_t, block_n, _ = pav_counts(unit_t, unit_n)
    pmiss, pfa = rocch_vertices(block_t, block_n, n_target, n_nontarget)
    return 100.0 * rocch_eer_from_vertices(pmiss, pfa)[0]


class SpeakerWeightedEER:
    """The ROCCH EER (%) of one trial set whose trials are re-weighted per speaker.

    ``speaker_index`` maps each trial to its speaker's index in ``0 .. n_speakers - 1`` (a
    universe that may be shared with other trial sets, so one resample weights them alike).
    Calling it with the (n_speakers,) integer weights of a resample gives that resample's EER:
    every trial counts as often as its speaker was drawn; nan when the resample leaves no
    target or no non-target trial.
    """

    def __init__(
        self,
        scores: NDArray[np.float64],
        is_target: NDArray[np.bool_],
        speaker_index: NDArray[np.int64],
        n_speakers: int,
    ) -> None:
        # One sort; targets first among equal scores, so ties are pooled as in compute_eer.
        order = np.lexsort((~is_target, scores))
        value, label, owner = scores[order], is_target[order], speaker_index[order]
        # Units PAV always pools (a run of one label, or 1..1 0..0 across a tie) stay pooled
        # under any non-negative trial weights, so they are found once.
        cut = (label[1:] != label[:-1]) & (value[1:] != value[:-1])
        unit = np.concatenate(([0], np.cumsum(cut)))
        self._n_units = int(unit[-1]) + 1 if unit.size else 0
        # Counts per (unit, speaker) pair: a resample only re-weights these.
        pair, pair_index = np.unique(unit * n_speakers + owner, return_inverse=True)
        self._pair_unit, self._pair_speaker = pair // n_speakers, pair % n_speakers
        self._pair_t = np.bincount(pair_index, weights=label).astype(np.int64)
        self._pair_n = np.bincount(pair_index).astype(np.int64) - self._pair_t

    def __call__(self, weight: NDArray[np.int64]) -> float:
        w = weight[self._pair_speaker]
        n = self._n_units
        unit_t = np.bincount(self._pair_unit, weights=self._pair_t * w, minlength=n)
        unit_n = np.bincount(self._pair_unit, weights=self._pair_n * w, minlength=n)
        return _weighted_eer(unit_t.astype(np.int64), unit_n.astype(np.int64))


def bootstrap_eer(
    scores: ArrayLike,
    is_target: ArrayLike,
    speaker_ids: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Speaker-level bootstrap percentile interval of the ROCCH EER (percent).

    Args:
        scores: trial scores (1-D, finite).
        is_target: per trial, True for a same-speaker trial.
        speaker_ids: per trial, the speaker id of the trial utterance (the resampling unit).
        n_resamples: number of bootstrap resamples (default 1000).
        confidence: coverage of the interval (default 0.95).
        seed: seed of the numpy Generator.

    Resamples without a target or without a non-target trial are dropped (``n_resamples`` of
    the result counts the ones used).
    """
    _check_options(n_resamples, confidence)
    score = as_finite_1d(scores, "scores")
    target = as_bool_1d(is_target, "is_target")
    speakers = labels_1d(speaker_ids, "speaker_ids")
    check_same_length(scores=score, is_target=target, speaker_ids=speakers)
    if target.all() or not target.any():
        raise ValueError("is_target must mark at least one target and one non-target trial")
    _, speaker = np.unique(speakers, return_inverse=True)
    n_speakers = int(speaker.max()) + 1
    eer_with = SpeakerWeightedEER(score, target, speaker, n_speakers)
    estimate = eer_with(np.ones(n_speakers, dtype=np.int64))
    multiplicities = _speaker_multiplicities(n_speakers, n_resamples, np.random.default_rng(seed))
    samples = np.array([eer_with(weight) for weight in multiplicities])
    return _interval(estimate, samples, confidence, n_speakers)


@dataclass(frozen=True)
class SpeakerTrials:
    """The trials of one scoring run: scores, target labels and the speaker each trial is
    resampled with (the trial utterance's speaker)."""

    scores: NDArray[np.float64]
    is_target: NDArray[np.bool_]
    speaker_ids: NDArray[np.str_]


def paired_bootstrap_eer_difference(
    a: Sequence[Sequence[SpeakerTrials]],
    b: Sequence[Sequence[SpeakerTrials]],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapInterval:
    """Speaker-level paired bootstrap percentile interval of EER(b) - EER(a) (percentage points).

    Each side is a list of attackers, each a list of its seeds' trial sets. A side's EER is the
    leaderboard's aggregate: the mean over seeds of the ROCCH EER, lowest over the attackers
    (the worst case of a zoo). Each resample draws the speakers once, with replacement, and
    weights every trial set of both sides with that one draw, so what the two share (the
    speakers and how hard their trials are) cancels in the difference: the interval is
    narrower than one from two independent intervals whenever the two systems' errors go
    together over speakers.

    Raises ValueError when the two sides do not hold the same speakers (the trials are not
    paired), a side is empty, or a trial set lacks a target or a non-target trial.
    """
    _check_options(n_resamples, confidence)
    sides = [[list(seeds) for seeds in side] for side in (a, b)]
    if any(not side or any(not seeds for seeds in side) for side in sides):
        raise ValueError("each side needs at least one attacker with at least one trial set")
    speaker_sets = [
        {str(s) for seeds in side for t in seeds for s in np.unique(t.speaker_ids)}
        for side in sides
    ]
    if speaker_sets[0] != speaker_sets[1]:
        only_a = len(speaker_sets[0] - speaker_sets[1])
        only_b = len(speaker_sets[1] - speaker_sets[0])
        raise ValueError(
            f"the two sides' trials are not paired: {only_a} speakers only in a, {only_b} only in b"
        )
    universe = np.array(sorted(speaker_sets[0]))
    n_speakers = universe.size

    def weighted(trials: SpeakerTrials) -> SpeakerWeightedEER:
        score = as_finite_1d(trials.scores, "scores")
        target = as_bool_1d(trials.is_target, "is_target")
        speakers = labels_1d(trials.speaker_ids, "speaker_ids").astype(str)
        check_same_length(scores=score, is_target=target, speaker_ids=speakers)
        if target.all() or not target.any():
            raise ValueError("every trial set needs a target and a non-target trial")
        index = np.searchsorted(universe, speakers).astype(np.int64)
        return SpeakerWeightedEER(score, target, index, n_speakers)

    eers = [[[weighted(t) for t in seeds] for seeds in side] for side in sides]

    def statistic(weight: NDArray[np.int64]) -> float:
        # np.min and np.mean propagate nan: a resample that leaves some set without a target
        # or a non-target is dropped as a whole.
        side_eer = [
            float(np.min([np.mean([eer(weight) for eer in seeds]) for seeds in side]))
            for side in eers
        ]
        return side_eer[1] - side_eer[0]

    estimate = statistic(np.ones(n_speakers, dtype=np.int64))
    multiplicities = _speaker_multiplicities(n_speakers, n_resamples, np.random.default_rng(seed))
    samples = np.array([statistic(weight) for weight in multiplicities])
    return _interval(estimate, samples, confidence, n_speakers)


def _mean_disclosure(histograms: NDArray[np.float64], n_references: int) -> NDArray[np.float64]:
    totals = histograms.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pmf = histograms / totals
        terms = np.where(pmf > 0, pmf * np.log2(n_references * pmf), 0.0)
    return np.where(totals[:, 0] > 0, terms.sum(axis=1), np.nan)


def bootstrap_srd(
    ranks: ArrayLike | MatchingRanks,
    speaker_ids: ArrayLike,
    n_references: int,
    *,
    tie_rule: TieRule = "expected",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> SRDBootstrap:
    """Speaker-level bootstrap percentile intervals of the empirical SRD MeanD and IdR.

    Args:
        ranks: ``MatchingRanks`` of every input, or integer ranks (1..n_references).
        speaker_ids: speaker of every input (the resampling unit).
        n_references: N, the number of references.
        tie_rule: how tied matches count, as in ``compute_srd``.
        n_resamples, confidence, seed: as in ``bootstrap_eer``.

    Fully vectorized: per-speaker rank histograms are combined with a (resamples x speakers)
    multiplicity matrix in one matrix product.
    """
    _check_options(n_resamples, confidence)
    if n_references < 2:
        raise ValueError(f"n_references must be at least 2, got {n_references}")
    speakers = labels_1d(speaker_ids, "speaker_ids")
    n_ranks = ranks.n_better.size if isinstance(ranks, MatchingRanks) else np.size(ranks)
    if n_ranks != speakers.size:
        raise ValueError(
            f"arguments must have the same length, got ranks={n_ranks}, speaker_ids={speakers.size}"
        )
    _, speaker = np.unique(speakers, return_inverse=True)
    n_speakers = int(speaker.max()) + 1
    # Fractional under the expected tie rule: a tied input is spread over its tied ranks.
    per_speaker = rank_histogram(ranks, n_references, tie_rule=tie_rule, groups=speaker)

    multiplicities = _speaker_multiplicities(n_speakers, n_resamples, np.random.default_rng(seed))
    histograms = multiplicities.astype(np.float64) @ per_speaker
    full = per_speaker.sum(axis=0, keepdims=True)

    mean_d = _mean_disclosure(histograms, n_references)
    id_rate = 100.0 * histograms[:, 0] / histograms.sum(axis=1)
    mean_d_estimate = float(_mean_disclosure(full, n_references)[0])
    id_rate_estimate = 100.0 * float(full[0, 0] / full.sum())
    return SRDBootstrap(
        _interval(mean_d_estimate, mean_d, confidence, n_speakers),
        _interval(id_rate_estimate, id_rate, confidence, n_speakers),
    )
