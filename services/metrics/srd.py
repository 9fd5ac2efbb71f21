"""Similarity rank disclosure (SRD; Bäckström et al. 2026, applied to anonymization by Chandra
et al.).

PROTOCOLS.md section 5 is normative, with the corrections below (ties counted in expectation,
fits that search the whole box, the rank-spread tolerance). For every input, all N references
are ranked by similarity; the matching reference lands on rank 1 + g with g non-matching
references strictly more similar, and shares that place with e references exactly as similar
(its ranks are 1 + g .. 1 + g + e). Tie rules (``TieRule``):

- ``"expected"`` (default): random tie breaking in expectation. The rank is the mid-rank
  1 + g + e / 2 and the observation adds 1 / (e + 1) to each of the ranks 1 + g .. 1 + g + e of
  the rank histogram (counts may be fractional). An anonymizer that makes all voices identical
  then discloses nothing (uniform ranks, MeanD 0 bits).
- ``"attacker"``: the attacker's best case, rank 1 + g (the rule before ties were counted in
  expectation). It reports maximal disclosure (IdR 100 %, MeanD log2 N) for all-equal
  similarities; offered only to reproduce the earlier numbers or to bound the disclosure from
  above.

From the rank distribution gamma_k (empirical p_k or a beta-binomial fit):

- rank order disclosure eps_k = log2(N * gamma_k) bits (0 = chance; the seed's eq. (1) has a
  sign typo, its Table 1 satisfies MaxD = log2(40 * IdR));
- MaxD = max of eps_k over ranks with gamma_k > 0 (bits);
- MeanD = sum_k gamma_k eps_k (bits), the mean disclosure over observations; for the empirical
  distribution this is the KL divergence from the uniform rank distribution;
- IdR = 100 * gamma_1 (%);
- RS = 100 * #{k : gamma_k > (1 + 1e-6) / N} / N (%); the relative tolerance keeps rounding
  noise of a fitted flat pmf (alpha = beta = 1 +- 1e-8) from counting as above chance.

Beta-binomial: (k - 1) ~ BetaBinomial(N - 1, alpha, beta), with alpha, beta in [1e-4, 1e6]. The
likelihood of a (possibly fractional) rank histogram c is sum_k c_k log gamma_k, evaluated from
cumulative sums of log(alpha + i), log(beta + i), log(alpha + beta + i) (no cancellation of large
log-gamma values near the upper bound), vectorized over many (alpha, beta) at once.

- Unconstrained fit: the likelihood on a 41 x 41 grid in (log alpha, log beta) over the whole
  box, then L-BFGS-B with the analytic gradient (ftol 1e-15, gtol 1e-10) from the best grid
  local maxima (and from an optional extra start); the best result wins. The grid is what finds
  an interior optimum that a single start can miss (it may drift onto the flat binomial ridge
  alpha, beta -> infinity), and the tight tolerances carry a binomial-like optimum all the way
  to the bound.
- Constrained fit: the fitted rank-1 probability equals the observed IdR. For each alpha that
  fixes beta (the rank-1 probability increases strictly with beta and falls with alpha), so
  beta(alpha) is increasing and the feasible alphas (those with beta(alpha) inside the box) form
  an interval. The likelihood along the constraint is evaluated on 121 points of log alpha over
  that interval (vectorized bisection for beta), then refined with a bounded Brent search around
  the best point.

Edge cases: IdR = 100 % gives, for both fits, the point mass at rank 1 (the limit alpha -> 0,
reported as alpha = 0, beta = 1). IdR = 0 cannot be met by any beta-binomial with finite
parameters: the constrained fit is then ``None`` and only the unconstrained fit is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.special import gammaln

from services.metrics._validation import as_finite_1d, as_int_1d

TieRule = Literal["expected", "attacker"]
TIE_RULES: tuple[TieRule, ...] = get_args(TieRule)

PARAMETER_BOUNDS = (1e-4, 1e6)
RANK_SPREAD_RELATIVE_TOLERANCE = 1e-6
_LOG_LOW, _LOG_HIGH = float(np.log(PARAMETER_BOUNDS[0])), float(np.log(PARAMETER_BOUNDS[1]))
_GRID_POINTS = 41  # per axis of the unconstrained (log alpha, log beta) grid
_GRID_STARTS = 3  # grid local maxima refined by L-BFGS-B
_CONSTRAINED_GRID_POINTS = 121
_BISECTION_STEPS = 64  # halves a 35-unit log interval below one ulp


@dataclass(frozen=True)
class MatchingRanks:
    """Where each input's matching reference lands among the N references.

    ``n_better[i]`` (g) non-matching references are strictly more similar to input i and
    ``n_tied[i]`` (e) exactly as similar, so the match shares ranks 1 + g .. 1 + g + e.
    """

    n_better: NDArray[np.int64]
    n_tied: NDArray[np.int64]
    n_references: int

    def ranks(self, tie_rule: TieRule = "expected") -> NDArray[np.float64]:
        """Rank per input: the mid-rank 1 + g + e / 2 (``expected``) or 1 + g (``attacker``)."""
        _check_tie_rule(tie_rule)
        tied = self.n_tied if tie_rule == "expected" else np.zeros_like(self.n_tied)
        return (1.0 + self.n_better + 0.5 * tied).astype(np.float64)


@dataclass(frozen=True)
class SRDSummary:
    """SRD summaries of one rank distribution over ranks 1..N.

    ``pmf[k - 1]`` is the probability of rank k and ``disclosure_bits[k - 1]`` is eps_k
    (``-inf`` where the probability is 0).
    """

    max_disclosure_bits: float
    mean_disclosure_bits: float
    identification_rate_percent: float
    rank_spread_percent: float
    pmf: NDArray[np.float64]
    disclosure_bits: NDArray[np.float64]


@dataclass(frozen=True)
class BetaBinomialFit:
    """A beta-binomial fit of (rank - 1) and the SRD summaries of its pmf."""

    alpha: float
    beta: float
    log_likelihood: float  # natural log, sum_k c_k log gamma_k over the rank histogram c
    constrained: bool
    summary: SRDSummary


@dataclass(frozen=True)
class SRDResult:
    """Empirical and fitted SRD of a set of matching ranks.

    ``rank_counts[k - 1]`` is how many inputs had their matching reference at rank k; under the
    ``expected`` tie rule a tied input is spread over its tied ranks, so counts may be fractional
    (they still sum to ``n_observations``).
    """

    n_references: int
    n_observations: int
    tie_rule: TieRule
    rank_counts: NDArray[np.float64]
    empirical: SRDSummary
    constrained_fit: BetaBinomialFit | None
    unconstrained_fit: BetaBinomialFit | None


def _check_tie_rule(tie_rule: str) -> None:
    if tie_rule not in TIE_RULES:
        raise ValueError(f"tie_rule must be one of {list(TIE_RULES)}, got {tie_rule!r}")


def _check_n_references(n_references: int) -> int:
    if isinstance(n_references, bool) or not isinstance(n_references, int | np.integer):
        raise ValueError(f"n_references must be an integer, got {n_references!r}")
    if n_references < 2:
        raise ValueError(f"n_references must be at least 2, got {n_references}")
    return int(n_references)


def matching_ranks(similarity: ArrayLike, reference_index: ArrayLike) -> MatchingRanks:
    """Rank (1 = most similar) of each input's matching reference, with its ties.

    Args:
        similarity: (n_inputs, N) similarities, higher = more similar (for a distance pass its
            negative). Ties are exact equalities.
        reference_index: (n_inputs,) column of the matching reference of each input.

    Returns:
        ``MatchingRanks``: per input, the non-matching references strictly more similar and
        exactly as similar; ``.ranks(tie_rule)`` gives numeric ranks, ``compute_srd`` and
        ``bootstrap_srd`` take it as it is.
    """
    sim = np.asarray(similarity, dtype=np.float64)
    if sim.ndim != 2 or sim.shape[0] == 0 or sim.shape[1] == 0:
        raise ValueError(f"similarity must be a non-empty 2-D array, got shape {sim.shape}")
    if not np.isfinite(sim).all():
        raise ValueError("similarity contains NaN or infinite values")
    ref = as_int_1d(reference_index, "reference_index")
    if ref.size != sim.shape[0]:
        raise ValueError(
            f"reference_index has {ref.size} entries but similarity has {sim.shape[0]} rows"
        )
    if ref.min() < 0 or ref.max() >= sim.shape[1]:
        raise ValueError(f"reference_index must lie in [0, {sim.shape[1] - 1}]")
    matched = sim[np.arange(sim.shape[0]), ref][:, None]
    n_better = np.count_nonzero(sim > matched, axis=1).astype(np.int64)
    n_tied = np.count_nonzero(sim == matched, axis=1).astype(np.int64) - 1  # minus the match
    return MatchingRanks(n_better, n_tied, int(sim.shape[1]))


def _rank_intervals(
    ranks: ArrayLike | MatchingRanks, n_ref: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(first rank 1 + g, ties e) per input; plain integer ranks carry no ties."""
    if isinstance(ranks, MatchingRanks):
        if ranks.n_references != n_ref:
            raise ValueError(
                f"ranks were taken among {ranks.n_references} references, "
                f"but n_references is {n_ref}"
            )
        return 1 + ranks.n_better, ranks.n_tied
    first = as_int_1d(ranks, "ranks")
    if first.min() < 1 or first.max() > n_ref:
        raise ValueError(f"ranks must lie in [1, {n_ref}] (n_references)")
    return first, np.zeros_like(first)


def rank_histogram(
    ranks: ArrayLike | MatchingRanks,
    n_references: int,
    *,
    tie_rule: TieRule = "expected",
    groups: NDArray[np.int64] | None = None,
) -> NDArray[np.float64]:
    """Counts of the matching ranks over 1..N.

    Args:
        ranks: ``MatchingRanks`` (ties counted by ``tie_rule``) or integer ranks in [1, N]
            (no tie information: each counts 1 at its rank).
        n_references: N.
        tie_rule: ``expected`` spreads a tied input evenly, 1 / (e + 1) each, over its ranks
            1 + g .. 1 + g + e; ``attacker`` counts it at 1 + g.
        groups: optional group index (0..G-1) per input, e.g. its speaker.

    Returns:
        (N,) counts, or (G, N) one histogram per group when ``groups`` is given.
    """
    _check_tie_rule(tie_rule)
    n_ref = _check_n_references(n_references)
    first, tied = _rank_intervals(ranks, n_ref)
    group = np.zeros(first.size, dtype=np.int64) if groups is None else np.asarray(groups)
    if group.shape != first.shape or group.dtype.kind not in "iu" or group.min() < 0:
        raise ValueError(
            f"groups must hold one non-negative integer per input ({first.size}), "
            f"got shape {group.shape} and dtype {group.dtype}"
        )
    n_groups = int(group.max()) + 1
    cell = group * n_ref + first - 1
    if tie_rule == "attacker" or not tied.any():
        flat = np.bincount(cell, minlength=n_groups * n_ref)
    else:
        # One entry per (input, tied rank): at most the size of the similarity matrix.
        width = tied + 1
        owner = np.repeat(np.arange(first.size), width)
        offset = np.arange(owner.size) - np.repeat(np.cumsum(width) - width, width)
        flat = np.bincount(
            cell[owner] + offset, weights=1.0 / width[owner], minlength=n_groups * n_ref
        )
    histogram = flat.astype(np.float64).reshape(n_groups, n_ref)
    return histogram if groups is not None else histogram[0]


def srd_summary(pmf: NDArray[np.float64]) -> SRDSummary:
    """SRD summaries (bits, %) of a rank distribution ``pmf`` over ranks 1..N."""
    pmf = np.asarray(pmf, dtype=np.float64)
    n_ref = pmf.size
    positive = pmf > 0
    with np.errstate(divide="ignore"):
        disclosure = np.where(positive, np.log2(n_ref * pmf), -np.inf)
    above_chance = pmf > (1.0 + RANK_SPREAD_RELATIVE_TOLERANCE) / n_ref
    return SRDSummary(
        max_disclosure_bits=float(disclosure[positive].max()),
        mean_disclosure_bits=float(np.sum(pmf[positive] * disclosure[positive])),
        identification_rate_percent=100.0 * float(pmf[0]),
        rank_spread_percent=100.0 * float(np.count_nonzero(above_chance)) / n_ref,
        pmf=pmf,
        disclosure_bits=disclosure,
    )


def _cumulative_log(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """(G, n) -> (G, n + 1) with column m = sum of log(values[:, :m])."""
    zero = np.zeros((values.shape[0], 1))
    return np.concatenate([zero, np.cumsum(np.log(values), axis=1)], axis=1)


def _log_pmf_table(n_ref: int, alpha: ArrayLike, beta: ArrayLike) -> NDArray[np.float64]:
    """(G, N) log pmf of rank - 1 for G parameter pairs.

    log P(m) = log C(n, m) + sum_{i<m} log(alpha + i) + sum_{i<n-m} log(beta + i)
    - sum_{i<n} log(alpha + beta + i), n = N - 1: a ratio of rising factorials, exact to a few
    ulps of n * log(1e6) at any parameter size.
    """
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))[:, None]
    b = np.atleast_1d(np.asarray(beta, dtype=np.float64))[:, None]
    n = n_ref - 1
    i = np.arange(n, dtype=np.float64)[None, :]
    m = np.arange(n_ref)
    log_choose = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(n - m + 1.0)
    rising_a = _cumulative_log(a + i)
    rising_b = _cumulative_log(b + i)
    rising_ab = np.sum(np.log(a + b + i), axis=1, keepdims=True)
    return np.asarray(log_choose + rising_a[:, m] + rising_b[:, n - m] - rising_ab)


def beta_binomial_rank_pmf(n_references: int, alpha: float, beta: float) -> NDArray[np.float64]:
    """pmf over ranks 1..N of rank - 1 ~ BetaBinomial(N - 1, alpha, beta)."""
    if n_references < 1:
        raise ValueError(f"n_references must be at least 1, got {n_references}")
    if not (np.isfinite(alpha) and np.isfinite(beta) and alpha > 0 and beta > 0):
        raise ValueError(f"alpha and beta must be positive and finite, got {alpha}, {beta}")
    pmf = np.exp(_log_pmf_table(n_references, alpha, beta)[0])
    return np.asarray(pmf / pmf.sum())


def _log_likelihoods(
    counts: NDArray[np.float64], alpha: ArrayLike, beta: ArrayLike
) -> NDArray[np.float64]:
    """sum_k c_k log gamma_k for each of G parameter pairs (G,)."""
    observed = counts > 0
    table = _log_pmf_table(counts.size, alpha, beta)[:, observed]
    return np.asarray(table @ counts[observed])


def _log_likelihood(counts: NDArray[np.float64], alpha: float, beta: float) -> float:
    return float(_log_likelihoods(np.asarray(counts, dtype=np.float64), alpha, beta)[0])


def _log_likelihood_gradient(
    counts: NDArray[np.float64], alpha: float, beta: float
) -> tuple[float, float]:
    """d log-likelihood / d log alpha and d log beta (digamma differences as finite sums)."""
    n = counts.size - 1
    i = np.arange(n, dtype=np.float64)
    m = np.arange(counts.size)
    rising_a = np.concatenate([[0.0], np.cumsum(1.0 / (alpha + i))])
    rising_b = np.concatenate([[0.0], np.cumsum(1.0 / (beta + i))])
    common = counts.sum() * np.sum(1.0 / (alpha + beta + i))
    d_alpha = float(counts @ rising_a[m]) - common
    d_beta = float(counts @ rising_b[n - m]) - common
    return alpha * d_alpha, beta * d_beta


def _log_rank1(n_ref: int, alpha: ArrayLike, beta: ArrayLike) -> NDArray[np.float64]:
    """log P(rank 1) = sum_{i < N-1} log(beta + i) - log(alpha + beta + i), elementwise.

    Absolute error a few ulps of N log(1e6), which is what the constraint needs (it compares
    log P(rank 1) with the log of the observed rank-1 share).
    """
    a = np.asarray(alpha, dtype=np.float64)[..., None]
    b = np.asarray(beta, dtype=np.float64)[..., None]
    i = np.arange(n_ref - 1, dtype=np.float64)
    return np.asarray(np.sum(np.log(b + i) - np.log(a + b + i), axis=-1))


def _bisect_increasing(
    gap: Callable[[NDArray[np.float64]], NDArray[np.float64]], size: int, low: float, high: float
) -> NDArray[np.float64]:
    """Elementwise root of an increasing ``gap`` on [low, high] (clamped to the ends)."""
    lo, hi = np.full(size, low), np.full(size, high)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        below = gap(mid) < 0.0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


def _beta_meeting_rank1(n_ref: int, alpha: ArrayLike, log_p1: float) -> NDArray[np.float64]:
    """beta with P(rank 1 | alpha, beta) = exp(log_p1), clamped to the parameter bounds."""
    a = np.atleast_1d(np.asarray(alpha, dtype=np.float64))

    def gap(log_beta: NDArray[np.float64]) -> NDArray[np.float64]:
        return _log_rank1(n_ref, a, np.exp(log_beta)) - log_p1

    return np.exp(_bisect_increasing(gap, a.size, _LOG_LOW, _LOG_HIGH))


def _scalar_beta_meeting_rank1(n_ref: int, alpha: float, log_p1: float) -> float:
    """Scalar ``_beta_meeting_rank1`` by Brent's method (fast for the 1-D refinement)."""

    def gap(log_beta: float) -> float:
        return float(_log_rank1(n_ref, alpha, float(np.exp(log_beta)))) - log_p1

    if gap(_LOG_LOW) >= 0.0:
        return PARAMETER_BOUNDS[0]
    if gap(_LOG_HIGH) <= 0.0:
        return PARAMETER_BOUNDS[1]
    return float(np.exp(brentq(gap, _LOG_LOW, _LOG_HIGH, xtol=1e-14, rtol=4 * np.finfo(float).eps)))


def _feasible_log_alpha(n_ref: int, log_p1: float) -> tuple[float, float] | None:
    """[low, high] of log alpha whose constrained beta lies within the bounds (None: empty)."""
    lowest, highest = PARAMETER_BOUNDS
    # P(rank 1) falls with alpha: beta(alpha) <= highest iff alpha <= the root at beta = highest.
    if _log_rank1(n_ref, lowest, highest) < log_p1 or _log_rank1(n_ref, highest, lowest) > log_p1:
        return None

    def root(beta: float) -> float:
        def gap(log_alpha: NDArray[np.float64]) -> NDArray[np.float64]:
            return log_p1 - _log_rank1(n_ref, np.exp(log_alpha), beta)

        return float(_bisect_increasing(gap, 1, _LOG_LOW, _LOG_HIGH)[0])

    return root(lowest), root(highest)


def _as_rank_counts(rank_counts: ArrayLike) -> NDArray[np.float64]:
    counts = as_finite_1d(rank_counts, "rank_counts")
    if counts.size < 2:
        raise ValueError(f"rank_counts needs at least 2 ranks, got {counts.size}")
    if counts.min() < 0 or counts.sum() <= 0:
        raise ValueError("rank_counts must be non-negative with a positive total")
    return counts


def _fit(
    counts: NDArray[np.float64], alpha: float, beta: float, constrained: bool
) -> BetaBinomialFit:
    pmf = beta_binomial_rank_pmf(counts.size, alpha, beta)
    log_likelihood = _log_likelihood(counts, alpha, beta)
    return BetaBinomialFit(alpha, beta, log_likelihood, constrained, srd_summary(pmf))


def _point_mass_fit(counts: NDArray[np.float64], constrained: bool) -> BetaBinomialFit:
    pmf = np.zeros(counts.size)
    pmf[0] = 1.0
    return BetaBinomialFit(0.0, 1.0, 0.0, constrained, srd_summary(pmf))


def fit_beta_binomial_constrained(rank_counts: ArrayLike) -> BetaBinomialFit | None:
    """Max-likelihood beta-binomial whose rank-1 probability equals the observed one.

    ``rank_counts`` (N,) may be fractional (tie rule ``expected``). ``None`` when the observed
    rank-1 share is 0 or cannot be met with alpha, beta in ``PARAMETER_BOUNDS``.
    """
    counts = _as_rank_counts(rank_counts)
    n_ref, total = counts.size, float(counts.sum())
    if counts[0] >= total:
        return _point_mass_fit(counts, constrained=True)
    if counts[0] == 0:
        return None
    log_p1 = float(np.log(counts[0] / total))
    feasible = _feasible_log_alpha(n_ref, log_p1)
    if feasible is None:
        return None

    # The profile likelihood need not be unimodal: a grid over the feasible interval first ...
    grid = np.linspace(feasible[0], feasible[1], _CONSTRAINED_GRID_POINTS)
    alphas = np.exp(grid)
    values = _log_likelihoods(counts, alphas, _beta_meeting_rank1(n_ref, alphas, log_p1))
    best = int(np.argmax(values))
    alpha = float(alphas[best])
    beta = _scalar_beta_meeting_rank1(n_ref, alpha, log_p1)

    # ... then Brent's bounded search between the best point's neighbours.
    def negative_ll(log_alpha: float) -> float:
        a = float(np.exp(log_alpha))
        return -_log_likelihood(counts, a, _scalar_beta_meeting_rank1(n_ref, a, log_p1))

    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    if hi > lo:
        refined = minimize_scalar(
            negative_ll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
        )
        if -float(refined.fun) > _log_likelihood(counts, alpha, beta):
            alpha = float(np.exp(refined.x))
            beta = _scalar_beta_meeting_rank1(n_ref, alpha, log_p1)
    return _fit(counts, alpha, beta, constrained=True)


def _grid_local_maxima(values: NDArray[np.float64], how_many: int) -> NDArray[np.int64]:
    """Flat indices of the ``how_many`` best local maxima (8-neighbourhood) of a 2-D grid."""
    padded = np.pad(values, 1, constant_values=-np.inf)
    rows, cols = values.shape
    is_max = np.ones(values.shape, dtype=bool)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            if dr or dc:
                neighbour = padded[1 + dr : 1 + dr + rows, 1 + dc : 1 + dc + cols]
                is_max &= values >= neighbour
    candidates = np.flatnonzero(is_max)
    order = np.argsort(values.ravel()[candidates])[::-1]
    return candidates[order[:how_many]]


def fit_beta_binomial(
    rank_counts: ArrayLike, start: tuple[float, float] | None = None
) -> BetaBinomialFit:
    """Unconstrained maximum-likelihood beta-binomial fit of (rank - 1).

    ``rank_counts`` (N,) may be fractional; ``start`` is an extra (alpha, beta) to refine from
    besides the grid's best local maxima (see the module docstring).
    """
    counts = _as_rank_counts(rank_counts)
    if counts[0] >= counts.sum():
        return _point_mass_fit(counts, constrained=False)

    axis = np.linspace(_LOG_LOW, _LOG_HIGH, _GRID_POINTS)
    log_a, log_b = np.meshgrid(axis, axis, indexing="ij")
    grid_ll = _log_likelihoods(counts, np.exp(log_a.ravel()), np.exp(log_b.ravel()))
    picks = _grid_local_maxima(grid_ll.reshape(log_a.shape), _GRID_STARTS)
    starts = [np.array([log_a.flat[p], log_b.flat[p]]) for p in picks]
    if start is not None:
        starts.append(np.clip(np.log(np.maximum(start, 1e-300)), _LOG_LOW, _LOG_HIGH))

    def negative_ll(log_params: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        alpha, beta = (float(v) for v in np.exp(log_params))
        gradient = _log_likelihood_gradient(counts, alpha, beta)
        return -_log_likelihood(counts, alpha, beta), -np.asarray(gradient)

    best_x, best_ll = starts[0], -np.inf
    for x0 in starts:
        result = minimize(
            negative_ll,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(_LOG_LOW, _LOG_HIGH)] * 2,
            options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 2000, "maxcor": 20},
        )
        if -float(result.fun) > best_ll:
            best_x, best_ll = np.asarray(result.x), -float(result.fun)
    alpha, beta = (float(v) for v in np.exp(best_x))
    return _fit(counts, alpha, beta, constrained=False)


def compute_srd(
    ranks: ArrayLike | MatchingRanks,
    n_references: int,
    *,
    tie_rule: TieRule = "expected",
    fit_beta_binomial_models: bool = True,
) -> SRDResult:
    """SRD of matching ranks: empirical summaries and beta-binomial fits.

    Args:
        ranks: ``MatchingRanks`` (from ``matching_ranks``) or 1-D integer ranks in
            [1, n_references], one per input (integer ranks carry no ties).
        n_references: N, the number of references (speakers), at least 2.
        tie_rule: how tied matches count (``expected`` or ``attacker``; module docstring).
        fit_beta_binomial_models: also fit the constrained and unconstrained beta-binomials.

    Returns:
        ``SRDResult``; disclosures in bits, IdR and RS in percent.
    """
    n_ref = _check_n_references(n_references)
    counts = rank_histogram(ranks, n_ref, tie_rule=tie_rule)
    n_observations = ranks.n_better.size if isinstance(ranks, MatchingRanks) else np.size(ranks)
    empirical = srd_summary(counts / counts.sum())
    constrained = unconstrained = None
    if fit_beta_binomial_models:
        constrained = fit_beta_binomial_constrained(counts)
        start = None if constrained is None else (constrained.alpha, constrained.beta)
        unconstrained = fit_beta_binomial(counts, start=start)
    return SRDResult(
        n_ref, int(n_observations), tie_rule, counts, empirical, constrained, unconstrained
    )


def srd_from_similarity(
    similarity: ArrayLike,
    reference_index: ArrayLike,
    *,
    tie_rule: TieRule = "expected",
    fit_beta_binomial_models: bool = True,
) -> SRDResult:
    """``compute_srd`` of ``matching_ranks(similarity, reference_index)``, N = columns."""
    ranks = matching_ranks(similarity, reference_index)
    return compute_srd(
        ranks,
        ranks.n_references,
        tie_rule=tie_rule,
        fit_beta_binomial_models=fit_beta_binomial_models,
    )
