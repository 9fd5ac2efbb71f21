"""PAV, Cllr and min Cllr: analytic values, the min Cllr <= Cllr bound, hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.metrics import compute_cllr, compute_min_cllr, pav, pav_calibration, pav_llrs


def test_pav_pools_violators_into_their_mean() -> None:
    np.testing.assert_allclose(pav([0, 1, 0, 0, 1, 1]), [0, 1 / 3, 1 / 3, 1 / 3, 1, 1])
    np.testing.assert_allclose(pav([3.0, 1.0], weights=[1.0, 3.0]), [1.5, 1.5])
    fitted = pav(np.random.default_rng(0).normal(size=200))
    assert np.all(np.diff(fitted) >= 0)


def test_pav_rejects_bad_weights() -> None:
    with pytest.raises(ValueError, match="weights has length"):
        pav([1.0, 2.0], weights=[1.0])
    with pytest.raises(ValueError, match="weights must be positive"):
        pav([1.0, 2.0], weights=[1.0, 0.0])


def test_llr_zero_everywhere_costs_one_bit() -> None:
    assert compute_cllr(np.zeros(5), np.zeros(9)) == pytest.approx(1.0)


def test_hand_computed_cllr() -> None:
    # Target LLR ln 3: log2(1 + 1/3); non-target LLR -ln 3: log2(1 + 1/3); LLR 0: 1 bit.
    expected = (math.log2(4 / 3) + (math.log2(4 / 3) + 1.0) / 2) / 2
    assert compute_cllr([math.log(3)], [-math.log(3), 0.0]) == pytest.approx(expected)


def test_cllr_accepts_infinite_llrs() -> None:
    assert compute_cllr([np.inf, 0.0], [-np.inf]) == pytest.approx(0.25)
    assert compute_cllr([-np.inf], [0.0]) == np.inf
    with pytest.raises(ValueError, match="target_llrs contains NaN"):
        compute_cllr([np.nan], [0.0])


def test_calibrated_well_separated_llrs_cost_almost_nothing() -> None:
    # Targets N(mu/2, mu) and non-targets N(-mu/2, mu): each score is its own natural-log LLR.
    rng = np.random.default_rng(1)
    mu = 50.0
    tar = rng.normal(mu / 2, np.sqrt(mu), 20_000)
    non = rng.normal(-mu / 2, np.sqrt(mu), 20_000)
    assert compute_cllr(tar, non) < 0.01
    assert compute_min_cllr(tar, non) < 0.01


def test_calibrated_gaussian_llrs_have_cllr_close_to_min_cllr() -> None:
    rng = np.random.default_rng(2)
    mu = 2.0
    tar = rng.normal(mu / 2, np.sqrt(mu), 50_000)
    non = rng.normal(-mu / 2, np.sqrt(mu), 50_000)
    cllr, min_cllr = compute_cllr(tar, non), compute_min_cllr(tar, non)
    assert min_cllr <= cllr
    assert cllr - min_cllr < 0.02


def test_min_cllr_never_exceeds_cllr_and_ignores_monotone_transforms() -> None:
    rng = np.random.default_rng(3)
    for shift, scale in ((0.0, 1.0), (5.0, 1.0), (0.0, 10.0), (-3.0, 0.1)):
        tar = scale * rng.normal(1.0, 1.0, 2000) + shift
        non = scale * rng.normal(-1.0, 1.0, 2000) + shift
        min_cllr = compute_min_cllr(tar, non)
        assert min_cllr <= compute_cllr(tar, non) + 1e-12
        assert compute_min_cllr(np.exp(tar / scale), np.exp(non / scale)) == pytest.approx(min_cllr)


def test_hand_computed_min_cllr() -> None:
    # Sorted labels t n n t: PAV blocks {t, n, n} (posterior 1/3, LLR -ln 2) and {t} (+inf).
    # Targets: log2(3) and 0; non-targets: log2(3/2) twice.
    expected = ((math.log2(3) + 0.0) / 2 + math.log2(1.5)) / 2
    assert compute_min_cllr([0.0, 3.0], [1.0, 2.0]) == pytest.approx(expected)


def test_pav_llrs_are_the_min_cllr_llrs_and_keep_input_order() -> None:
    tar, non = [3.0, 0.0], [2.0, 1.0]
    tar_llr, non_llr = pav_llrs(tar, non)
    np.testing.assert_allclose(tar_llr, [np.inf, -math.log(2)])
    np.testing.assert_allclose(non_llr, [-math.log(2), -math.log(2)])
    assert compute_cllr(tar_llr, non_llr) == pytest.approx(compute_min_cllr(tar, non))


def test_laplace_llrs_are_finite_and_smaller_in_magnitude() -> None:
    tar, non = [5.0, 6.0, 7.0], [1.0, 2.0]
    plain_tar, plain_non = pav_llrs(tar, non)
    smooth_tar, smooth_non = pav_llrs(tar, non, laplace=True)
    assert np.all(np.isinf(plain_tar)) and np.all(np.isinf(plain_non))
    assert np.all(np.isfinite(smooth_tar)) and np.all(np.isfinite(smooth_non))
    # Laplace blocks: {1,0 pseudo, n, n} -> 1/4 and {t, t, t, 1 pseudo, 0 pseudo} -> 4/5.
    np.testing.assert_allclose(smooth_non, math.log(1 / 3) - math.log(3 / 2))
    np.testing.assert_allclose(smooth_tar, math.log(4) - math.log(3 / 2))
    calibration = pav_calibration(tar, non, laplace=True)
    assert calibration.targets.sum() == 3 and calibration.nontargets.sum() == 2


def test_invalid_scores_raise_value_error() -> None:
    with pytest.raises(ValueError, match="nontarget_scores is empty"):
        compute_min_cllr([1.0], [])
    with pytest.raises(ValueError, match="target_scores contains NaN"):
        pav_llrs([np.inf], [0.0])
