"""Fast PAV-based metrics against plain, loop-based reference implementations (BOSARIS style)."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.metrics import (
    compute_eer,
    compute_interpolated_eer,
    compute_min_cllr,
    compute_rocch,
    compute_zebra,
    pav_llrs,
)


def reference_pav(labels: list[int]) -> list[list[int]]:
    """Textbook stack PAV on 0/1 labels: blocks [targets, count], pooling while level >=."""
    blocks: list[list[int]] = []
    for label in labels:
        blocks.append([label, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            targets, count = blocks.pop()
            blocks[-1][0] += targets
            blocks[-1][1] += count
    return blocks


def reference_order(tar: list[float], non: list[float]) -> list[int]:
    """Labels in BOSARIS rocch order: stable sort of [targets, non-targets] by score."""
    scores = list(tar) + list(non)
    labels = [1] * len(tar) + [0] * len(non)
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    return [labels[i] for i in order]


def reference_rocch(tar: list[float], non: list[float]) -> tuple[list[float], list[float]]:
    blocks = reference_pav(reference_order(tar, non))
    pmiss, pfa = [0.0], [1.0]
    miss, fa = 0, len(non)
    for targets, count in blocks:
        miss += targets
        fa -= count - targets
        pmiss.append(miss / len(tar))
        pfa.append(fa / len(non))
    return pmiss, pfa


def reference_rocch2eer(pmiss: list[float], pfa: list[float]) -> float:
    """BOSARIS rocch2eer, segment by segment with a linear solve."""
    eer = 0.0
    for i in range(len(pfa) - 1):
        xy = np.array([[pfa[i], pmiss[i]], [pfa[i + 1], pmiss[i + 1]]])
        dd = xy[0] - xy[1]
        if np.min(np.abs(dd)) == 0:
            candidate = 0.0
        else:
            seg = np.linalg.solve(xy, np.ones(2))
            candidate = 1.0 / seg.sum()
        eer = max(eer, candidate)
    return eer


def reference_block_llrs(
    tar: list[float], non: list[float], laplace: bool
) -> tuple[list[float], list[float]]:
    """Per-score PAV LLRs (sorted targets, sorted non-targets) via the reference PAV."""
    labels = reference_order(tar, non)
    if laplace:
        labels = [1, 0, *labels, 1, 0]
    llrs: list[float] = []
    for targets, count in reference_pav(labels):
        p = targets / count
        llr = math.inf if p == 1 else -math.inf if p == 0 else math.log(p / (1 - p))
        llrs.extend([llr - math.log(len(tar) / len(non))] * count)
    if laplace:
        llrs = llrs[2:-2]
        labels = labels[2:-2]
    tar_llr = [v for v, lab in zip(llrs, labels, strict=True) if lab == 1]
    non_llr = [v for v, lab in zip(llrs, labels, strict=True) if lab == 0]
    return tar_llr, non_llr


def reference_cllr(tar_llr: list[float], non_llr: list[float]) -> float:
    def cost(x: float) -> float:
        return 0.0 if x == math.inf else math.log2(1.0 + math.exp(-x))

    c_tar = sum(cost(v) for v in tar_llr) / len(tar_llr)
    c_non = sum(cost(-v) for v in non_llr) / len(non_llr)
    return (c_tar + c_non) / 2.0


def reference_interpolated_eer(tar: list[float], non: list[float]) -> float:
    """Walk the raw ROC (accept >= v for each distinct v, then accept none) to the diagonal."""
    points = [
        (sum(t < v for t in tar) / len(tar), sum(n >= v for n in non) / len(non))
        for v in sorted(set(tar) | set(non))
    ] + [(1.0, 0.0)]
    for (pm0, pf0), (pm1, pf1) in pairwise(points):
        if pm1 - pf1 >= 0:
            if pm1 - pf1 == 0:
                return pm1
            s = (pf0 - pm0) / ((pm1 - pf1) - (pm0 - pf0))
            return pm0 + s * (pm1 - pm0)
    raise AssertionError("the raw ROC always reaches the diagonal")


scores_with_ties = st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=25)
scores_continuous = st.lists(
    st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False),
    min_size=1,
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(tar=scores_with_ties, non=scores_with_ties)
def test_fast_eer_equals_reference_on_tied_integers(tar: list[int], non: list[int]) -> None:
    expected = reference_rocch2eer(*reference_rocch(tar, non))
    assert compute_eer(tar, non).eer_percent == pytest.approx(100 * expected, abs=1e-10)


@settings(max_examples=150, deadline=None)
@given(tar=scores_continuous, non=scores_continuous)
def test_fast_eer_equals_reference_on_floats(tar: list[float], non: list[float]) -> None:
    expected = reference_rocch2eer(*reference_rocch(tar, non))
    assert compute_eer(tar, non).eer_percent == pytest.approx(100 * expected, abs=1e-10)


@settings(max_examples=200, deadline=None)
@given(tar=scores_with_ties, non=scores_with_ties)
def test_interpolated_eer_equals_reference_and_bounds_the_hull_eer(
    tar: list[int], non: list[int]
) -> None:
    interpolated = compute_interpolated_eer(tar, non).eer_percent
    assert interpolated == pytest.approx(100 * reference_interpolated_eer(tar, non), abs=1e-10)
    assert compute_eer(tar, non).eer_percent <= interpolated + 1e-10


@settings(max_examples=200, deadline=None)
@given(tar=scores_with_ties, non=scores_with_ties)
def test_hull_vertices_match_reference_after_removing_collinear_points(
    tar: list[int], non: list[int]
) -> None:
    ref_pmiss, ref_pfa = reference_rocch(tar, non)
    hull = compute_rocch(tar, non)
    # Every fast vertex is a reference vertex (the fast hull merges exactly collinear ones).
    reference_points = set(zip(np.round(ref_pmiss, 12), np.round(ref_pfa, 12), strict=True))
    fast_points = set(zip(np.round(hull.pmiss, 12), np.round(hull.pfa, 12), strict=True))
    assert fast_points <= reference_points
    assert np.all(np.diff(hull.pmiss) >= 0) and np.all(np.diff(hull.pfa) <= 0)
    assert np.all(np.diff(hull.thresholds) >= 0)


@settings(max_examples=200, deadline=None)
@given(tar=scores_with_ties, non=scores_with_ties)
def test_min_cllr_equals_reference(tar: list[int], non: list[int]) -> None:
    expected = reference_cllr(*reference_block_llrs(tar, non, laplace=False))
    assert compute_min_cllr(tar, non) == pytest.approx(expected, abs=1e-10)


@settings(max_examples=150, deadline=None)
@given(tar=scores_with_ties, non=scores_with_ties, laplace=st.booleans())
def test_pav_llrs_equal_reference(tar: list[int], non: list[int], laplace: bool) -> None:
    ref_tar, ref_non = reference_block_llrs(tar, non, laplace=laplace)
    fast_tar, fast_non = pav_llrs(tar, non, laplace=laplace)
    np.testing.assert_allclose(np.sort(fast_tar), ref_tar, atol=1e-10)
    np.testing.assert_allclose(np.sort(fast_non), ref_non, atol=1e-10)
    # Input order is kept: the LLR of a score does not depend on where it sits in the list.
    in_score_order = fast_tar[np.argsort(tar, kind="stable")]
    assert np.all(in_score_order[1:] >= in_score_order[:-1])


@settings(max_examples=100, deadline=None)
@given(tar=scores_with_ties, non=scores_with_ties)
def test_zebra_worst_case_equals_reference_laplace_llrs(tar: list[int], non: list[int]) -> None:
    ref_tar, ref_non = reference_block_llrs(tar, non, laplace=True)
    expected = max(abs(v) for v in ref_tar + ref_non) / math.log(10)
    assert compute_zebra(tar, non).worst_case_log10_lr == pytest.approx(expected, abs=1e-10)


def test_fast_eer_equals_reference_on_a_large_tied_sample() -> None:
    rng = np.random.default_rng(7)
    tar = rng.integers(0, 60, 3000) + 8
    non = rng.integers(0, 60, 5000)
    expected = reference_rocch2eer(*reference_rocch(tar.tolist(), non.tolist()))
    assert compute_eer(tar, non).eer_percent == pytest.approx(100 * expected, abs=1e-10)
