"""The privacy-utility Pareto front of a protocol's submissions (the leaderboard's scatter plot)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def pareto_front(privacy: ArrayLike, cost: ArrayLike) -> NDArray[np.bool_]:
    """Which points no other point dominates, for ``privacy`` higher-is-better (e.g. EER, %) and
    ``cost`` lower-is-better (e.g. WER increase, points).

    A point is dominated when another has privacy >= and cost <= with at least one strict.
    Sorting by cost (then privacy, best first) makes one pass enough: a point is on the front
    when its privacy beats every point of lower cost before it. Equal points are all kept.
    O(n log n); NaN values are never on the front.
    """
    p = np.asarray(privacy, dtype=np.float64)
    c = np.asarray(cost, dtype=np.float64)
    if p.shape != c.shape or p.ndim != 1:
        raise ValueError(f"privacy {p.shape} and cost {c.shape} must be equal 1-d shapes")
    front = np.zeros(p.shape, dtype=bool)
    valid = np.flatnonzero(np.isfinite(p) & np.isfinite(c))
    if valid.size == 0:
        return front
    order = valid[np.lexsort((-p[valid], c[valid]))]
    ps, cs = p[order], c[order]
    # Within a cost group (privacy best first) the group's best sits at its first index; it is on
    # the front when it beats every strictly cheaper point (the running max before the group).
    first = np.searchsorted(cs, cs, side="left")
    cheaper_best = np.where(first > 0, np.maximum.accumulate(ps)[np.maximum(first - 1, 0)], -np.inf)
    keep = (ps == ps[first]) & (ps[first] > cheaper_best)
    front[order[keep]] = True
    return front
