"""Global linkability D_sys (Gomez-Barrero et al., IEEE TIFS 2017), as computed by VoicePrivacy.

Follows the VoicePrivacy Challenge toolkit (``linkability`` from the anonymization_metrics
code of M. Maouche): normalized histograms of mated and non-mated scores on n_bins equal bins
over the common score range, n_bins = min(n_mated // 10, 100) by default; per bin
LR = p(s | mated) / p(s | non-mated), local D(s) = 2 omega LR / (1 + omega LR) - 1 where
omega LR > 1 and 0 elsewhere, D(s) = 1 where only mated scores fall; then
D_sys = trapezoid(D(s) p(s | mated)) over the bin centres. D_sys lies in [0, 1]; 0 means mated
and non-mated scores cannot be told apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.metrics._validation import as_finite_1d


@dataclass(frozen=True)
class LinkabilityResult:
    """Global linkability and its per-bin ingredients.

    ``local_linkability[i]`` is D(s) in bin i, ``bin_centers`` / ``bin_edges`` are scores.
    """

    d_sys: float
    local_linkability: NDArray[np.float64]
    bin_centers: NDArray[np.float64]
    bin_edges: NDArray[np.float64]
    n_bins: int
    omega: float


def compute_linkability(
    mated_scores: ArrayLike,
    nonmated_scores: ArrayLike,
    *,
    omega: float = 1.0,
    n_bins: int | None = None,
) -> LinkabilityResult:
    """Global linkability D_sys in [0, 1] (VoicePrivacy definition).

    Args:
        mated_scores: scores of same-speaker pairs (1-D, finite).
        nonmated_scores: scores of different-speaker pairs (1-D, finite).
        omega: prior ratio P(mated) / P(non-mated); VoicePrivacy uses 1.
        n_bins: histogram bins; default min(n_mated // 10, 100), which needs >= 20 mated scores.

    Edge case: when every score is equal the two distributions are identical and D_sys = 0.

    Raises:
        ValueError: invalid scores, omega <= 0, or fewer than 2 bins.
    """
    mated = as_finite_1d(mated_scores, "mated_scores")
    nonmated = as_finite_1d(nonmated_scores, "nonmated_scores")
    if not (np.isfinite(omega) and omega > 0):
        raise ValueError(f"omega must be a positive number, got {omega}")
    if n_bins is None:
        n_bins = min(mated.size // 10, 100)
        if n_bins < 2:
            raise ValueError(
                f"mated_scores has {mated.size} scores; the default binning (n_mated // 10 bins) "
                "needs at least 20, or pass n_bins >= 2"
            )
    elif n_bins < 2:
        raise ValueError(f"n_bins must be at least 2, got {n_bins}")
    low = min(float(mated.min()), float(nonmated.min()))
    high = max(float(mated.max()), float(nonmated.max()))
    if low == high:
        edges = np.full(n_bins + 1, low)
        centers = np.full(n_bins, low)
        return LinkabilityResult(0.0, np.zeros(n_bins), centers, edges, n_bins, float(omega))
    edges = np.linspace(low, high, num=n_bins + 1, endpoint=True)
    centers = (edges[1:] + edges[:-1]) / 2.0
    y_mated = np.histogram(mated, bins=edges, density=True)[0]
    y_nonmated = np.histogram(nonmated, bins=edges, density=True)[0]
    ratio = np.divide(y_mated, y_nonmated, out=np.ones_like(y_mated), where=y_nonmated != 0)
    local = 2.0 * (omega * ratio / (1.0 + omega * ratio)) - 1.0
    local[omega * ratio <= 1.0] = 0.0
    local[(y_nonmated == 0) & (y_mated != 0)] = 1.0
    d_sys = float(np.trapezoid(y=local * y_mated, x=centers))
    return LinkabilityResult(d_sys, local, centers, edges, n_bins, float(omega))
