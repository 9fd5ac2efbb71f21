"""Pool-adjacent-violators (PAV) core shared by the ROCCH EER, min Cllr and ZEBRA.

Scores are merged into one ascending sequence in which, among equal scores, targets come first
(the order of BOSARIS ``rocch``: a stable sort of ``[targets, non-targets]``). That order makes
every tie between a target and a non-target a PAV violation, so PAV pools the whole tie group:
the tie becomes one diagonal ROC step that favours neither side.

Speed: the merged sequence is never built. Target positions in it come from one
``searchsorted``; PAV then runs in compiled code (``scipy.optimize.isotonic_regression``) on
*units*, maximal runs that PAV pools anyway (a run of one label, extended through a tie group
whose labels only decrease, 1..1 0..0). The compiled result is checked and, if needed,
re-pooled with exact integer arithmetic, so the blocks are those of an exact PAV: levels
strictly increase and equal levels are merged (the ``>=`` pooling rule of BOSARIS ``pavx``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import isotonic_regression


@dataclass(frozen=True)
class MergedScores:
    """Both score sets sorted, and where each target sits in the merged ascending sequence.

    In the merged sequence targets come first among equal scores. Element ``e`` of that
    sequence is a target iff ``e`` is in ``target_position``.
    """

    sorted_tar: NDArray[np.float64]
    sorted_non: NDArray[np.float64]
    target_position: NDArray[np.int64]

    @property
    def n_target(self) -> int:
        return int(self.sorted_tar.size)

    @property
    def n_nontarget(self) -> int:
        return int(self.sorted_non.size)

    @property
    def size(self) -> int:
        return self.n_target + self.n_nontarget

    def values_at(self, elements: NDArray[np.int64]) -> NDArray[np.float64]:
        """Scores at the given indices of the merged sequence."""
        k = np.searchsorted(self.target_position, elements, side="left")
        k_clipped = np.minimum(k, self.n_target - 1)
        is_target = (k < self.n_target) & (self.target_position[k_clipped] == elements)
        non_index = np.clip(elements - k, 0, self.n_nontarget - 1)
        return np.where(is_target, self.sorted_tar[k_clipped], self.sorted_non[non_index])

    def nontarget_position(self) -> NDArray[np.int64]:
        """Index in the merged sequence of each sorted non-target."""
        return np.arange(self.n_nontarget) + np.searchsorted(
            self.sorted_tar, self.sorted_non, side="right"
        )

    def materialize(self) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """The merged sequence itself: values and target flags (O(n) memory)."""
        values = np.empty(self.size, dtype=np.float64)
        is_target = np.zeros(self.size, dtype=bool)
        values[self.target_position] = self.sorted_tar
        is_target[self.target_position] = True
        values[~is_target] = self.sorted_non
        return values, is_target


@dataclass(frozen=True)
class ScoreUnits:
    """Consecutive pieces of the merged sequence that PAV never splits."""

    element_start: NDArray[np.int64]  # first merged index of each unit
    targets: NDArray[np.int64]
    nontargets: NDArray[np.int64]


@dataclass(frozen=True)
class PavBlocks:
    """Exact PAV solution over a merged score sequence.

    ``targets[b]`` and ``nontargets[b]`` count the scores in block ``b`` (ascending score);
    ``element_start[b]`` is the merged index where block ``b`` starts, with a final entry equal
    to the number of scores.
    """

    targets: NDArray[np.int64]
    nontargets: NDArray[np.int64]
    element_start: NDArray[np.int64]


def _sorted(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x`` ascending; input that is already sorted is returned as is.

    Callers that hold sorted scores (`services.scoring.scorer.eer_report` merges per-gender
    sorted runs into the pooled set) skip the O(n log n) sort; the check is one O(n) pass.
    """
    if x.size < 2 or bool(np.all(x[1:] >= x[:-1])):
        return x
    return np.sort(x)


def merge_scores(
    target_scores: NDArray[np.float64], nontarget_scores: NDArray[np.float64]
) -> MergedScores:
    """Sort both sets and place the targets in the merged order (targets first among ties)."""
    sorted_tar = _sorted(target_scores)
    sorted_non = _sorted(nontarget_scores)
    # A target lands after every non-target strictly below it: targets first among ties.
    position = np.arange(sorted_tar.size) + np.searchsorted(sorted_non, sorted_tar, side="left")
    return MergedScores(sorted_tar, sorted_non, position.astype(np.int64, copy=False))


def score_units(merged: MergedScores) -> ScoreUnits:
    """Split the merged sequence into units from the runs of consecutive target positions."""
    position = merged.target_position
    n_tar, n_non, n = merged.n_target, merged.n_nontarget, merged.size
    run_first = np.flatnonzero(np.concatenate(([True], position[1:] != position[:-1] + 1)))
    run_last = np.append(run_first[1:], n_tar) - 1
    run_start = position[run_first]
    run_end = position[run_last] + 1  # exclusive; the element there (if any) is a non-target
    has_next = run_end < n
    next_non = np.clip(run_end - (run_last + 1), 0, n_non - 1)
    # A non-target tied with the run's last target belongs to the same unit (pooled tie).
    cut_after = has_next & (merged.sorted_non[next_non] != merged.sorted_tar[run_last])
    n_runs = run_first.size
    starts = np.empty(2 * n_runs, dtype=np.int64)
    counts = np.zeros(2 * n_runs, dtype=np.int64)
    keep = np.ones(2 * n_runs, dtype=bool)
    starts[0::2] = run_start
    starts[1::2] = run_end
    counts[0::2] = run_last - run_first + 1
    keep[1::2] = cut_after
    unit_start, unit_t = starts[keep], counts[keep]
    if run_start[0] > 0:  # the lowest scores are non-targets
        unit_start = np.concatenate(([0], unit_start))
        unit_t = np.concatenate(([0], unit_t))
    unit_size = np.diff(np.append(unit_start, n))
    return ScoreUnits(unit_start, unit_t, unit_size - unit_t)


def _exact_repool(
    targets: NDArray[np.int64], weights: NDArray[np.int64], starts: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Stack PAV with exact integer level comparisons over (few) candidate blocks."""
    stack_t: list[int] = []
    stack_w: list[int] = []
    stack_s: list[int] = []
    for t, w, s in zip(targets.tolist(), weights.tolist(), starts.tolist(), strict=True):
        # Pool while the previous level t'/w' >= t/w (BOSARIS pavx pools equal levels too).
        while stack_t and stack_t[-1] * w >= t * stack_w[-1]:
            t += stack_t.pop()
            w += stack_w.pop()
            s = stack_s.pop()
        stack_t.append(t)
        stack_w.append(w)
        stack_s.append(s)
    return (
        np.asarray(stack_t, dtype=np.int64),
        np.asarray(stack_w, dtype=np.int64),
        np.asarray(stack_s, dtype=np.int64),
    )


def pav_counts(
    unit_targets: NDArray[np.int64], unit_nontargets: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Exact PAV over weighted units given by integer target / non-target counts.

    Units must be in ascending score order and each hold at least one score. Returns per-block
    target counts, non-target counts, and the unit index where each block starts (with a final
    entry equal to the number of units).
    """
    weights = unit_targets + unit_nontargets
    n_units = weights.size
    if n_units > 1:
        fitted = isotonic_regression(
            unit_targets / weights, weights=weights.astype(np.float64), increasing=True
        )
        starts = np.asarray(fitted.blocks[:-1], dtype=np.int64)
    else:
        starts = np.zeros(1, dtype=np.int64)
    cum_t = np.concatenate(([0], np.cumsum(unit_targets)))
    cum_w = np.concatenate(([0], np.cumsum(weights)))
    ends = np.append(starts[1:], n_units)
    block_t = cum_t[ends] - cum_t[starts]
    block_w = cum_w[ends] - cum_w[starts]
    # Exact check of the floating-point result: levels must strictly increase.
    if block_t.size > 1 and np.any(block_t[:-1] * block_w[1:] >= block_t[1:] * block_w[:-1]):
        block_t, block_w, starts = _exact_repool(block_t, block_w, starts)
    return block_t, block_w - block_t, np.append(starts, n_units)


def pav_blocks(merged: MergedScores) -> PavBlocks:
    """Exact PAV blocks of a merged score sequence (targets = 1, non-targets = 0)."""
    units = score_units(merged)
    block_t, block_n, block_unit_start = pav_counts(units.targets, units.nontargets)
    element_start = np.append(units.element_start, merged.size)[block_unit_start]
    return PavBlocks(block_t, block_n, element_start)
