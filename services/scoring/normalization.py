"""Adaptive symmetric score normalization (AS-norm) for the cosine and PLDA back-ends.

A trial score s(x, y) of a trial utterance x against an enrollment model y is normalized with
the scores of both sides against a *cohort* (per-speaker mean embeddings of attacker-train
speakers, never evaluation speakers):

    s_norm(x, y) = 1/2 (s - mu_K(y)) / sigma_K(y) + 1/2 (s - mu_K(x)) / sigma_K(x)

where mu_K(v), sigma_K(v) are the mean and the (population, ddof 0) standard deviation of the K
highest cohort scores of v (Matejka et al. 2017, "adaptive" s-norm). The trial side's cohort
scores are s(x, c), the model side's s(y, c); both back-ends' scores are symmetric
(s(a, b) = s(b, a)), so a model is scored against the cohort like a trial.

Vectorized without touching the pair scores: with a_i = 1/(2 sigma_K(x_i)), b_j = 1/(2
sigma_K(y_j)), c_i = a_i mu_K(x_i), d_j = b_j mu_K(y_j) and the back-end's quadratic-form
operands s(i, j) = L_i . R_j + l_i + r_j (``PairScoreTerms``),

    s_norm(i, j) = (a_i + b_j) s(i, j) - c_i - d_j
                 = [a_i L_i, L_i, a_i, l_i] . [R_j, b_j R_j, r_j, b_j]
                   + (a_i l_i - c_i) + (b_j r_j - d_j)

i.e. again ``PairScoreTerms`` (of width 2k + 2). Every consumer of the terms (blocked all-pairs
scoring, the streaming EER, the exact speaker-pair moment shortcut) therefore works unchanged on
normalized scores; the extra cost is the cohort scoring, (n_trials + n_models) x n_cohort
scores, and a score product twice as wide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from services.scoring.pairs import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    PairScoreTerms,
    group_means,
    iter_score_blocks,
)
from services.scoring.trials import EmbeddingSet


class _Backend(Protocol):
    def prepare(self, embeddings: np.ndarray) -> np.ndarray: ...

    def speaker_model(self, mean_vectors: np.ndarray) -> np.ndarray: ...


MIN_COHORT_TOP_K = 2
"""The smallest K: the standard deviation of a single cohort score is 0."""


@dataclass(frozen=True)
class CohortStats:
    """Mean and standard deviation (ddof 0) of each row's ``top_k`` highest cohort scores."""

    mean: np.ndarray
    std: np.ndarray
    top_k: int


def effective_top_k(top_k: int, cohort_size: int) -> int:
    """K actually used: ``top_k`` clamped to the cohort size (documented choice: a protocol with
    fewer attacker-train speakers than K uses all of them). ``ValueError`` if K < 2 or the
    cohort has fewer than 2 entries."""
    if top_k < MIN_COHORT_TOP_K:
        raise ValueError(f"cohort_top_k must be >= {MIN_COHORT_TOP_K}, got {top_k}")
    if cohort_size < MIN_COHORT_TOP_K:
        raise ValueError(
            f"AS-norm needs a cohort of at least {MIN_COHORT_TOP_K} speakers, got {cohort_size}"
        )
    return min(top_k, cohort_size)


def cohort_stats(
    terms: PairScoreTerms,
    top_k: int,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
    dtype: np.dtype | type = np.float32,
) -> CohortStats:
    """Top-K statistics of every row of the (rows x cohort) score matrix given by ``terms``.

    Scored in row blocks (one block of ``memory_budget_bytes`` at a time); the top K of a row is
    taken with ``np.partition`` (O(cohort) per row), statistics in float64. ``top_k`` is clamped
    to the cohort size (:func:`effective_top_k`). ``ValueError`` when a row's top-K scores are
    all equal (sigma = 0: the normalization is undefined).
    """
    k = effective_top_k(top_k, terms.n_cols)
    mean = np.empty(terms.n_rows)
    std = np.empty(terms.n_rows)
    for rows, block in iter_score_blocks(terms, memory_budget_bytes, dtype):
        top = np.partition(block, block.shape[1] - k, axis=1)[:, block.shape[1] - k :]
        top = top.astype(np.float64)
        mean[rows] = top.mean(axis=1)
        std[rows] = top.std(axis=1)
    flat = np.flatnonzero(~(std > 0))
    if flat.size:
        raise ValueError(
            f"AS-norm: the top-{k} cohort scores of {flat.size} row(s) are all equal (first row "
            f"{int(flat[0])}): their standard deviation is 0"
        )
    return CohortStats(mean, std, k)


def as_norm_terms(
    terms: PairScoreTerms, trial_stats: CohortStats, model_stats: CohortStats
) -> PairScoreTerms:
    """Operands of the AS-normalized scores of ``terms`` (see the module docstring)."""
    if trial_stats.mean.shape != (terms.n_rows,) or model_stats.mean.shape != (terms.n_cols,):
        raise ValueError(
            f"cohort statistics for {trial_stats.mean.shape[0]} trials x "
            f"{model_stats.mean.shape[0]} models do not match the {terms.n_rows} x {terms.n_cols} "
            "score terms"
        )
    a = 0.5 / trial_stats.std
    b = 0.5 / model_stats.std
    c = a * trial_stats.mean
    d = b * model_stats.mean
    lo = np.zeros(terms.n_rows) if terms.left_offset is None else terms.left_offset
    ro = np.zeros(terms.n_cols) if terms.right_offset is None else terms.right_offset
    left = np.hstack([terms.left * a[:, None], terms.left, a[:, None], lo[:, None]])
    right = np.hstack([terms.right, terms.right * b[:, None], ro[:, None], b[:, None]])
    return PairScoreTerms(left, right, a * lo - c, b * ro - d)


def as_norm_matrix(
    scores: np.ndarray,
    trial_cohort_scores: np.ndarray,
    model_cohort_scores: np.ndarray,
    top_k: int,
) -> np.ndarray:
    """AS-norm of a dense (n_trials, n_models) score matrix, given the dense cohort scores
    (n_trials, n_cohort) and (n_models, n_cohort). For small inputs, analyses and tests;
    the scoring path uses :func:`as_norm_terms`. Returns float64."""
    s = np.asarray(scores, dtype=np.float64)
    stats = []
    for m in (trial_cohort_scores, model_cohort_scores):
        m = np.asarray(m, dtype=np.float64)
        k = effective_top_k(top_k, m.shape[1])
        top = np.partition(m, m.shape[1] - k, axis=1)[:, m.shape[1] - k :]
        stats.append((top.mean(axis=1), top.std(axis=1)))
    (mt, st), (mm, sm) = stats
    return np.asarray(0.5 * (s - mm[None, :]) / sm[None, :] + 0.5 * (s - mt[:, None]) / st[:, None])


@dataclass(frozen=True)
class ASNorm:
    """AS-norm settings for :func:`services.scoring.score_trials`: the cohort's raw embeddings
    (attacker-train utterances with speaker ids and genders) and K.

    The cohort models are the per-speaker means of the back-end's prepared vectors, turned into
    speaker models as enrollment speakers are (``backend.speaker_model``). In gender-partitioned
    modes (``per_gender``, ``mixed``) each partition uses the cohort speakers of its gender.
    """

    cohort: EmbeddingSet
    top_k: int = 200

    def __post_init__(self) -> None:
        if self.top_k < MIN_COHORT_TOP_K:
            raise ValueError(f"cohort_top_k must be >= {MIN_COHORT_TOP_K}, got {self.top_k}")

    def cohort_models(self, backend: _Backend, gender: str | None = None) -> np.ndarray:
        """Cohort speaker models in ``backend``'s space (all speakers, or those of ``gender``)."""
        cohort = self.cohort
        if gender is not None:
            rows = cohort.genders == gender
            if not rows.any():
                raise ValueError(f"AS-norm: the cohort has no speaker of gender {gender!r}")
            cohort = cohort.select(rows)
        spk, _, inv = cohort.speakers()
        return backend.speaker_model(group_means(backend.prepare(cohort.embeddings), inv, spk.size))

    def n_speakers(self, gender: str | None = None) -> int:
        """Cohort size (speakers), overall or of one gender."""
        spk = self.cohort.speaker_ids
        if gender is not None:
            spk = spk[self.cohort.genders == gender]
        return int(np.unique(spk).size)
