"""Property tests: the SRD beta-binomial fits find the optimum a dense search finds.

The reference likelihood here is written independently of ``services.metrics.srd`` (scipy's
Pochhammer function instead of cumulative sums of logs), and the searches are brute force: a
dense grid over (log alpha, log beta) for the unconstrained fit, a dense 1-D grid over log alpha
(beta solved by bisection) for the IdR-constrained fit. Histograms: bell-shaped, binomial-like
and beta-binomial draws, some with fractional (tied) counts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.special import gammaln, poch

from services.metrics import fit_beta_binomial, fit_beta_binomial_constrained
from services.metrics.srd import PARAMETER_BOUNDS

LOG_LOW, LOG_HIGH = np.log(PARAMETER_BOUNDS[0]), np.log(PARAMETER_BOUNDS[1])
RELATIVE_SLACK = 1e-6  # no fit more than 1e-6 (relative) below the dense search
# For histograms a fit reproduces almost exactly (log-likelihood ~ 0, e.g. all at one rank) a
# relative slack means nothing; this floor is far below any difference between fits that matters.
ABSOLUTE_SLACK = 1e-9


def slack(log_likelihood: float) -> float:
    return RELATIVE_SLACK * abs(log_likelihood) + ABSOLUTE_SLACK


def reference_log_pmf(
    n_ref: int, alpha: NDArray[np.float64], beta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """log BetaBinomial(m; N - 1, alpha, beta) for m = 0..N-1, shape (*alpha.shape, N).

    Pochhammer ratios (scipy ``poch``, accurate to a few ulps at any parameter size, unlike
    differences of ``betaln``); finite for N <= 30 and parameters up to 1e6.
    """
    n = n_ref - 1
    m = np.arange(n_ref)
    a, b = alpha[..., None], beta[..., None]
    log_choose = gammaln(n + 1.0) - gammaln(m + 1.0) - gammaln(n - m + 1.0)
    return np.asarray(
        log_choose + np.log(poch(a, m)) + np.log(poch(b, n - m)) - np.log(poch(a + b, n))
    )


def reference_log_likelihood(
    counts: NDArray[np.float64], alpha: NDArray[np.float64], beta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """sum_m c_m log BetaBinomial(m; N - 1, alpha, beta), for arrays of parameters."""
    log_pmf = reference_log_pmf(counts.size, alpha, beta)
    return np.asarray(np.where(counts > 0, counts * log_pmf, 0.0).sum(axis=-1))


def reference_log_rank1(
    n_ref: int, alpha: NDArray[np.float64], beta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """log P(rank 1) = log (beta)_{N-1} - log (alpha + beta)_{N-1} (rising factorials)."""
    return np.asarray(np.log(poch(beta, n_ref - 1)) - np.log(poch(alpha + beta, n_ref - 1)))


@st.composite
def rank_histograms(draw: st.DrawFn) -> NDArray[np.float64]:
    n_ref = draw(st.integers(min_value=3, max_value=30))
    total = draw(st.integers(min_value=20, max_value=1500))
    rng = np.random.default_rng(draw(st.integers(min_value=0, max_value=2**32 - 1)))
    shape = draw(st.sampled_from(["bell", "binomial", "beta-binomial"]))
    k = np.arange(n_ref)
    if shape == "bell":
        centre = draw(st.floats(min_value=-2.0, max_value=n_ref + 1.0))
        width = draw(st.floats(min_value=0.4, max_value=n_ref / 2))
        p = np.exp(-0.5 * ((k - centre) / width) ** 2)
    elif shape == "binomial":
        q = draw(st.floats(min_value=0.01, max_value=0.99))
        p = np.exp(
            gammaln(n_ref)
            - gammaln(k + 1.0)
            - gammaln(n_ref - k)
            + k * np.log(q)
            + (n_ref - 1 - k) * np.log1p(-q)
        )
    else:
        alpha = np.exp(draw(st.floats(min_value=-3.0, max_value=3.0)))
        beta = np.exp(draw(st.floats(min_value=-3.0, max_value=3.0)))
        p = np.exp(reference_log_pmf(n_ref, np.array(alpha), np.array(beta)))
    counts = rng.multinomial(total, p / p.sum()).astype(np.float64)
    # Ties under the expected rule give fractional counts.
    return counts / draw(st.sampled_from([1.0, 1.0, 2.0, 3.0]))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(counts=rank_histograms())
def test_unconstrained_fit_is_at_least_the_dense_grid_optimum(counts: NDArray[np.float64]) -> None:
    if counts[0] == counts.sum():
        return  # the point mass (alpha -> 0) is outside the box and handled separately
    axis = np.linspace(LOG_LOW, LOG_HIGH, 181)
    log_a, log_b = np.meshgrid(axis, axis, indexing="ij")
    dense = reference_log_likelihood(counts, np.exp(log_a), np.exp(log_b))
    best = float(dense.max())
    fit = fit_beta_binomial(counts)
    assert PARAMETER_BOUNDS[0] * (1 - 1e-12) <= fit.alpha <= PARAMETER_BOUNDS[1] * (1 + 1e-12)
    assert PARAMETER_BOUNDS[0] * (1 - 1e-12) <= fit.beta <= PARAMETER_BOUNDS[1] * (1 + 1e-12)
    fitted = float(reference_log_likelihood(counts, np.array(fit.alpha), np.array(fit.beta)))
    assert fit.log_likelihood == pytest.approx(fitted, rel=1e-10, abs=ABSOLUTE_SLACK)
    assert fitted >= best - slack(best), (fit.alpha, fit.beta, fitted, best)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(counts=rank_histograms())
def test_constrained_fit_is_the_best_fit_meeting_the_identification_rate(
    counts: NDArray[np.float64],
) -> None:
    n_ref, total = counts.size, float(counts.sum())
    if counts[0] == 0 or counts[0] == total:
        return  # no constrained fit / the point mass
    log_p1 = float(np.log(counts[0] / total))
    # Dense 1-D search along the constraint: for each alpha, beta by bisection on log beta.
    log_alpha = np.linspace(LOG_LOW, LOG_HIGH, 3001)
    alpha = np.exp(log_alpha)
    lo, hi = np.full(alpha.size, LOG_LOW), np.full(alpha.size, LOG_HIGH)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        below = reference_log_rank1(n_ref, alpha, np.exp(mid)) < log_p1
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    beta = np.exp(0.5 * (lo + hi))
    inside = np.abs(reference_log_rank1(n_ref, alpha, beta) - log_p1) < 1e-9
    fit = fit_beta_binomial_constrained(counts)
    if not inside.any():
        assert fit is None
        return
    assert fit is not None
    best = float(reference_log_likelihood(counts, alpha[inside], beta[inside]).max())
    fitted = float(reference_log_likelihood(counts, np.array(fit.alpha), np.array(fit.beta)))
    assert fit.summary.identification_rate_percent == pytest.approx(
        100 * counts[0] / total, rel=1e-8
    )
    assert PARAMETER_BOUNDS[0] * (1 - 1e-12) <= fit.beta <= PARAMETER_BOUNDS[1] * (1 + 1e-12)
    assert fitted >= best - slack(best), (fit.alpha, fit.beta, fitted, best)
    # The constraint can only cost likelihood.
    unconstrained = fit_beta_binomial(counts).log_likelihood
    assert unconstrained >= fit.log_likelihood - 1e-9 * abs(fit.log_likelihood) - 1e-12
