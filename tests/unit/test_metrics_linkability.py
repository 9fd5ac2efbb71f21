"""Global linkability D_sys (VoicePrivacy definition): limits and a hand-computed case."""

from __future__ import annotations

import numpy as np
import pytest

from services.metrics import compute_linkability


def test_hand_computed_two_bin_case() -> None:
    # Range [0, 4], 2 bins of width 2, centres 1 and 3. Mated: 6 in bin 0, 14 in bin 1;
    # non-mated: 15 in bin 0, 5 in bin 1. Densities: mated .15 / .35, non-mated .375 / .125.
    mated = [0.5] * 6 + [3.5] * 13 + [4.0]
    nonmated = [0.0] + [1.0] * 14 + [3.0] * 5
    result = compute_linkability(mated, nonmated, n_bins=2)
    lr = 0.35 / 0.125
    local_1 = 2 * lr / (1 + lr) - 1  # bin 0 has LR < 1, so D = 0 there
    np.testing.assert_allclose(result.local_linkability, [0.0, local_1])
    np.testing.assert_allclose(result.bin_centers, [1.0, 3.0])
    # Trapezoid over the two centres: (3 - 1) * (0 * .15 + local_1 * .35) / 2.
    assert result.d_sys == pytest.approx(local_1 * 0.35)


def test_default_bins_follow_the_vpc_rule() -> None:
    rng = np.random.default_rng(0)
    assert compute_linkability(rng.normal(size=250), rng.normal(size=40)).n_bins == 25
    assert compute_linkability(rng.normal(size=5000), rng.normal(size=40)).n_bins == 100


def test_separated_distributions_are_almost_fully_linkable() -> None:
    rng = np.random.default_rng(1)
    result = compute_linkability(rng.normal(10.0, 1.0, 5000), rng.normal(0.0, 1.0, 5000))
    assert result.d_sys > 0.95
    assert result.d_sys <= 1.0 + 1e-9


def test_identical_distributions_are_hardly_linkable() -> None:
    rng = np.random.default_rng(2)
    result = compute_linkability(rng.normal(size=100_000), rng.normal(size=100_000))
    assert result.d_sys < 0.02


def test_linkability_grows_with_separation() -> None:
    rng = np.random.default_rng(3)
    non = rng.normal(0.0, 1.0, 20_000)
    values = [compute_linkability(rng.normal(mu, 1.0, 20_000), non).d_sys for mu in (0.5, 1, 2)]
    assert values[0] < values[1] < values[2]


def test_all_scores_equal_give_zero() -> None:
    assert compute_linkability([1.0] * 30, [1.0] * 30).d_sys == 0.0


def test_invalid_inputs_raise_value_error() -> None:
    with pytest.raises(ValueError, match="needs at least 20"):
        compute_linkability([1.0] * 19, [0.0] * 30)
    with pytest.raises(ValueError, match="n_bins must be at least 2"):
        compute_linkability([1.0] * 30, [0.0] * 30, n_bins=1)
    with pytest.raises(ValueError, match="omega"):
        compute_linkability([1.0] * 30, [0.0] * 30, omega=0.0)
    with pytest.raises(ValueError, match="mated_scores contains NaN"):
        compute_linkability([np.nan] * 30, [0.0] * 30)
    with pytest.raises(ValueError, match="nonmated_scores is empty"):
        compute_linkability([1.0] * 30, [])
