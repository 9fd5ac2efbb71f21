"""Equal error rate from the ROC convex hull (BOSARIS / pyllr ``rocch`` + ``rocch2eer``).

Conventions (see docs/metrics.md):

- Higher scores support "same speaker" (target). A decision accepts a trial when its score
  reaches the threshold.
- P_miss is the fraction of target scores rejected, P_fa the fraction of non-target scores
  accepted; both are probabilities in [0, 1], the EER is reported in percent.
- Ties between a target and a non-target score form one diagonal ROC step (PAV pools the tie
  group), favouring neither side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri

from services.metrics._pav import MergedScores, PavBlocks, merge_scores, pav_blocks
from services.metrics._validation import as_finite_1d


@dataclass(frozen=True)
class EERResult:
    """Equal error rate in percent and the score threshold at which it is reached."""

    eer_percent: float
    threshold: float


@dataclass(frozen=True)
class ROCConvexHull:
    """Vertices of the ROC convex hull, from (P_fa=1, P_miss=0) to (P_fa=0, P_miss=1).

    ``thresholds[i]`` is a score threshold realising vertex ``i`` (accept when score >=
    threshold): the lowest score for vertex 0, the highest score for the last vertex, and the
    midpoint between two adjacent PAV blocks otherwise.
    """

    pmiss: NDArray[np.float64]
    pfa: NDArray[np.float64]
    thresholds: NDArray[np.float64]


@dataclass(frozen=True)
class DETCurve:
    """Points of a DET plot: probabilities and their probit (inverse normal CDF) transforms.

    Probabilities are clipped to [p_min, 1 - p_min] before the probit, with
    p_min = 1 / (2 * max(n_target, n_nontarget)), so that 0 and 1 stay finite on the plot.
    """

    pfa: NDArray[np.float64]
    pmiss: NDArray[np.float64]
    probit_pfa: NDArray[np.float64]
    probit_pmiss: NDArray[np.float64]
    convex_hull: bool


def _checked_scores(
    target_scores: ArrayLike, nontarget_scores: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    return (
        as_finite_1d(target_scores, "target_scores"),
        as_finite_1d(nontarget_scores, "nontarget_scores"),
    )


def rocch_vertices(
    block_targets: NDArray[np.int64],
    block_nontargets: NDArray[np.int64],
    n_target: int,
    n_nontarget: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(P_miss, P_fa) at the PAV block boundaries: vertex i rejects blocks 0..i-1."""
    cum_t = np.concatenate(([0], np.cumsum(block_targets)))
    cum_n = np.concatenate(([0], np.cumsum(block_nontargets)))
    pmiss = cum_t / n_target
    pfa = (n_nontarget - cum_n) / n_nontarget
    return pmiss, pfa


def _vertex_thresholds(merged: MergedScores, blocks: PavBlocks) -> NDArray[np.float64]:
    starts = blocks.element_start
    low = merged.values_at(starts[:-1])
    high = merged.values_at(starts[1:] - 1)
    return np.concatenate(([low[0]], (high[:-1] + low[1:]) / 2.0, [high[-1]]))


def rocch_eer_from_vertices(
    pmiss: NDArray[np.float64], pfa: NDArray[np.float64]
) -> tuple[float, int, float]:
    """BOSARIS ``rocch2eer`` over hull vertices, vectorized.

    Every segment that is neither horizontal nor vertical proposes the point where its line
    meets P_miss = P_fa; the EER is the largest proposal (or 0). Returns the EER as a
    probability, the index ``k`` of the segment (or vertex) where it lies and the fraction
    ``s`` in [0, 1] along segment k -> k + 1.
    """
    x1, x2 = pfa[:-1], pfa[1:]
    y1, y2 = pmiss[:-1], pmiss[1:]
    dx, dy = x2 - x1, y2 - y1
    valid = (dx != 0) & (dy != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        proposal = np.where(valid, (x2 * y1 - x1 * y2) / (dx - dy), 0.0)
    if proposal.size and proposal.max() > 0.0:
        k = int(np.argmax(proposal))
        eer = float(proposal[k])
        s = float(np.clip((eer - y1[k]) / dy[k], 0.0, 1.0))
        return eer, k, s
    # Only axis-parallel segments reach the diagonal: the hull passes through (0, 0).
    at_origin = np.flatnonzero((pmiss == 0.0) & (pfa == 0.0))
    return 0.0, int(at_origin[0]) if at_origin.size else 0, 0.0


def _interpolate(values: NDArray[np.float64], k: int, s: float) -> float:
    if s == 0.0 or k + 1 >= values.size:
        return float(values[k])
    return float(values[k] + s * (values[k + 1] - values[k]))


def compute_rocch(target_scores: ArrayLike, nontarget_scores: ArrayLike) -> ROCConvexHull:
    """ROC convex hull vertices (PAV with target / non-target ties pooled)."""
    tar, non = _checked_scores(target_scores, nontarget_scores)
    merged = merge_scores(tar, non)
    blocks = pav_blocks(merged)
    pmiss, pfa = rocch_vertices(blocks.targets, blocks.nontargets, tar.size, non.size)
    return ROCConvexHull(pmiss, pfa, _vertex_thresholds(merged, blocks))


def compute_eer(target_scores: ArrayLike, nontarget_scores: ArrayLike) -> EERResult:
    """ROCCH equal error rate, exactly as BOSARIS / pyllr ``rocch`` + ``rocch2eer``.

    Args:
        target_scores: scores of same-speaker trials (1-D, finite; higher = more similar).
        nontarget_scores: scores of different-speaker trials (1-D, finite).

    Returns:
        ``EERResult(eer_percent, threshold)``. ``eer_percent`` is in percent (0..100). The
        threshold is a score (accept when score >= threshold): on the hull segment that holds
        the EER it is linearly interpolated between the segment's two vertex thresholds (see
        ``ROCConvexHull``); a point inside a segment is, strictly, reached only by randomising
        between those two thresholds, so the value is a representative, not an exact operating
        point. It is invariant (up to that interpolation) under increasing score maps.

    Raises:
        ValueError: an argument is empty, not 1-D, or holds NaN / infinite values.
    """
    hull = compute_rocch(target_scores, nontarget_scores)
    eer, k, s = rocch_eer_from_vertices(hull.pmiss, hull.pfa)
    return EERResult(eer_percent=100.0 * eer, threshold=_interpolate(hull.thresholds, k, s))


def _raw_roc(
    merged: MergedScores,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """ROC points at every distinct score (a tie group is one step), with their thresholds."""
    values, is_target = merged.materialize()
    n = values.size
    boundary = np.concatenate(([0], np.flatnonzero(values[1:] != values[:-1]) + 1, [n]))
    cum_t = np.concatenate(([0], np.cumsum(is_target, dtype=np.int64)))[boundary]
    cum_n = boundary - cum_t
    pmiss = cum_t / merged.n_target
    pfa = (merged.n_nontarget - cum_n) / merged.n_nontarget
    inner = boundary[1:-1]
    thresholds = np.concatenate(
        ([values[0]], (values[inner - 1] + values[inner]) / 2.0, [values[-1]])
    )
    return pmiss, pfa, thresholds


def _operating_point(
    merged: MergedScores, threshold: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(P_miss, P_fa) when accepting scores >= threshold."""
    rejected_t = np.searchsorted(merged.sorted_tar, threshold, side="left")
    rejected_n = np.searchsorted(merged.sorted_non, threshold, side="left")
    return rejected_t / merged.n_target, 1.0 - rejected_n / merged.n_nontarget


def compute_interpolated_eer(target_scores: ArrayLike, nontarget_scores: ArrayLike) -> EERResult:
    """EER where the linearly interpolated raw ROC (P_fa, P_miss) crosses P_miss = P_fa.

    The raw ROC has one point per distinct score (ties are one diagonal step). Linear
    interpolation between two adjacent points is the same as interpolating the FAR and FRR
    step functions linearly between adjacent thresholds. The raw ROC lies on or above its
    convex hull, so this EER is never below ``compute_eer``'s ROCCH EER. Units and the
    threshold rule are those of ``compute_eer``.
    """
    tar, non = _checked_scores(target_scores, nontarget_scores)
    merged = merge_scores(tar, non)
    # Raw ROC point "accept >= v" for every distinct score v, plus "accept none" (v = +inf).
    # The gap P_miss - P_fa grows with v: find the first point at or past the diagonal.
    candidates = np.concatenate((merged.sorted_tar, merged.sorted_non))
    pmiss_c, pfa_c = _operating_point(merged, candidates)
    past = pmiss_c >= pfa_c
    v1 = float(candidates[past].min()) if past.any() else np.inf
    below = candidates[candidates < v1]
    v0 = float(below.max())  # exists: at the lowest score P_miss = 0 < P_fa = 1
    lowest = float(candidates.min())
    v_before_v0 = candidates[candidates < v0]

    def threshold_of(v: float, previous: float | None) -> float:
        if v == np.inf:
            return float(candidates.max())
        return v if previous is None else (previous + v) / 2.0

    (pm0, pm1), (pf0, pf1) = _operating_point(merged, np.array([v0, v1]))
    t0 = threshold_of(v0, float(v_before_v0.max()) if v0 > lowest else None)
    t1 = threshold_of(v1, v0)
    gap0, gap1 = pm0 - pf0, pm1 - pf1
    if gap1 == 0.0:
        return EERResult(100.0 * float(pm1), t1)
    s = float(-gap0 / (gap1 - gap0))
    return EERResult(100.0 * float(pm0 + s * (pm1 - pm0)), t0 + s * (t1 - t0))


def _probit(p: NDArray[np.float64], p_min: float) -> NDArray[np.float64]:
    return np.asarray(ndtri(np.clip(p, p_min, 1.0 - p_min)), dtype=np.float64)


def det_curve(
    target_scores: ArrayLike,
    nontarget_scores: ArrayLike,
    *,
    n_points: int = 200,
    convex_hull: bool = True,
) -> DETCurve:
    """DET curve points (P_fa, P_miss and their probits) for plotting.

    With ``convex_hull=True`` (default, as BOSARIS ``rocchdet``) the points follow the ROC
    convex hull: all its vertices, plus points spaced linearly along each hull segment so that
    about ``n_points`` points in total are returned (straight hull segments bend on probit
    axes). With ``convex_hull=False`` the points are the raw ROC, one per distinct score (ties
    are one step), thinned to at most ``n_points`` evenly spaced points (the end points kept).
    """
    if n_points < 2:
        raise ValueError(f"n_points must be at least 2, got {n_points}")
    tar, non = _checked_scores(target_scores, nontarget_scores)
    merged = merge_scores(tar, non)
    if convex_hull:
        blocks = pav_blocks(merged)
        pmiss, pfa = rocch_vertices(blocks.targets, blocks.nontargets, tar.size, non.size)
        n_segments = pmiss.size - 1
        extra = max(n_points - pmiss.size, 0)
        per_segment = extra // n_segments if n_segments else 0
        if per_segment > 0:
            s = np.arange(per_segment + 1) / (per_segment + 1)
            pmiss = np.append((pmiss[:-1, None] + s * np.diff(pmiss)[:, None]).ravel(), pmiss[-1])
            pfa = np.append((pfa[:-1, None] + s * np.diff(pfa)[:, None]).ravel(), pfa[-1])
    else:
        pmiss, pfa, _ = _raw_roc(merged)
        if pmiss.size > n_points:
            keep = np.unique(np.linspace(0, pmiss.size - 1, n_points).round().astype(np.int64))
            pmiss, pfa = pmiss[keep], pfa[keep]
    p_min = 1.0 / (2.0 * max(tar.size, non.size))
    return DETCurve(pfa, pmiss, _probit(pfa, p_min), _probit(pmiss, p_min), convex_hull)
