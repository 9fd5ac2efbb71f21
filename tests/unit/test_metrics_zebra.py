"""ZEBRA expected and worst-case disclosure: limits, the ECE-area identity, hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit, logit

from services.metrics import compute_zebra, pav_llrs, zebra_category


def test_perfect_separation_discloses_the_whole_prior_entropy() -> None:
    result = compute_zebra([5.0, 6.0, 7.0], [1.0, 2.0])
    # Area under the binary entropy curve over the prior: 1 / (2 ln 2) bits.
    assert result.expected_disclosure_bits == pytest.approx(1.0 / (2.0 * math.log(2.0)))


def test_identical_scores_disclose_nothing() -> None:
    result = compute_zebra([0.5] * 4, [0.5] * 4)
    assert result.expected_disclosure_bits == pytest.approx(0.0, abs=1e-12)
    assert result.worst_case_log10_lr == pytest.approx(0.0, abs=1e-12)
    assert result.category == "0"


def test_hand_computed_expected_disclosure() -> None:
    # Labels t n n t: PAV LLRs -ln 2 for {t, n, n} and +inf for {t}; Z terms (x - b) / b^2.
    def term(x: float) -> float:
        b = math.expm1(x)
        return (x - b) / b**2

    z_tar = 0.25 + 0.5 * (term(-math.log(2)) + 0.0) / 2
    z_non = 0.25 + 0.5 * term(math.log(2))
    result = compute_zebra([0.0, 3.0], [1.0, 2.0])
    assert result.expected_disclosure_bits == pytest.approx((z_tar + z_non) / math.log(2))


def test_expected_disclosure_is_the_area_between_default_and_pav_ece_curves() -> None:
    rng = np.random.default_rng(3)
    tar, non = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 500)
    tar_llr, non_llr = pav_llrs(tar, non)

    def ece_bits(prior: float, t: np.ndarray, n: np.ndarray) -> float:
        plo = logit(prior)
        cost = expit(plo) * np.mean(np.logaddexp(0, -(t + plo)))
        cost += expit(-plo) * np.mean(np.logaddexp(0, n + plo))
        return float(cost / math.log(2))

    zero = np.zeros(1)
    area = quad(
        lambda p: ece_bits(p, zero, zero) - ece_bits(p, tar_llr, non_llr), 0.0, 1.0, limit=400
    )[0]
    assert compute_zebra(tar, non).expected_disclosure_bits == pytest.approx(area, rel=1e-6)


def test_worst_case_is_max_abs_laplace_llr_in_log10() -> None:
    # Laplace PAV of t t t above n n: LLRs ln 4 - ln 1.5 and ln(1/3) - ln 1.5 (see calibration).
    result = compute_zebra([5.0, 6.0, 7.0], [1.0, 2.0])
    expected = max(abs(math.log(4 / 1.5)), abs(math.log(1 / 3 / 1.5))) / math.log(10)
    assert result.worst_case_log10_lr == pytest.approx(expected)
    assert result.category == "A"


def test_more_separated_scores_disclose_more() -> None:
    rng = np.random.default_rng(4)
    non = rng.normal(0.0, 1.0, 5000)
    previous = compute_zebra(rng.normal(0.0, 1.0, 5000), non)
    for mu in (1.0, 2.0, 4.0):
        current = compute_zebra(rng.normal(mu, 1.0, 5000), non)
        assert current.expected_disclosure_bits > previous.expected_disclosure_bits
        previous = current
    assert previous.category in {"B", "C"}


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        (0.0, "0"),
        (1e-17, "0"),
        (0.5, "A"),
        (1.0, "A"),
        (1.5, "B"),
        (3.0, "C"),
        (4.0, "C"),
        (4.5, "D"),
        (5.5, "E"),
        (6.0, "E"),
        (7.0, "F"),
    ],
)
def test_categories_follow_the_zebra_bounds(value: float, tag: str) -> None:
    assert zebra_category(value) == tag


def test_invalid_inputs_raise_value_error() -> None:
    with pytest.raises(ValueError, match="worst_case_log10_lr"):
        zebra_category(-1.0)
    with pytest.raises(ValueError, match="target_scores is empty"):
        compute_zebra([], [1.0])
    with pytest.raises(ValueError, match="nontarget_scores contains NaN"):
        compute_zebra([1.0], [np.nan])
