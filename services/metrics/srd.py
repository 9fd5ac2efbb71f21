"""Similarity rank disclosure (SRD; Bäckström et al. 2026, applied to anonymization in seed 003).

PROTOCOLS.md section 5 is normative. For every input, all N references are ranked by
similarity; k is the rank of the matching reference (1 = most similar, ties in the attacker's
favour). From the rank distribution gamma_k (empirical p_k or a beta-binomial fit):

- rank order disclosure eps_k = log2(N * gamma_k) bits (0 = chance; the seed's eq. (1) has a
  sign typo, its Table 1 satisfies MaxD = log2(40 * IdR));
- MaxD = max of eps_k over ranks with gamma_k > 0 (bits);
- MeanD = sum_k gamma_k eps_k (bits), the mean disclosure over observations; for the empirical
  distribution this is the KL divergence from the uniform rank distribution;
- IdR = 100 * gamma_1 (%);
- RS = 100 * #{k : gamma_k > 1/N} / N (%).

Beta-binomial: (k - 1) ~ BetaBinomial(N - 1, alpha, beta). The constrained fit keeps the
fitted rank-1 probability equal to the observed IdR: for each alpha that fixes beta (the
rank-1 probability increases strictly with beta), and a 1-D search over log alpha maximizes the
likelihood. The unconstrained fit maximizes the likelihood over (alpha, beta). Both search
alpha, beta in [1e-4, 1e6].

Edge cases: IdR = 100 % gives, for both fits, the point mass at rank 1 (the limit alpha -> 0,
reported as alpha = 0, beta = 1). IdR = 0 cannot be met by any beta-binomial with finite
parameters: the constrained fit is then ``None`` and only the unconstrained fit is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq, minimize, minimize_scalar
from scipy.special import betaln, gammaln

from services.metrics._validation import as_int_1d

PARAMETER_BOUNDS = (1e-4, 1e6)
_LOG_LOW, _LOG_HIGH = float(np.log(PARAMETER_BOUNDS[0])), float(np.log(PARAMETER_BOUNDS[1]))


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
    log_likelihood: float  # natural log, of the observed ranks
    constrained: bool
    summary: SRDSummary


@dataclass(frozen=True)
class SRDResult:
    """Empirical and fitted SRD of a set of matching ranks.

    ``rank_counts[k - 1]`` is how many inputs had their matching reference at rank k.
    """

    n_references: int
    n_observations: int
    rank_counts: NDArray[np.int64]
    empirical: SRDSummary
    constrained_fit: BetaBinomialFit | None
    unconstrained_fit: BetaBinomialFit | None


def matching_ranks(similarity: ArrayLike, reference_index: ArrayLike) -> NDArray[np.int64]:
    """Rank (1 = most similar) of each input's matching reference; ties favour the attacker.

    Args:
        similarity: (n_inputs, N) similarities, higher = more similar (for a distance pass its
            negative).
        reference_index: (n_inputs,) column of the matching reference of each input.

    Returns:
        (n_inputs,) ranks k = 1 + number of non-matching references strictly more similar.
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
    matched = sim[np.arange(sim.shape[0]), ref]
    return 1 + np.count_nonzero(sim > matched[:, None], axis=1).astype(np.int64)


def srd_summary(pmf: NDArray[np.float64]) -> SRDSummary:
    """SRD summaries (bits, %) of a rank distribution ``pmf`` over ranks 1..N."""
    n_ref = pmf.size
    positive = pmf > 0
    with np.errstate(divide="ignore"):
        disclosure = np.where(positive, np.log2(n_ref * pmf), -np.inf)
    return SRDSummary(
        max_disclosure_bits=float(disclosure[positive].max()),
        mean_disclosure_bits=float(np.sum(pmf[positive] * disclosure[positive])),
        identification_rate_percent=100.0 * float(pmf[0]),
        rank_spread_percent=100.0 * float(np.count_nonzero(pmf > 1.0 / n_ref)) / n_ref,
        pmf=pmf,
        disclosure_bits=disclosure,
    )


def _log_pmf(n_ref: int, alpha: float, beta: float) -> NDArray[np.float64]:
    n = n_ref - 1
    m = np.arange(n_ref, dtype=np.float64)
    log_choose = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(n - m + 1.0)
    return np.asarray(
        log_choose + betaln(m + alpha, n - m + beta) - betaln(alpha, beta), dtype=np.float64
    )


def beta_binomial_rank_pmf(n_references: int, alpha: float, beta: float) -> NDArray[np.float64]:
    """pmf over ranks 1..N of rank - 1 ~ BetaBinomial(N - 1, alpha, beta)."""
    if n_references < 1:
        raise ValueError(f"n_references must be at least 1, got {n_references}")
    if not (np.isfinite(alpha) and np.isfinite(beta) and alpha > 0 and beta > 0):
        raise ValueError(f"alpha and beta must be positive and finite, got {alpha}, {beta}")
    pmf = np.exp(_log_pmf(n_references, alpha, beta))
    return pmf / pmf.sum()


def _log_rank1(n_ref: int, alpha: float, beta: float) -> float:
    """log P(rank 1) = sum_{i < N-1} log((beta + i) / (alpha + beta + i)); stable for big beta."""
    i = np.arange(n_ref - 1, dtype=np.float64)
    share = alpha / (alpha + beta + i)
    # log1p keeps tiny shares exact (large beta); the plain log is exact when beta is tiny.
    with np.errstate(divide="ignore"):
        terms = np.where(
            share < 0.5,
            np.log1p(-np.minimum(share, 0.5)),
            np.log(beta + i) - np.log(alpha + beta + i),
        )
    return float(np.sum(terms))


def _beta_meeting_rank1(n_ref: int, alpha: float, log_p1: float) -> float:
    def gap(log_beta: float) -> float:
        return _log_rank1(n_ref, alpha, float(np.exp(log_beta))) - log_p1

    low, high = -60.0, 90.0
    if gap(low) >= 0.0:
        return float(np.exp(low))
    if gap(high) <= 0.0:
        return float(np.exp(high))
    return float(np.exp(brentq(gap, low, high, xtol=1e-12, rtol=1e-12)))


def _log_likelihood(counts: NDArray[np.int64], alpha: float, beta: float) -> float:
    log_pmf = _log_pmf(counts.size, alpha, beta)
    observed = counts > 0
    return float(np.sum(counts[observed] * log_pmf[observed]))


def _fit(
    counts: NDArray[np.int64], alpha: float, beta: float, log_likelihood: float, constrained: bool
) -> BetaBinomialFit:
    pmf = beta_binomial_rank_pmf(counts.size, alpha, beta)
    return BetaBinomialFit(alpha, beta, log_likelihood, constrained, srd_summary(pmf))


def _point_mass_fit(counts: NDArray[np.int64], constrained: bool) -> BetaBinomialFit:
    pmf = np.zeros(counts.size)
    pmf[0] = 1.0
    return BetaBinomialFit(0.0, 1.0, 0.0, constrained, srd_summary(pmf))


def fit_beta_binomial_constrained(rank_counts: NDArray[np.int64]) -> BetaBinomialFit | None:
    """Max-likelihood beta-binomial whose rank-1 probability equals the observed one."""
    counts = np.asarray(rank_counts, dtype=np.int64)
    n_ref, total = counts.size, int(counts.sum())
    if counts[0] == total:
        return _point_mass_fit(counts, constrained=True)
    if counts[0] == 0 or n_ref < 2:
        return None
    log_p1 = float(np.log(counts[0] / total))

    def negative_ll(log_alpha: float) -> float:
        alpha = float(np.exp(log_alpha))
        return -_log_likelihood(counts, alpha, _beta_meeting_rank1(n_ref, alpha, log_p1))

    # Coarse grid first (the profile likelihood need not be unimodal), then a bounded refine.
    grid = np.linspace(_LOG_LOW, _LOG_HIGH, 49)
    values = np.array([negative_ll(float(g)) for g in grid])
    best = int(np.argmin(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    refined = minimize_scalar(
        negative_ll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-8}
    )
    log_alpha = float(refined.x) if refined.fun <= values[best] else float(grid[best])
    alpha = float(np.exp(log_alpha))
    beta = _beta_meeting_rank1(n_ref, alpha, log_p1)
    return _fit(counts, alpha, beta, _log_likelihood(counts, alpha, beta), constrained=True)


def fit_beta_binomial(
    rank_counts: NDArray[np.int64], start: tuple[float, float] | None = None
) -> BetaBinomialFit:
    """Unconstrained maximum-likelihood beta-binomial fit of (rank - 1)."""
    counts = np.asarray(rank_counts, dtype=np.int64)
    if counts[0] == counts.sum():
        return _point_mass_fit(counts, constrained=False)

    def negative_ll(log_params: NDArray[np.float64]) -> float:
        alpha, beta = np.exp(log_params)
        return -_log_likelihood(counts, float(alpha), float(beta))

    starts = [(1.0, 1.0)] + ([start] if start is not None else [])
    best = None
    for alpha0, beta0 in starts:
        x0 = np.clip(np.log([alpha0, beta0]), _LOG_LOW, _LOG_HIGH)
        result = minimize(negative_ll, x0, method="L-BFGS-B", bounds=[(_LOG_LOW, _LOG_HIGH)] * 2)
        if best is None or result.fun < best.fun:
            best = result
    assert best is not None
    alpha, beta = (float(v) for v in np.exp(best.x))
    return _fit(counts, alpha, beta, -float(best.fun), constrained=False)


def compute_srd(
    ranks: ArrayLike, n_references: int, *, fit_beta_binomial_models: bool = True
) -> SRDResult:
    """SRD of matching ranks (1..N): empirical summaries and beta-binomial fits.

    Args:
        ranks: 1-D integer ranks in [1, n_references], one per input.
        n_references: N, the number of references (speakers), at least 2.
        fit_beta_binomial_models: also fit the constrained and unconstrained beta-binomials.

    Returns:
        ``SRDResult``; disclosures in bits, IdR and RS in percent.
    """
    if isinstance(n_references, bool) or not isinstance(n_references, int | np.integer):
        raise ValueError(f"n_references must be an integer, got {n_references!r}")
    n_ref = int(n_references)
    if n_ref < 2:
        raise ValueError(f"n_references must be at least 2, got {n_ref}")
    rank_array = as_int_1d(ranks, "ranks")
    if rank_array.min() < 1 or rank_array.max() > n_ref:
        raise ValueError(f"ranks must lie in [1, {n_ref}] (n_references)")
    counts = np.bincount(rank_array - 1, minlength=n_ref).astype(np.int64)
    empirical = srd_summary(counts / rank_array.size)
    constrained = unconstrained = None
    if fit_beta_binomial_models:
        constrained = fit_beta_binomial_constrained(counts)
        start = None if constrained is None else (constrained.alpha, constrained.beta)
        unconstrained = fit_beta_binomial(counts, start=start)
    return SRDResult(n_ref, int(rank_array.size), counts, empirical, constrained, unconstrained)


def srd_from_similarity(
    similarity: ArrayLike, reference_index: ArrayLike, *, fit_beta_binomial_models: bool = True
) -> SRDResult:
    """``compute_srd`` of ``matching_ranks(similarity, reference_index)``, N = columns."""
    ranks = matching_ranks(similarity, reference_index)
    n_ref = int(np.shape(similarity)[1])
    return compute_srd(ranks, n_ref, fit_beta_binomial_models=fit_beta_binomial_models)
