"""All-pairs scoring as blocked matrix products, and the speaker-level averaging shortcut.

Both back-ends score a pair (trial vector x, model vector y) with a quadratic form

    s(x, y) = x'Qx + y'Qy + 2 x'Py + c

(cosine of L2-normalized vectors: Q = 0, P = I/2, c = 0). Written as

    s(i, j) = left[i] . right[j] + left_offset[i] + right_offset[j]

with left = 2Px, left_offset = x'Qx + c, right = y, right_offset = y'Qy, a whole block of rows is
one matrix product of augmented operands [left, left_offset, 1] @ [right, 1, right_offset]'.
Rows are processed in blocks sized from a memory budget, so peak memory does not grow with the
number of pairs.

The mean of s over all pairs of two groups (a trial speaker's utterances, an enrollment speaker's
utterances) needs only per-group first moments of ``left``/``right`` and means of the offsets:

    mean_ij s(i, j) = mean_i left_offset[i] + mean_j right_offset[j]
                      + (mean_i left[i]) . (mean_j right[j])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DEFAULT_MEMORY_BUDGET_BYTES = 256 * 2**20
"""Default working-memory budget of one score block (bytes)."""

# A block lives next to its target mask and a compacted copy (reductions, splits).
_BLOCK_COPIES = 3


@dataclass(frozen=True)
class PairScoreTerms:
    """Operands of ``s(i, j) = left[i] . right[j] + left_offset[i] + right_offset[j]``.

    ``left`` (n, k) and ``right`` (m, k) are float64; offsets are (n,) / (m,) or ``None`` for 0.
    """

    left: np.ndarray
    right: np.ndarray
    left_offset: np.ndarray | None = None
    right_offset: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.left.ndim != 2 or self.right.ndim != 2 or self.left.shape[1] != self.right.shape[1]:
            raise ValueError(
                f"score operands must be (n, k) and (m, k), got {self.left.shape} and "
                f"{self.right.shape}"
            )
        for off, arr, name in (
            (self.left_offset, self.left, "left_offset"),
            (self.right_offset, self.right, "right_offset"),
        ):
            if off is not None and off.shape != (arr.shape[0],):
                raise ValueError(f"{name} has shape {off.shape}, expected ({arr.shape[0]},)")

    @property
    def n_rows(self) -> int:
        return int(self.left.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.right.shape[0])

    def augmented(self, dtype: np.dtype | type = np.float32) -> tuple[np.ndarray, np.ndarray]:
        """(A, B) with ``A @ B.T`` = the score matrix; offsets folded in as two extra columns."""
        if self.left_offset is None and self.right_offset is None:
            return self.left.astype(dtype), self.right.astype(dtype)
        lo = np.zeros(self.n_rows) if self.left_offset is None else self.left_offset
        ro = np.zeros(self.n_cols) if self.right_offset is None else self.right_offset
        a = np.empty((self.n_rows, self.left.shape[1] + 2), dtype=dtype)
        a[:, :-2] = self.left
        a[:, -2] = lo
        a[:, -1] = 1.0
        b = np.empty((self.n_cols, self.right.shape[1] + 2), dtype=dtype)
        b[:, :-2] = self.right
        b[:, -2] = 1.0
        b[:, -1] = ro
        return a, b

    def select(
        self, rows: np.ndarray | None = None, cols: np.ndarray | None = None
    ) -> PairScoreTerms:
        """Terms restricted to ``rows`` / ``cols`` (indices or masks; ``None`` keeps all)."""

        def pick(arr: np.ndarray | None, idx: np.ndarray | None) -> np.ndarray | None:
            return arr if arr is None or idx is None else arr[idx]

        left = self.left if rows is None else self.left[rows]
        right = self.right if cols is None else self.right[cols]
        return PairScoreTerms(
            left, right, pick(self.left_offset, rows), pick(self.right_offset, cols)
        )


def rows_per_block(n_cols: int, memory_budget_bytes: int, itemsize: int = 4) -> int:
    """Rows of an (rows, n_cols) score block that fit the budget (bytes), at least 1."""
    if memory_budget_bytes <= 0:
        raise ValueError(f"memory_budget_bytes must be > 0, got {memory_budget_bytes}")
    return max(1, int(memory_budget_bytes // (_BLOCK_COPIES * itemsize * max(n_cols, 1))))


def iter_score_blocks(
    terms: PairScoreTerms,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
    dtype: np.dtype | type = np.float32,
) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield ``(row_slice, scores[row_slice, :])`` blocks of the full score matrix.

    One matrix product per block in ``dtype`` (float32 by default: the product is then as fast as
    a bare float32 matmul of the same shape).
    """
    a, b = terms.augmented(dtype)
    bt = b.T
    step = rows_per_block(terms.n_cols, memory_budget_bytes, np.dtype(dtype).itemsize)
    for start in range(0, terms.n_rows, step):
        rows = slice(start, min(start + step, terms.n_rows))
        yield rows, a[rows] @ bt


def score_all_pairs(
    terms: PairScoreTerms,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
    dtype: np.dtype | type = np.float32,
) -> np.ndarray:
    """The full (n_rows, n_cols) score matrix, computed block by block."""
    out = np.empty((terms.n_rows, terms.n_cols), dtype=dtype)
    for rows, block in iter_score_blocks(terms, memory_budget_bytes, dtype):
        out[rows] = block
    return out


def _group_layout(groups: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stable order sorting rows by group, start offset of each group in it, group sizes)."""
    if groups.ndim != 1:
        raise ValueError("group index must be 1-D")
    counts = np.bincount(groups, minlength=n_groups)
    if counts.size != n_groups or (counts == 0).any():
        raise ValueError("every group needs at least one row")
    order = np.argsort(groups, kind="stable")
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return order, starts, counts


def group_means(x: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Float64 mean of the rows of ``x`` per group (``groups`` = row -> group index 0..n-1)."""
    order, starts, counts = _group_layout(groups, n_groups)
    xs = np.asarray(x, dtype=np.float64)[order]
    sums = np.add.reduceat(xs, starts, axis=0)
    return sums / (counts[:, None] if sums.ndim == 2 else counts)


def speaker_pair_mean_scores(
    terms: PairScoreTerms,
    row_groups: np.ndarray,
    n_row_groups: int,
    col_groups: np.ndarray,
    n_col_groups: int,
) -> np.ndarray:
    """Mean score over all (row, col) pairs of each (row group, col group): the moment shortcut.

    Exact for any quadratic-form score (PLDA LLR, cosine of fixed-norm vectors): needs only the
    per-group means of ``left``/``right`` and of the offsets, so the cost is one
    (n_row_groups, k) x (k, n_col_groups) product instead of n_rows x n_cols pair scores.
    Returns float64 (n_row_groups, n_col_groups).
    """
    lbar = group_means(terms.left, row_groups, n_row_groups)
    rbar = group_means(terms.right, col_groups, n_col_groups)
    out = lbar @ rbar.T
    if terms.left_offset is not None:
        out += group_means(terms.left_offset, row_groups, n_row_groups)[:, None]
    if terms.right_offset is not None:
        out += group_means(terms.right_offset, col_groups, n_col_groups)[None, :]
    return np.asarray(out)


def speaker_pair_mean_scores_explicit(
    terms: PairScoreTerms,
    row_groups: np.ndarray,
    n_row_groups: int,
    col_groups: np.ndarray,
    n_col_groups: int,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
    dtype: np.dtype | type = np.float32,
) -> np.ndarray:
    """Same result as :func:`speaker_pair_mean_scores`, by scoring every pair explicitly.

    Every (row, col) score is computed (blocked matrix products), summed per col group within a
    block, then per row group; sums are accumulated in float64. Memory: one score block
    (``memory_budget_bytes``) plus the (n_row_groups, n_col_groups) float64 accumulator.
    """
    r_order, _, r_counts = _group_layout(row_groups, n_row_groups)
    c_order, c_starts, c_counts = _group_layout(col_groups, n_col_groups)
    sorted_terms = terms.select(r_order, c_order)
    sorted_row_groups = row_groups[r_order]
    acc = np.zeros((n_row_groups, n_col_groups), dtype=np.float64)
    for rows, block in iter_score_blocks(sorted_terms, memory_budget_bytes, dtype):
        col_sums = np.add.reduceat(block, c_starts, axis=1, dtype=np.float64)
        g = sorted_row_groups[rows]
        # Rows are sorted by group, so each group is one contiguous run within the block.
        run_starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
        acc[g[run_starts]] += np.add.reduceat(col_sums, run_starts, axis=0)
    return acc / np.outer(r_counts, c_counts)
