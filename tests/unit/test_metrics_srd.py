"""Similarity rank disclosure: ranks with ties, summaries, Chandra et al.'s relations,
beta-binomials."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.metrics import (
    beta_binomial_rank_pmf,
    bootstrap_srd,
    compute_srd,
    fit_beta_binomial,
    fit_beta_binomial_constrained,
    matching_ranks,
    rank_histogram,
    srd_from_similarity,
    srd_summary,
)


def truncate2(value: float) -> float:
    """Chandra et al. publishes MaxD truncated (not rounded) to two decimals."""
    return math.floor(value * 100) / 100


def test_matching_ranks_count_better_and_tied_references() -> None:
    similarity = [[0.9, 0.1, 0.5], [0.3, 0.3, 0.8], [0.2, 0.4, 0.4]]
    # Row 1: 0.8 is strictly above the matched 0.3 and one other reference ties with it.
    ranks = matching_ranks(similarity, [0, 1, 2])
    np.testing.assert_array_equal(ranks.n_better, [0, 1, 0])
    np.testing.assert_array_equal(ranks.n_tied, [0, 1, 1])
    np.testing.assert_array_equal(ranks.ranks("expected"), [1.0, 2.5, 1.5])
    np.testing.assert_array_equal(ranks.ranks("attacker"), [1, 2, 1])
    other = matching_ranks(similarity, [1, 0, 0])
    np.testing.assert_array_equal(other.ranks("expected"), [3.0, 2.5, 3.0])
    np.testing.assert_array_equal(other.ranks("attacker"), [3, 2, 3])


def test_matching_ranks_with_distances_use_their_negative() -> None:
    rng = np.random.default_rng(0)
    distances = rng.random((50, 8))
    reference = rng.integers(0, 8, 50)
    ranks = matching_ranks(-distances, reference)
    expected = 1 + (distances < distances[np.arange(50), reference][:, None]).sum(axis=1)
    assert not ranks.n_tied.any()
    np.testing.assert_array_equal(ranks.ranks("expected"), expected)
    np.testing.assert_array_equal(ranks.ranks("attacker"), expected)


def test_hand_computed_summaries_with_ties_at_the_expected_rank() -> None:
    # Row 0: rank 1. Row 1: ranks 2 and 3 tied (1/2 each). Row 2: ranks 1 and 2 tied.
    # Counts (1.5, 1, 0.5) / 3 -> p = (1/2, 1/3, 1/6); eps = (log2 1.5, 0, -1) bits.
    result = srd_from_similarity([[0.9, 0.1, 0.5], [0.3, 0.3, 0.8], [0.2, 0.4, 0.4]], [0, 1, 2])
    empirical = result.empirical
    assert result.tie_rule == "expected" and result.n_observations == 3
    np.testing.assert_allclose(result.rank_counts, [1.5, 1.0, 0.5], rtol=1e-15)
    assert empirical.max_disclosure_bits == pytest.approx(math.log2(1.5))
    assert empirical.mean_disclosure_bits == pytest.approx(math.log2(1.5) / 2 - 1 / 6)
    assert empirical.identification_rate_percent == pytest.approx(50.0)
    assert empirical.rank_spread_percent == pytest.approx(100 / 3)


def test_hand_computed_summaries_with_ties_in_the_attackers_favour() -> None:
    # Ranks 1, 2, 1 over N = 3: p = (2/3, 1/3, 0); eps = (1, 0, -inf) bits.
    result = srd_from_similarity(
        [[0.9, 0.1, 0.5], [0.3, 0.3, 0.8], [0.2, 0.4, 0.4]], [0, 1, 2], tie_rule="attacker"
    )
    empirical = result.empirical
    assert result.tie_rule == "attacker"
    np.testing.assert_array_equal(result.rank_counts, [2, 1, 0])
    assert empirical.max_disclosure_bits == pytest.approx(1.0)
    assert empirical.mean_disclosure_bits == pytest.approx(2 / 3)
    assert empirical.identification_rate_percent == pytest.approx(200 / 3)
    assert empirical.rank_spread_percent == pytest.approx(100 / 3)
    assert empirical.disclosure_bits[2] == -np.inf


def test_identical_voices_disclose_nothing() -> None:
    # Minimal case (ties): all similarities equal (an anonymizer that makes every voice the
    # same). Each input is equally likely at every rank: uniform ranks, IdR 1/6, MeanD 0 bits.
    result = srd_from_similarity(np.ones((6, 6)), np.arange(6))
    empirical = result.empirical
    np.testing.assert_allclose(result.rank_counts, np.ones(6), rtol=1e-12)
    assert empirical.identification_rate_percent == pytest.approx(100 / 6)
    assert empirical.mean_disclosure_bits == pytest.approx(0.0, abs=1e-12)
    assert empirical.max_disclosure_bits == pytest.approx(0.0, abs=1e-12)
    assert empirical.rank_spread_percent == 0.0
    for fit in (result.constrained_fit, result.unconstrained_fit):
        assert fit is not None
        assert fit.summary.mean_disclosure_bits == pytest.approx(0.0, abs=1e-9)
        assert fit.summary.rank_spread_percent == 0.0


def test_identical_voices_under_the_attacker_rule_show_maximal_disclosure() -> None:
    # The explicit option keeps the earlier, attacker-favourable rule (an upper bound).
    result = srd_from_similarity(np.ones((6, 6)), np.arange(6), tie_rule="attacker")
    assert result.empirical.identification_rate_percent == 100.0
    assert result.empirical.mean_disclosure_bits == pytest.approx(math.log2(6))


def test_expected_tie_rule_is_the_mean_over_random_tie_breaking() -> None:
    # Break the ties of an integer-valued similarity matrix by random jitter many times: the
    # average rank histogram converges to the expected-rule histogram.
    rng = np.random.default_rng(11)
    n_inputs, n_ref, draws = 12, 5, 4000
    similarity = rng.integers(0, 3, (n_inputs, n_ref)).astype(float)
    reference = rng.integers(0, n_ref, n_inputs)
    ranks = matching_ranks(similarity, reference)
    assert ranks.n_tied.sum() > n_inputs  # the test exercises many ties
    expected = rank_histogram(ranks, n_ref)
    jittered = similarity[None] + 0.1 * rng.random((draws, n_inputs, n_ref))
    broken = matching_ranks(jittered.reshape(-1, n_ref), np.tile(reference, draws))
    assert not broken.n_tied.any()
    mean_histogram = rank_histogram(broken, n_ref) / draws
    # Each count is a sum of n_inputs bounded terms: its standard error is below
    # sqrt(n_inputs / draws) / 2.
    np.testing.assert_allclose(mean_histogram, expected, atol=4 * math.sqrt(n_inputs / draws) / 2)
    assert expected.sum() == pytest.approx(n_inputs, rel=1e-12)


def test_rank_histogram_per_group_sums_to_the_whole() -> None:
    rng = np.random.default_rng(12)
    similarity = rng.integers(0, 4, (30, 7)).astype(float)
    ranks = matching_ranks(similarity, rng.integers(0, 7, 30))
    groups = rng.integers(0, 4, 30)
    per_group = rank_histogram(ranks, 7, groups=groups)
    assert per_group.shape == (4, 7)
    np.testing.assert_allclose(per_group.sum(axis=0), rank_histogram(ranks, 7), rtol=1e-12)
    np.testing.assert_allclose(per_group.sum(axis=1), np.bincount(groups, minlength=4))
    with pytest.raises(ValueError, match="tie_rule must be one of"):
        rank_histogram(ranks, 7, tie_rule="best")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="taken among 7 references"):
        compute_srd(ranks, 8)


def test_bootstrap_counts_ties_by_the_same_rule() -> None:
    rng = np.random.default_rng(13)
    similarity = rng.integers(0, 3, (60, 6)).astype(float)
    ranks = matching_ranks(similarity, rng.integers(0, 6, 60))
    speakers = rng.integers(0, 10, 60)
    for tie_rule in ("expected", "attacker"):
        empirical = compute_srd(
            ranks, 6, tie_rule=tie_rule, fit_beta_binomial_models=False
        ).empirical
        boot = bootstrap_srd(ranks, speakers, 6, tie_rule=tie_rule, n_resamples=50, seed=0)
        assert boot.mean_disclosure_bits.estimate == pytest.approx(empirical.mean_disclosure_bits)
        assert boot.identification_rate_percent.estimate == pytest.approx(
            empirical.identification_rate_percent
        )
    # Identical voices: every resample is uniform, so the interval is 0 bits wide at 0.
    flat = bootstrap_srd(matching_ranks(np.ones((6, 6)), np.arange(6)), np.arange(6), 6)
    assert flat.mean_disclosure_bits.high == pytest.approx(0.0, abs=1e-12)


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


def test_unconstrained_fit_finds_the_interior_optimum() -> None:
    # Minimal case (fit): a single start at (1, 1) drifted onto the flat binomial ridge
    # (alpha 1e6, beta 9.1e5, log-likelihood -327.398, MeanD 1.31 bits).
    from services.metrics.srd import _log_likelihood

    counts = np.array(
        [0, 0, 0, 0, 1, 3, 1, 5, 3, 10, 5, 11, 12, 13, 11, 10, 8, 6, 4, 2, 2, 1, 0, 0, 1]
    )
    fit = fit_beta_binomial(counts)
    assert fit.alpha == pytest.approx(8.59, rel=2e-3)
    assert fit.beta == pytest.approx(7.60, rel=2e-3)
    assert fit.log_likelihood == pytest.approx(-299.000, abs=1e-3)
    assert fit.log_likelihood >= _log_likelihood(counts, 8.59, 7.60)
    assert fit.summary.mean_disclosure_bits == pytest.approx(0.70, abs=5e-3)
    result = compute_srd(np.repeat(np.arange(1, 26), counts), 25)
    assert result.unconstrained_fit is not None
    assert result.unconstrained_fit.log_likelihood == pytest.approx(-299.000, abs=1e-3)


def test_unconstrained_fit_reaches_an_optimum_on_the_bound() -> None:
    # Minimal case (fit): a binomial-like histogram; the optimum has beta on the upper
    # bound 1e6 (alpha about 8.48e4) and IdR 48.07 %. L-BFGS-B used to stop short of it.
    from scipy.optimize import minimize_scalar

    from services.metrics.srd import PARAMETER_BOUNDS, _log_likelihood

    counts = np.array([271, 433, 48, 0, 0, 0, 0, 0, 0, 0])
    fit = fit_beta_binomial(counts)
    assert fit.beta == pytest.approx(PARAMETER_BOUNDS[1], rel=1e-9)
    assert fit.summary.identification_rate_percent == pytest.approx(48.07, abs=0.01)
    on_bound = minimize_scalar(
        lambda log_alpha: -_log_likelihood(counts, np.exp(log_alpha), PARAMETER_BOUNDS[1]),
        bounds=(0.0, np.log(PARAMETER_BOUNDS[1])),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert fit.log_likelihood >= -on_bound.fun - 1e-7


@pytest.mark.parametrize("counts", [[1, 1, 1], [3] * 8, [1] * 8])
def test_flat_histograms_have_zero_rank_spread(counts: list[int]) -> None:
    # Minimal case (rank spread): fits of a flat histogram land at alpha = beta = 1 +- 1e-8; their
    # pmf must not count as above chance (it did, at 33 % to 75 % rank spread).
    n_ref = len(counts)
    result = compute_srd(np.repeat(np.arange(1, n_ref + 1), counts), n_ref)
    for fit in (result.constrained_fit, result.unconstrained_fit):
        assert fit is not None
        assert fit.alpha == pytest.approx(1.0, abs=1e-5) and fit.beta == pytest.approx(
            1.0, abs=1e-5
        )
        assert fit.summary.rank_spread_percent == 0.0
    assert fit_beta_binomial(counts).summary.rank_spread_percent == 0.0
    assert result.empirical.rank_spread_percent == 0.0


def test_rank_spread_tolerance_is_relative_1e_minus_6() -> None:
    n_ref = 8
    pmf = np.full(n_ref, 1.0 / n_ref)
    pmf[0] *= 1 + 5e-7  # inside the tolerance: chance
    pmf[1] *= 1 + 5e-6  # outside: above chance
    pmf[2:] = (1.0 - pmf[:2].sum()) / (n_ref - 2)
    assert srd_summary(pmf).rank_spread_percent == pytest.approx(100 / n_ref)


def test_fits_accept_fractional_counts() -> None:
    counts = np.array([2.5, 1.5, 1.0, 0.5, 0.5])
    constrained = fit_beta_binomial_constrained(counts)
    unconstrained = fit_beta_binomial(counts)
    assert constrained is not None
    assert constrained.summary.identification_rate_percent == pytest.approx(100 * 2.5 / 6)
    assert unconstrained.log_likelihood >= constrained.log_likelihood - 1e-9
    with pytest.raises(ValueError, match="rank_counts must be non-negative"):
        fit_beta_binomial([1.0, -0.5, 2.0])
    with pytest.raises(ValueError, match="rank_counts needs at least 2 ranks"):
        fit_beta_binomial([3.0])


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
