"""Detection rate at a low false-alarm rate (the attacker's hit rate at a strict threshold).

``detection_rate_at_far(tar, non, far)``: with N non-target scores, at most m = floor(far x N)
false alarms are allowed. The threshold is the (m + 1)-th highest non-target score v, and a trial
is accepted when its score is STRICTLY above v, so the realised false-alarm rate
#(non > v) / N is <= m / N <= far (lower when non-targets tie at v; no interpolation, no
randomization). The detection rate is #(targets > v) / N_tar in percent (= 100 - P_miss).

When N < ceil(1 / far), no false alarm at all is allowed and the empirical rate says nothing
about the far tail: the value is ``None`` with a reason (e.g. FAR 0.1 % needs >= 1000 non-target
scores), never a number from too few scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from services.metrics._validation import as_finite_1d


@dataclass(frozen=True)
class DetectionRate:
    """Detection rate (%) at the false-alarm rate ``far`` (a fraction), or None with a reason."""

    far: float
    detection_percent: float | None
    threshold: float | None
    """Accept when score > threshold (strictly)."""
    realised_far: float | None
    n_nontarget: int
    reason: str | None = None


def min_nontargets(far: float) -> int:
    """Fewest non-target scores for which one false alarm is allowed at ``far``."""
    return math.ceil(1.0 / far - 1e-9)


def detection_rate_at_far(
    target_scores: ArrayLike, nontarget_scores: ArrayLike, far: float
) -> DetectionRate:
    """Detection rate at false-alarm rate ``far`` in (0, 1) (see the module docstring)."""
    if not 0.0 < far < 1.0:
        raise ValueError(f"far must be a fraction in (0, 1), got {far}")
    tar = as_finite_1d(target_scores, "target_scores")
    non = as_finite_1d(nontarget_scores, "nontarget_scores")
    n = non.size
    needed = min_nontargets(far)
    if n < needed:
        return DetectionRate(
            far,
            None,
            None,
            None,
            n,
            f"FAR {100 * far:g} % needs at least {needed} non-target scores, got {n}",
        )
    allowed = math.floor(far * n + 1e-9)
    threshold = float(np.partition(non, n - 1 - allowed)[n - 1 - allowed])
    return DetectionRate(
        far=far,
        detection_percent=100.0 * float(np.count_nonzero(tar > threshold)) / tar.size,
        threshold=threshold,
        realised_far=float(np.count_nonzero(non > threshold)) / n,
        n_nontarget=n,
    )
