"""ZEBRA: Zero Evidence Biometric Recognition Assessment (Nautsch et al., Interspeech 2020).

Follows the reference code (github.com/Voice-Privacy-Challenge/zebra, ``plo_plots.py`` and
``zebra.py``):

- **Expected (population) disclosure** D_ECE, in bits: the area between the default ECE curve
  (no evidence) and the ECE curve of the PAV-calibrated LLRs, integrated over the target prior
  pi in (0, 1): D_ECE = int_0^1 [ECE_default(pi) - ECE_PAV(pi)] d pi. Closed form (reference
  code): D_ECE = [Z(l_t) + Z(-l_n)] / ln 2 with Z(x) = 1/4 + 1/2 * mean((x - b) / b^2),
  b = e^x - 1, where l_t / l_n are the PAV LLRs (no Laplace smoothing) of target / non-target
  scores. 0 bits is perfect privacy; perfectly separated scores give 1 / (2 ln 2) = 0.721 bits.
- **Worst-case (individual) disclosure**: max |LLR| in log10 units (bans) over all scores,
  from PAV with Laplace smoothing (finite LLRs), and its categorical tag:
  0 (<= machine eps), A (<= 1), B (<= 2), C (<= 4), D (<= 5), E (<= 6), F (> 6).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from services.metrics._pav import merge_scores, pav_blocks
from services.metrics._validation import as_finite_1d
from services.metrics.calibration import LN2, _llr_of_blocks, pav_calibration

# Upper bounds (log10 LR) of the ZEBRA categories, after the ENFSI verbal scale; a value v falls
# in the first category whose bound is >= v (lower bound exclusive).
ZEBRA_CATEGORY_UPPER_BOUNDS: tuple[tuple[str, float], ...] = (
    ("0", float(np.finfo(float).eps)),
    ("A", 1.0),
    ("B", 2.0),
    ("C", 4.0),
    ("D", 5.0),
    ("E", 6.0),
    ("F", float("inf")),
)


@dataclass(frozen=True)
class ZebraResult:
    """ZEBRA summary: expected disclosure (bits), worst case (log10 LR) and its tag."""

    expected_disclosure_bits: float
    worst_case_log10_lr: float
    category: str


def zebra_category(worst_case_log10_lr: float) -> str:
    """Categorical tag (0, A-F) of a worst-case disclosure given as max |log10 LR|."""
    if not np.isfinite(worst_case_log10_lr) or worst_case_log10_lr < 0:
        raise ValueError(f"worst_case_log10_lr must be finite and >= 0, got {worst_case_log10_lr}")
    for tag, upper in ZEBRA_CATEGORY_UPPER_BOUNDS:
        if worst_case_log10_lr <= upper:
            return tag
    raise AssertionError("unreachable: the last bound is infinite")


def _z_terms(llr: NDArray[np.float64]) -> NDArray[np.float64]:
    """Per-score term (x - b) / b^2, b = e^x - 1, of the ZEBRA closed form, with its limits."""
    terms = np.zeros_like(llr)  # +-inf: 0, as in the reference code
    small = np.abs(llr) <= 1e-6
    terms[small] = -0.5  # limit at x -> 0
    regular = np.isfinite(llr) & ~small & (llr < 700.0)  # beyond 700 the term is below 1e-300
    x = llr[regular]
    b = np.expm1(x)
    terms[regular] = (x - b) / b**2
    return terms


def compute_zebra(target_scores: ArrayLike, nontarget_scores: ArrayLike) -> ZebraResult:
    """ZEBRA expected disclosure D_ECE (bits) and worst-case disclosure (log10 LR, category).

    Args:
        target_scores: same-speaker (mated) scores, 1-D finite.
        nontarget_scores: different-speaker scores, 1-D finite.

    Target / non-target ties are pooled by PAV in both parts (the reference code pools them for
    D_ECE but, with Laplace smoothing, orders non-targets first among ties); without ties the
    results are those of the reference code, whose tiny monotonicity offsets (< 1e-6) we omit.
    """
    tar = as_finite_1d(target_scores, "target_scores")
    non = as_finite_1d(nontarget_scores, "nontarget_scores")
    blocks = pav_blocks(merge_scores(tar, non))
    llr = _llr_of_blocks(blocks.targets, blocks.nontargets, tar.size, non.size)
    z_tar = 0.25 + 0.5 * float(np.sum(blocks.targets * _z_terms(llr))) / tar.size
    z_non = 0.25 + 0.5 * float(np.sum(blocks.nontargets * _z_terms(-llr))) / non.size
    expected = (z_tar + z_non) / LN2

    laplace = pav_calibration(tar, non, laplace=True)
    real = (laplace.targets + laplace.nontargets) > 0
    worst = float(np.max(np.abs(laplace.llr[real]))) / float(np.log(10.0))
    return ZebraResult(expected, worst, zebra_category(worst))
