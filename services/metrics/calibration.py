"""PAV calibration and the log-likelihood-ratio cost (Cllr, min Cllr), as in BOSARIS / VPC.

LLRs are natural-log likelihood ratios, log p(score | target) / p(score | non-target). Costs
are reported in bits. A system that always outputs LLR 0 has Cllr = 1 bit; perfectly separated,
well calibrated LLRs give Cllr -> 0; Cllr above 1 means the LLRs are worse than saying nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import isotonic_regression
from scipy.special import logit

from services.metrics._pav import merge_scores, pav_blocks, pav_counts, score_units
from services.metrics._validation import as_finite_1d

LN2 = float(np.log(2.0))


@dataclass(frozen=True)
class PavCalibration:
    """PAV blocks of a score set in ascending score order and their LLRs.

    ``llr[b]`` is the natural-log LLR of every score in block ``b``; ``targets[b]`` and
    ``nontargets[b]`` count the real (not Laplace pseudo-) scores in the block.
    """

    llr: NDArray[np.float64]
    targets: NDArray[np.int64]
    nontargets: NDArray[np.int64]


def pav(values: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Pool-adjacent-violators: the non-decreasing fit of least weighted squares.

    Args:
        values: data in score order, e.g. 0/1 labels sorted by score (1-D, finite).
        weights: optional positive weights, same length.

    Returns:
        The fitted non-decreasing sequence; for 0/1 labels it is the PAV posterior
        P(target | score) under the empirical prior of the data.
    """
    y = as_finite_1d(values, "values")
    if weights is None:
        w = np.ones_like(y)
    else:
        w = as_finite_1d(weights, "weights")
        if w.size != y.size:
            raise ValueError(f"weights has length {w.size}, values has length {y.size}")
        if np.any(w <= 0):
            raise ValueError("weights must be positive")
    return np.asarray(isotonic_regression(y, weights=w, increasing=True).x, dtype=np.float64)


def _llr_of_blocks(
    block_t: NDArray[np.int64], block_n: NDArray[np.int64], n_target: int, n_nontarget: int
) -> NDArray[np.float64]:
    posterior = block_t / (block_t + block_n)
    with np.errstate(divide="ignore"):
        return np.asarray(logit(posterior), dtype=np.float64) - np.log(n_target / n_nontarget)


def pav_calibration(
    target_scores: ArrayLike, nontarget_scores: ArrayLike, *, laplace: bool = False
) -> PavCalibration:
    """Optimal (PAV) score-to-LLR map of the given scores, per PAV block.

    Target / non-target ties are pooled (one block). With ``laplace=True`` one pseudo target and
    one pseudo non-target are added below the lowest and above the highest score (BOSARIS /
    ZEBRA ``optimal_llr(laplace=True)``), which keeps every LLR finite. The prior log-odds
    removed is always log(n_target / n_nontarget) of the real scores, as in BOSARIS.
    """
    tar = as_finite_1d(target_scores, "target_scores")
    non = as_finite_1d(nontarget_scores, "nontarget_scores")
    merged = merge_scores(tar, non)
    units = score_units(merged)
    unit_t, unit_n = units.targets, units.nontargets
    if laplace:
        one = np.ones(1, dtype=np.int64)
        unit_t = np.concatenate((one, unit_t, one))
        unit_n = np.concatenate((one, unit_n, one))
    block_t, block_n, _ = pav_counts(unit_t, unit_n)
    llr = _llr_of_blocks(block_t, block_n, tar.size, non.size)
    if laplace:
        block_t = block_t.copy()
        block_n = block_n.copy()
        block_t[[0, -1]] -= 1
        block_n[[0, -1]] -= 1
    return PavCalibration(llr, block_t, block_n)


def pav_llrs(
    target_scores: ArrayLike, nontarget_scores: ArrayLike, *, laplace: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """PAV-calibrated natural-log LLR of every score, in the input order.

    Without Laplace smoothing, scores in a block of only non-targets get -inf and scores in a
    block of only targets +inf. See ``pav_calibration`` for ties and ``laplace``.
    """
    tar = as_finite_1d(target_scores, "target_scores")
    non = as_finite_1d(nontarget_scores, "nontarget_scores")
    merged = merge_scores(tar, non)
    if laplace:
        calibration = pav_calibration(tar, non, laplace=True)
        # Blocks without real scores (only pseudo-scores) own no merged elements.
        sizes = calibration.targets + calibration.nontargets
        llr, starts = calibration.llr[sizes > 0], np.cumsum(sizes[sizes > 0]) - sizes[sizes > 0]
    else:
        blocks = pav_blocks(merged)
        llr = _llr_of_blocks(blocks.targets, blocks.nontargets, tar.size, non.size)
        starts = blocks.element_start[:-1]
    tar_block = np.searchsorted(starts, merged.target_position, side="right") - 1
    non_block = np.searchsorted(starts, merged.nontarget_position(), side="right") - 1
    tar_llr = np.empty(tar.size)
    non_llr = np.empty(non.size)
    tar_llr[np.argsort(tar, kind="stable")] = llr[tar_block]
    non_llr[np.argsort(non, kind="stable")] = llr[non_block]
    return tar_llr, non_llr


def _cllr_terms(target_llrs: NDArray[np.float64], nontarget_llrs: NDArray[np.float64]) -> float:
    # -log2 sigmoid(x) = log2(1 + exp(-x)); logaddexp stays finite and exact for large |x|.
    c_tar = np.logaddexp(0.0, -target_llrs).mean() / LN2
    c_non = np.logaddexp(0.0, nontarget_llrs).mean() / LN2
    return float((c_tar + c_non) / 2.0)


def compute_cllr(target_llrs: ArrayLike, nontarget_llrs: ArrayLike) -> float:
    """Log-likelihood-ratio cost in bits (Brummer and du Preez 2006; BOSARIS ``cllr``).

    Cllr = 1/2 [mean_t log2(1 + e^-l_t) + mean_n log2(1 + e^l_n)] with natural-log LLRs l.

    LLRs of +-inf are allowed (e.g. PAV LLRs): a target at +inf or a non-target at -inf costs
    0, a target at -inf or a non-target at +inf makes Cllr infinite.

    Raises:
        ValueError: an argument is empty, not 1-D, or holds NaN.
    """
    tar = as_finite_1d(target_llrs, "target_llrs", allow_inf=True)
    non = as_finite_1d(nontarget_llrs, "nontarget_llrs", allow_inf=True)
    return _cllr_terms(tar, non)


def min_cllr_from_blocks(
    block_t: NDArray[np.int64], block_n: NDArray[np.int64], n_target: int, n_nontarget: int
) -> float:
    """Cllr of the PAV LLRs, summed per block (every score in a block has the same LLR)."""
    llr = _llr_of_blocks(block_t, block_n, n_target, n_nontarget)
    # 0 * inf terms: a block with no targets contributes nothing to the target term.
    tar_cost = np.where(block_t > 0, np.logaddexp(0.0, -llr), 0.0)
    non_cost = np.where(block_n > 0, np.logaddexp(0.0, llr), 0.0)
    c_tar = float(np.sum(block_t * tar_cost)) / n_target / LN2
    c_non = float(np.sum(block_n * non_cost)) / n_nontarget / LN2
    return (c_tar + c_non) / 2.0


def compute_min_cllr(target_scores: ArrayLike, nontarget_scores: ArrayLike) -> float:
    """Minimum Cllr in bits: the Cllr after the optimal monotonic (PAV) calibration.

    Target / non-target ties are pooled (see docs/metrics.md). ``min Cllr <= Cllr`` for any
    LLRs, with equality when the LLRs already are the PAV-calibrated ones.
    """
    tar = as_finite_1d(target_scores, "target_scores")
    non = as_finite_1d(nontarget_scores, "nontarget_scores")
    blocks = pav_blocks(merge_scores(tar, non))
    return min_cllr_from_blocks(blocks.targets, blocks.nontargets, tar.size, non.size)
