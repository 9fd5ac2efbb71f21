"""The privacy-utility Pareto front against the definition (brute force over all pairs)."""

from __future__ import annotations

import numpy as np
import pytest

from services.utility.pareto import pareto_front


def _dominated_brute_force(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    better_or_equal = (p[None, :] >= p[:, None]) & (c[None, :] <= c[:, None])
    strictly = (p[None, :] > p[:, None]) | (c[None, :] < c[:, None])
    return np.any(better_or_equal & strictly, axis=1)


@pytest.mark.parametrize("n", [1, 2, 7, 60])
def test_front_is_the_set_of_undominated_points(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(100):
        # Small integer grids make ties (equal cost, equal privacy) common.
        p = rng.integers(0, 5, n).astype(float)
        c = rng.integers(0, 5, n).astype(float)
        assert np.array_equal(pareto_front(p, c), ~_dominated_brute_force(p, c))


def test_hand_case_and_missing_values() -> None:
    # (privacy EER %, WER increase points)
    privacy = [40.0, 30.0, 45.0, 10.0, np.nan]
    cost = [5.0, 1.0, 20.0, 0.5, 0.0]
    assert pareto_front(privacy, cost).tolist() == [True, True, True, True, False]
    assert pareto_front([10.0, 20.0], [3.0, 3.0]).tolist() == [False, True]
    with pytest.raises(ValueError, match="shapes"):
        pareto_front([1.0, 2.0], [1.0])
