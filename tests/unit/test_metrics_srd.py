"""Similarity rank disclosure: ranks with ties, summaries, seed 003 relations, beta-binomials."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.metrics import (
    beta_binomial_rank_pmf,
    compute_srd,
    fit_beta_binomial,
    fit_beta_binomial_constrained,
    matching_ranks,
    srd_from_similarity,
)


def truncate2(value: float) -> float:
    """Seed 003 publishes MaxD truncated (not rounded) to two decimals."""
    return math.floor(value * 100) / 100


def test_matching_ranks_resolve_ties_in_the_attackers_favour() -> None:
    similarity = [[0.9, 0.1, 0.5], [0.3, 0.3, 0.8], [0.2, 0.4, 0.4]]
    # Row 1: only 0.8 is strictly above the matched 0.3 (the tie at 0.3 does not count).
    np.testing.assert_array_equal(matching_ranks(similarity, [0, 1, 2]), [1, 2, 1])
    np.testing.assert_array_equal(matching_ranks(similarity, [1, 0, 0]), [3, 2, 3])


def test_matching_ranks_with_distances_use_their_negative() -> None:
    rng = np.random.default_rng(0)
    distances = rng.random((50, 8))
    reference = rng.integers(0, 8, 50)
    ranks = matching_ranks(-distances, reference)
    expected = 1 + (distances < distances[np.arange(50), reference][:, None]).sum(axis=1)
    np.testing.assert_array_equal(ranks, expected)


def test_hand_computed_summaries() -> None:
    # Ranks 1, 2, 1 over N = 3: p = (2/3, 1/3, 0); eps = (1, 0, -inf) bits.
    result = srd_from_similarity([[0.9, 0.1, 0.5], [0.3, 0.3, 0.8], [0.2, 0.4, 0.4]], [0, 1, 2])
    empirical = result.empirical
    np.testing.assert_array_equal(result.rank_counts, [2, 1, 0])
    assert empirical.max_disclosure_bits == pytest.approx(1.0)
    assert empirical.mean_disclosure_bits == pytest.approx(2 / 3)
    assert empirical.identification_rate_percent == pytest.approx(200 / 3)
    assert empirical.rank_spread_percent == pytest.approx(100 / 3)
    assert empirical.disclosure_bits[2] == -np.inf


def test_uniform_ranks_disclose_nothing() -> None:
    n_ref = 40
    result = compute_srd(np.tile(np.arange(1, n_ref + 1), 20), n_ref)
    assert result.empirical.mean_disclosure_bits == pytest.approx(0.0, abs=1e-12)
    assert result.empirical.max_disclosure_bits == pytest.approx(0.0, abs=1e-12)
    assert result.empirical.rank_spread_percent == 0.0
    # Random uniform ranks: MeanD is the KL divergence to uniform, small for many observations.
    rng = np.random.default_rng(1)
    assert (
        compute_srd(rng.integers(1, n_ref + 1, 100_000), n_ref).empirical.mean_disclosure_bits
        < 0.001
    )


def test_perfect_identification() -> None:
    n_ref = 40
    result = compute_srd(np.ones(800, dtype=int), n_ref)
    assert result.empirical.identification_rate_percent == 100.0
    assert result.empirical.max_disclosure_bits == pytest.approx(math.log2(n_ref))
    assert result.empirical.mean_disclosure_bits == pytest.approx(math.log2(n_ref))
    assert result.empirical.rank_spread_percent == pytest.approx(100 / n_ref)
    for fit in (result.constrained_fit, result.unconstrained_fit):
        assert fit is not None
        assert fit.summary.identification_rate_percent == 100.0
        assert fit.alpha == 0.0


def test_seed_003_relation_maxd_is_log2_of_40_times_idr() -> None:
    # Original speech, ET_orig: IdR 56.63 % of 800 inputs (453), MaxD 4.50 bits.
    rng = np.random.default_rng(2)
    ranks = np.concatenate((np.ones(453, dtype=int), rng.integers(2, 41, 347)))
    result = compute_srd(ranks, 40)
    assert result.empirical.identification_rate_percent == pytest.approx(56.63, abs=0.01)
    assert truncate2(result.empirical.max_disclosure_bits) == 4.50
    assert result.empirical.max_disclosure_bits == pytest.approx(
        math.log2(40 * result.empirical.identification_rate_percent / 100)
    )


def test_seed_003_maxd_may_sit_at_another_rank() -> None:
    # T12-5: IdR 5.37 % (43 of 800) gives 1.10 bits, but another rank holding 50 gives MaxD 1.32.
    counts = np.full(40, 18)
    counts[0], counts[5], counts[39] = 43, 50, 41
    assert counts.sum() == 800
    ranks = np.repeat(np.arange(1, 41), counts)
    result = compute_srd(ranks, 40, fit_beta_binomial_models=False)
    assert result.empirical.identification_rate_percent == pytest.approx(5.375)
    assert truncate2(math.log2(40 * 43 / 800)) == 1.10
    assert truncate2(result.empirical.max_disclosure_bits) == 1.32
    assert result.constrained_fit is None and result.unconstrained_fit is None


def test_beta_binomial_with_alpha_beta_one_is_uniform() -> None:
    for n_ref in (2, 10, 40, 500):
        np.testing.assert_allclose(beta_binomial_rank_pmf(n_ref, 1.0, 1.0), 1.0 / n_ref, rtol=1e-9)


def test_beta_binomial_pmf_matches_scipy() -> None:
    from scipy.stats import betabinom

    pmf = beta_binomial_rank_pmf(40, 0.3, 2.5)
    np.testing.assert_allclose(pmf, betabinom(39, 0.3, 2.5).pmf(np.arange(40)), rtol=1e-10)
    with pytest.raises(ValueError, match="alpha and beta"):
        beta_binomial_rank_pmf(40, 0.0, 1.0)


def test_constrained_fit_reproduces_the_observed_identification_rate() -> None:
    rng = np.random.default_rng(3)
    n_ref = 40
    ranks = 1 + rng.binomial(n_ref - 1, rng.beta(0.4, 3.0, 800))
    result = compute_srd(ranks, n_ref)
    assert result.constrained_fit is not None and result.unconstrained_fit is not None
    observed = result.empirical.identification_rate_percent
    assert result.constrained_fit.summary.identification_rate_percent == pytest.approx(
        observed, rel=1e-8
    )
    # The constraint can only cost likelihood.
    assert result.unconstrained_fit.log_likelihood >= result.constrained_fit.log_likelihood - 1e-6
    # The fitted summaries come from the fitted pmf.
    fitted = result.constrained_fit.summary
    assert fitted.mean_disclosure_bits == pytest.approx(
        float(np.sum(fitted.pmf * np.log2(n_ref * fitted.pmf)))
    )


def test_unconstrained_fit_recovers_generating_parameters() -> None:
    rng = np.random.default_rng(4)
    n_ref, alpha, beta = 40, 0.6, 4.0
    ranks = 1 + rng.binomial(n_ref - 1, rng.beta(alpha, beta, 50_000))
    counts = np.bincount(ranks - 1, minlength=n_ref)
    fit = fit_beta_binomial(counts)
    assert fit.alpha == pytest.approx(alpha, rel=0.05)
    assert fit.beta == pytest.approx(beta, rel=0.05)


def test_constrained_fit_is_the_best_on_its_constraint_curve() -> None:
    from services.metrics.srd import _beta_meeting_rank1, _log_likelihood

    rng = np.random.default_rng(5)
    counts = np.bincount(1 + rng.binomial(29, rng.beta(0.8, 2.0, 600)) - 1, minlength=30)
    fit = fit_beta_binomial_constrained(counts)
    assert fit is not None
    log_p1 = math.log(counts[0] / counts.sum())
    for alpha in (0.05, 0.2, 0.5, 1.0, 3.0, 10.0):
        beta = _beta_meeting_rank1(30, alpha, log_p1)
        assert _log_likelihood(counts, alpha, beta) <= fit.log_likelihood + 1e-6


def test_zero_identification_rate_has_no_constrained_fit() -> None:
    result = compute_srd([2, 3, 3, 5, 9, 10], 10)
    assert result.empirical.identification_rate_percent == 0.0
    assert result.constrained_fit is None
    assert result.unconstrained_fit is not None


@pytest.mark.parametrize(
    ("ranks", "n_ref", "fragment"),
    [
        ([], 10, "ranks is empty"),
        ([0, 1], 10, r"ranks must lie in \[1, 10\]"),
        ([1, 11], 10, r"ranks must lie in \[1, 10\]"),
        ([1.5], 10, "ranks must hold integers"),
        ([1], 1, "n_references must be at least 2"),
        ([1], 2.0, "n_references must be an integer"),
    ],
)
def test_invalid_ranks_raise_value_error(ranks: list[float], n_ref: int, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        compute_srd(ranks, n_ref)


def test_invalid_similarity_raises_value_error() -> None:
    with pytest.raises(ValueError, match="similarity must be a non-empty 2-D"):
        matching_ranks([0.1, 0.2], [0])
    with pytest.raises(ValueError, match="similarity contains NaN"):
        matching_ranks([[np.nan, 0.2]], [0])
    with pytest.raises(ValueError, match="reference_index has 2 entries"):
        matching_ranks([[0.1, 0.2]], [0, 1])
    with pytest.raises(ValueError, match="reference_index must lie"):
        matching_ranks([[0.1, 0.2]], [2])
