"""Per-speaker EER: how recognizable each trial speaker is (VoicePrivacy 2026's attacker metric).

For each trial speaker s, the ROCCH EER (``compute_eer``, same PAV, hull and tie rules) of s's
target scores against ALL non-target scores of the trial list, clipped at 50 % (a speaker whose
targets score below the non-targets is no easier to recognize than chance). Two summaries:

- ``mean_percent``: the mean over speakers;
- ``worst_decile_percent``: the privacy worst case, the mean per-speaker EER of the
  ``ceil(N / 10)`` speakers with the LOWEST EER (the tenth of speakers that are easiest to
  recognize; at least one speaker). Ties at the cut are irrelevant: equal EERs give the same mean.

Cost: the non-target scores are sorted once; each speaker then needs a ``searchsorted`` of its
own targets into them and a PAV over about twice its number of targets (no per-speaker pass over
the non-targets).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.metrics._pav import pav_counts
from services.metrics._validation import as_finite_1d
from services.metrics.eer import rocch_eer_from_vertices, rocch_vertices

EER_CLIP_PERCENT = 50.0
"""Per-speaker EERs are clipped at chance (%)."""

WORST_FRACTION = 0.1
"""The worst decile: this fraction of speakers (rounded up), those with the lowest EER."""


@dataclass(frozen=True)
class PerSpeakerEER:
    """Per-speaker EERs (%, clipped at 50) and their summaries (see the module docstring)."""

    speaker_ids: NDArray[np.str_]
    eer_percent: NDArray[np.float64]
    mean_percent: float
    worst_decile_percent: float
    n_worst_decile: int


def _speaker_eer(tar_sorted: NDArray[np.float64], non_sorted: NDArray[np.float64]) -> float:
    """ROCCH EER (%) of sorted targets against sorted non-targets, from grouped counts.

    Ascending groups: the non-targets strictly between two distinct target values, then each
    target value with the non-targets equal to it (a tie group). The same unit / PAV / hull rules
    as ``compute_eer`` give the same EER.
    """
    values, t_counts = np.unique(tar_sorted, return_counts=True)
    below = np.searchsorted(non_sorted, values, side="left")
    upto = np.searchsorted(non_sorted, values, side="right")
    prev = np.concatenate(([0], upto[:-1]))
    runs = below - prev
    ties = upto - below
    n_groups = 2 * values.size + 1
    tgt = np.zeros(n_groups, np.int64)
    non = np.zeros(n_groups, np.int64)
    non[0:-1:2] = runs
    tgt[1::2] = t_counts
    non[1::2] = ties
    non[-1] = non_sorted.size - upto[-1]
    keep = (tgt + non) > 0
    tgt, non = tgt[keep], non[keep]
    # Units as compute_eer forms them (ties ordered targets first): a new unit starts where the
    # last label of one group differs from the first label of the next; PAV pools each unit.
    first_is_t = tgt > 0
    last_is_t = non == 0
    unit_start = np.concatenate([[0], np.flatnonzero(last_is_t[:-1] != first_is_t[1:]) + 1])
    block_t, block_n, _ = pav_counts(
        np.add.reduceat(tgt, unit_start), np.add.reduceat(non, unit_start)
    )
    pmiss, pfa = rocch_vertices(block_t, block_n, int(tgt.sum()), int(non.sum()))
    return 100.0 * rocch_eer_from_vertices(pmiss, pfa)[0]


def per_speaker_eer(
    target_scores: ArrayLike, target_speaker_ids: ArrayLike, nontarget_scores: ArrayLike
) -> PerSpeakerEER:
    """Per-speaker EER of each trial speaker's target scores against all non-target scores.

    Args:
        target_scores: scores of target trials (1-D, finite).
        target_speaker_ids: the trial speaker of each target score (same length).
        nontarget_scores: every non-target score of the trial list (1-D, finite).

    Returns:
        :class:`PerSpeakerEER` with speakers in sorted id order. ``ValueError`` on empty or
        non-finite input or mismatched lengths.
    """
    tar = as_finite_1d(target_scores, "target_scores")
    non = np.sort(as_finite_1d(nontarget_scores, "nontarget_scores"))
    spk = np.asarray(target_speaker_ids).astype(str)
    if spk.shape != tar.shape:
        raise ValueError(
            f"target_speaker_ids has shape {spk.shape}, expected {tar.shape} (one per target)"
        )
    speakers, inv = np.unique(spk, return_inverse=True)
    order = np.lexsort((tar, inv))  # by speaker, then score
    tar_sorted, inv_sorted = tar[order], inv[order]
    bounds = np.concatenate(([0], np.flatnonzero(np.diff(inv_sorted)) + 1, [tar.size]))
    eers = np.array([_speaker_eer(tar_sorted[a:b], non) for a, b in itertools.pairwise(bounds)])
    return summarize_per_speaker(speakers, eers)


def summarize_per_speaker(speaker_ids: ArrayLike, eer_percent: ArrayLike) -> PerSpeakerEER:
    """Clip per-speaker EERs (%) at 50 and summarize them (mean, worst decile)."""
    eers = np.minimum(as_finite_1d(eer_percent, "per-speaker EERs"), EER_CLIP_PERCENT)
    speakers = np.asarray(speaker_ids).astype(str)
    if speakers.shape != eers.shape:
        raise ValueError(f"speaker_ids has shape {speakers.shape}, expected {eers.shape}")
    n_worst = max(1, math.ceil(WORST_FRACTION * eers.size))
    worst = np.sort(eers)[:n_worst]
    return PerSpeakerEER(
        speaker_ids=speakers,
        eer_percent=eers,
        mean_percent=float(eers.mean()),
        worst_decile_percent=float(worst.mean()),
        n_worst_decile=n_worst,
    )
