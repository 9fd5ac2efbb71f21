"""ROCCH EER, interpolated EER and DET curve: analytic cases, invariants, hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from services.metrics import (
    EERResult,
    compute_eer,
    compute_interpolated_eer,
    compute_rocch,
    det_curve,
)


def test_perfectly_separated_scores_give_zero_eer_and_a_threshold_between_classes() -> None:
    result = compute_eer([5.0, 6.0, 7.0], [1.0, 2.0, 3.0])
    assert result == EERResult(eer_percent=0.0, threshold=4.0)  # midpoint of 3 and 5
    assert compute_interpolated_eer([5.0, 6.0, 7.0], [1.0, 2.0, 3.0]).eer_percent == 0.0


def test_reversed_scores_give_the_convex_hull_eer_of_50_percent() -> None:
    # The hull of a worse-than-chance ROC is the chance diagonal.
    assert compute_eer([1.0, 2.0], [5.0, 6.0]).eer_percent == pytest.approx(50.0)
    assert compute_interpolated_eer([1.0, 2.0], [5.0, 6.0]).eer_percent == pytest.approx(100.0)


def test_all_scores_equal_is_one_tie_step_and_gives_50_percent() -> None:
    result = compute_eer([0.3] * 5, [0.3] * 7)
    assert result.eer_percent == pytest.approx(50.0)
    assert result.threshold == 0.3
    assert compute_interpolated_eer([0.3] * 5, [0.3] * 7).eer_percent == pytest.approx(50.0)


def test_a_tie_across_classes_is_one_diagonal_step() -> None:
    # Sorted: n0, {t1, n1}, t2. The tie is pooled: hull (1,0) -> (.5,0) -> (0,.5) -> (0,1),
    # whose middle segment meets P_miss = P_fa at 1/4. Favouring either side would give 0 or 1/2.
    assert compute_eer([1.0, 2.0], [0.0, 1.0]).eer_percent == pytest.approx(25.0)


def test_hand_computed_hull_eer_and_threshold() -> None:
    # Sorted labels t n n t (scores 0 1 2 3): PAV blocks {t,n,n} (1/3) and {t} (1).
    # Hull (P_fa, P_miss): (1, 0) -> (0, 1/2) -> (0, 1); the first segment meets the diagonal at
    # 1/3, a fraction s = (1/3) / (1/2) = 2/3 along it. Vertex thresholds 0 and (2 + 3) / 2.
    result = compute_eer([0.0, 3.0], [1.0, 2.0])
    assert result.eer_percent == pytest.approx(100 / 3)
    assert result.threshold == pytest.approx(2 / 3 * 2.5)
    hull = compute_rocch([0.0, 3.0], [1.0, 2.0])
    np.testing.assert_allclose(hull.pfa, [1.0, 0.0, 0.0])
    np.testing.assert_allclose(hull.pmiss, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(hull.thresholds, [0.0, 2.5, 3.0])
    # The raw ROC passes through (1/2, 1/2) when accepting scores >= 2.
    interpolated = compute_interpolated_eer([0.0, 3.0], [1.0, 2.0])
    assert interpolated.eer_percent == pytest.approx(50.0)
    assert interpolated.threshold == pytest.approx(1.5)


def test_hull_vertex_on_the_diagonal() -> None:
    # Labels t n n n | t n t t: PAV blocks 1/4 and 3/4; the vertex between them is (1/4, 1/4).
    result = compute_eer([1.0, 5.0, 6.0, 7.0], [2.0, 3.0, 4.0, 8.0])
    assert result.eer_percent == pytest.approx(25.0)
    assert result.threshold == pytest.approx(4.5)


def test_gaussian_scores_match_the_analytic_eer() -> None:
    rng = np.random.default_rng(2024)
    for mu in (1.0, 2.0, 3.0):
        tar = rng.normal(mu, 1.0, 100_000)
        non = rng.normal(0.0, 1.0, 100_000)
        expected = 100.0 * norm.cdf(-mu / 2.0)
        result = compute_eer(tar, non)
        assert abs(result.eer_percent - expected) < 0.5
        # For equal-variance Gaussians the EER threshold is the midpoint mu / 2.
        assert abs(result.threshold - mu / 2.0) < 0.05


def test_rocch_eer_never_exceeds_interpolated_eer() -> None:
    rng = np.random.default_rng(5)
    for _ in range(50):
        n_tar, n_non = rng.integers(1, 60, size=2)
        tar = rng.integers(0, 10, n_tar) + rng.integers(0, 4)
        non = rng.integers(0, 10, n_non)
        hull_eer = compute_eer(tar, non).eer_percent
        assert hull_eer <= compute_interpolated_eer(tar, non).eer_percent + 1e-9


def test_eer_is_invariant_under_strictly_increasing_transforms() -> None:
    rng = np.random.default_rng(11)
    tar = rng.normal(1.0, 1.0, 3000)
    non = rng.normal(0.0, 1.0, 4000)
    reference = compute_eer(tar, non).eer_percent
    for transform in (np.exp, np.arctan, lambda x: 3.0 * x - 7.0, lambda x: x**3):
        assert compute_eer(transform(tar), transform(non)).eer_percent == pytest.approx(
            reference, abs=1e-12
        )


def test_swapping_classes_and_negating_scores_keeps_the_eer() -> None:
    rng = np.random.default_rng(12)
    tar = rng.normal(1.0, 1.0, 500).round(1)
    non = rng.normal(0.0, 1.0, 700).round(1)
    assert compute_eer(-non, -tar).eer_percent == pytest.approx(compute_eer(tar, non).eer_percent)


def test_float32_and_list_inputs_are_accepted() -> None:
    tar = np.array([0.5, 0.7, 0.9], dtype=np.float32)
    assert (
        compute_eer(tar, [0.1, 0.6]).eer_percent
        == compute_eer(tar.astype(float), [0.1, 0.6]).eer_percent
    )


@pytest.mark.parametrize(
    ("tar", "non", "fragment"),
    [
        ([], [1.0], "target_scores is empty"),
        ([1.0], [], "nontarget_scores is empty"),
        ([1.0, np.nan], [0.0], "target_scores contains NaN"),
        ([1.0], [0.0, np.inf], "nontarget_scores contains NaN or infinite"),
        ([[1.0, 2.0]], [0.0], "target_scores must be 1-D"),
        (["a"], [0.0], "target_scores must be an array of real numbers"),
    ],
)
def test_invalid_inputs_raise_value_error_naming_the_argument(
    tar: object, non: object, fragment: str
) -> None:
    for function in (compute_eer, compute_interpolated_eer, det_curve):
        with pytest.raises(ValueError, match=fragment):
            function(tar, non)  # type: ignore[operator]


def test_det_curve_from_the_hull_is_monotone_and_contains_the_vertices() -> None:
    rng = np.random.default_rng(3)
    tar, non = rng.normal(2.0, 1.0, 400), rng.normal(0.0, 1.0, 600)
    curve = det_curve(tar, non, n_points=300)
    hull = compute_rocch(tar, non)
    assert curve.convex_hull
    assert np.all(np.diff(curve.pmiss) >= 0) and np.all(np.diff(curve.pfa) <= 0)
    assert np.all(np.isfinite(curve.probit_pfa)) and np.all(np.isfinite(curve.probit_pmiss))
    assert hull.pmiss.size <= curve.pmiss.size <= 300
    for pm, pf in zip(hull.pmiss, hull.pfa, strict=True):
        assert np.any((curve.pmiss == pm) & (curve.pfa == pf))
    p_min = 1.0 / (2 * 600)
    inside = (curve.pmiss > p_min) & (curve.pmiss < 1 - p_min)
    np.testing.assert_allclose(curve.probit_pmiss[inside], norm.ppf(curve.pmiss[inside]))
    assert curve.probit_pmiss[0] == pytest.approx(norm.ppf(p_min))


def test_raw_det_curve_is_thinned_to_n_points() -> None:
    rng = np.random.default_rng(4)
    tar, non = rng.normal(1.0, 1.0, 1000), rng.normal(0.0, 1.0, 1000)
    curve = det_curve(tar, non, n_points=50, convex_hull=False)
    assert not curve.convex_hull
    assert curve.pmiss.size == 50
    assert (curve.pmiss[0], curve.pfa[0]) == (0.0, 1.0)
    assert (curve.pmiss[-1], curve.pfa[-1]) == (1.0, 0.0)
    with pytest.raises(ValueError, match="n_points"):
        det_curve(tar, non, n_points=1)


def test_presorted_and_shuffled_scores_give_the_same_eer_and_hull() -> None:
    # Sorted input skips the sort (merge_scores checks); ties included, results must not move.
    rng = np.random.default_rng(3)
    tar = np.round(rng.normal(1.0, 1.0, 500), 1)
    non = np.round(rng.normal(0.0, 1.0, 5000), 1)
    shuffled = compute_eer(tar, non)
    presorted = compute_eer(np.sort(tar), np.sort(non))
    assert presorted == shuffled
    a, b = compute_rocch(tar, non), compute_rocch(np.sort(tar), np.sort(non))
    np.testing.assert_array_equal(a.pmiss, b.pmiss)
    np.testing.assert_array_equal(a.pfa, b.pfa)
    np.testing.assert_array_equal(a.thresholds, b.thresholds)
