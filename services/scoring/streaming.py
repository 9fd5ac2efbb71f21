"""Exact EER from streamed score blocks, without keeping every score.

Scores are float32. Each one maps to an order-preserving uint32 key (its IEEE-754 bit pattern
with the sign handled), so an exact histogram over keys holds everything the ROC needs: the
accumulator keeps, per distinct key, the number of target and non-target scores. Keys are
buffered (``buffer_scores`` of them, 4 bytes each), then sorted, compacted and merged into a few
sorted runs of geometrically growing size (log-structured merge), so the work is O(n log n) and
the stored state is

    4 bytes x buffer_scores + 20 bytes x (number of distinct float32 score values)

(distinct values <= number of scores), plus, during a merge, about twice the runs being merged.
The EER is then read from the ROC convex hull of the exact counts, which gives the same EER as
the in-memory ``services.metrics.compute_eer`` on the same float32 scores.
"""

from __future__ import annotations

import numpy as np

from services.metrics._pav import pav_counts
from services.metrics.eer import EERResult, rocch_eer_from_vertices, rocch_vertices

_SIGN = np.uint32(0x80000000)


def float32_order_keys(scores: np.ndarray) -> np.ndarray:
    """uint32 keys with ``key(a) < key(b)`` iff ``float32(a) < float32(b)`` (-0.0 == +0.0)."""
    f = np.asarray(scores, dtype=np.float32).ravel()
    if np.isnan(f).any():
        raise ValueError("scores contain NaN")
    bits = (f + np.float32(0.0)).view(np.uint32)  # + 0.0 turns -0.0 into +0.0
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def keys_to_float32(keys: np.ndarray) -> np.ndarray:
    """Inverse of :func:`float32_order_keys`."""
    k = np.asarray(keys, dtype=np.uint32)
    return np.where(k & _SIGN, k & ~_SIGN, ~k).view(np.float32)


_Table = tuple[np.ndarray, np.ndarray, np.ndarray]  # (sorted unique keys, target n, non-target n)


def _compact_sorted(keys: np.ndarray, tgt: np.ndarray, non: np.ndarray) -> _Table:
    """Sum counts of equal adjacent keys (``keys`` sorted)."""
    if keys.size == 0:
        return keys, tgt, non
    dup = keys[1:] == keys[:-1]
    if not dup.any():
        return keys, tgt, non
    starts = np.flatnonzero(np.concatenate([[True], ~dup]))
    return keys[starts], np.add.reduceat(tgt, starts), np.add.reduceat(non, starts)


def _merge(a: _Table, b: _Table) -> _Table:
    """Merge two sorted tables: each b key goes after the a keys below it (no full sort)."""
    n = a[0].size + b[0].size
    pos_b = np.searchsorted(a[0], b[0], side="left") + np.arange(b[0].size)
    from_b = np.zeros(n, dtype=bool)
    from_b[pos_b] = True
    out = []
    for x, y in zip(a, b, strict=True):
        merged = np.empty(n, dtype=x.dtype)
        merged[pos_b] = y
        merged[~from_b] = x
        out.append(merged)
    return _compact_sorted(out[0], out[1], out[2])


def _table_from_sorted_keys(keys: np.ndarray, is_target: bool) -> _Table:
    if keys.size == 0:
        return keys, np.empty(0, np.int64), np.empty(0, np.int64)
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    counts = np.diff(np.append(starts, keys.size)).astype(np.int64)
    zeros = np.zeros(starts.size, np.int64)
    return (keys[starts], counts, zeros) if is_target else (keys[starts], zeros, counts)


DEFAULT_BUFFER_SCORES = 2**24


class StreamingEER:
    """Accumulates target / non-target score blocks; :meth:`result` gives the exact EER.

    Incoming scores are buffered as uint32 keys (4 bytes each, up to ``buffer_scores``), then
    sorted and compacted into a run of (key, counts). Memory: 4 bytes x ``buffer_scores`` plus
    20 bytes per distinct float32 score value (see the module docstring).
    """

    def __init__(self, buffer_scores: int = DEFAULT_BUFFER_SCORES) -> None:
        if buffer_scores < 1:
            raise ValueError(f"buffer_scores must be >= 1, got {buffer_scores}")
        self.buffer_scores = buffer_scores
        self._runs: list[_Table] = []
        self._pending: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
        self._n_pending = 0
        self.n_target = 0
        self.n_nontarget = 0

    def update(self, target_scores: np.ndarray, nontarget_scores: np.ndarray) -> None:
        """Add a block of target and non-target scores (any shapes; cast to float32)."""
        t = float32_order_keys(np.asarray(target_scores))
        n = float32_order_keys(np.asarray(nontarget_scores))
        self._pending[0].append(t)
        self._pending[1].append(n)
        self._n_pending += t.size + n.size
        self.n_target += t.size
        self.n_nontarget += n.size
        if self._n_pending >= self.buffer_scores:
            self._flush()

    def _flush(self) -> None:
        if self._n_pending == 0:
            return
        tk = np.sort(np.concatenate(self._pending[0]))
        nk = np.sort(np.concatenate(self._pending[1]))
        self._pending = ([], [])
        self._n_pending = 0
        self._push(_merge(_table_from_sorted_keys(tk, True), _table_from_sorted_keys(nk, False)))

    def merge(self, other: StreamingEER) -> None:
        """Add everything ``other`` has accumulated (e.g. pooled = union of per-gender ones)."""
        other._flush()
        self._flush()
        for run in other._runs:
            self._push(run)
        self.n_target += other.n_target
        self.n_nontarget += other.n_nontarget

    def _push(self, run: _Table) -> None:
        self._runs.append(run)
        # Keep run sizes geometrically decreasing: each value is merged O(log n) times.
        while len(self._runs) > 1 and self._runs[-2][0].size <= 2 * self._runs[-1][0].size:
            b = self._runs.pop()
            a = self._runs.pop()
            self._runs.append(_merge(a, b))

    def counts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distinct scores ascending as float32, target counts, non-target counts)."""
        self._flush()
        while len(self._runs) > 1:
            b = self._runs.pop()
            a = self._runs.pop()
            self._runs.append(_merge(a, b))
        if not self._runs:
            return np.empty(0, np.float32), np.empty(0, np.int64), np.empty(0, np.int64)
        keys, tgt, non = self._runs[0]
        return keys_to_float32(keys), tgt, non

    @property
    def n_distinct(self) -> int:
        """Distinct score values stored (the memory driver), after flushing the buffer."""
        self._flush()
        return int(sum(r[0].size for r in self._runs))

    def result(self) -> EERResult:
        """EER (percent) and threshold from the ROC convex hull of everything accumulated."""
        scores, tgt, non = self.counts()
        return eer_from_counts(scores, tgt, non)


def eer_from_counts(scores: np.ndarray, n_target: np.ndarray, n_nontarget: np.ndarray) -> EERResult:
    """ROC-convex-hull EER (percent) and threshold from per-value counts.

    ``scores`` strictly ascending, with the number of target and non-target scores at each value.
    Uses the same exact PAV, hull and threshold rules as ``services.metrics.compute_eer``
    (BOSARIS ``rocch`` + ``rocch2eer``; threshold: accept when score >= threshold, interpolated
    between the vertex thresholds of the hull segment holding the EER), so on the same float32
    scores both give the same result.
    """
    values = np.asarray(scores, dtype=np.float64)
    tgt = np.asarray(n_target, dtype=np.int64)
    non = np.asarray(n_nontarget, dtype=np.int64)
    n_t, n_n = int(tgt.sum()), int(non.sum())
    if n_t == 0 or n_n == 0:
        raise ValueError(
            f"EER needs at least one target and one non-target score (got {n_t} and {n_n})"
        )
    if values.size > 1 and not (np.diff(values) > 0).all():
        raise ValueError("scores must be strictly ascending distinct values")
    # Units as compute_eer forms them (ties ordered targets first): a new unit starts where the
    # last label of one value differs from the first label of the next; PAV pools each unit.
    first_is_t = tgt > 0
    last_is_t = non == 0
    unit_start = np.concatenate([[0], np.flatnonzero(last_is_t[:-1] != first_is_t[1:]) + 1])
    unit_t = np.add.reduceat(tgt, unit_start)
    unit_n = np.add.reduceat(non, unit_start)
    block_t, block_n, block_unit = pav_counts(unit_t, unit_n)
    block_start = np.append(unit_start, values.size)[block_unit]
    pmiss, pfa = rocch_vertices(block_t, block_n, n_t, n_n)
    eer, k, s = rocch_eer_from_vertices(pmiss, pfa)
    low = values[block_start[:-1]]
    high = values[block_start[1:] - 1]
    thresholds = np.concatenate(([low[0]], (high[:-1] + low[1:]) / 2.0, [high[-1]]))
    threshold = float(thresholds[k])
    if s != 0.0 and k + 1 < thresholds.size:
        threshold += s * float(thresholds[k + 1] - thresholds[k])
    return EERResult(eer_percent=100.0 * eer, threshold=threshold)
