"""Streaming exact EER equals the in-memory EER; float32 order keys; ROCCH from counts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from services.metrics.eer import compute_eer
from services.scoring import (
    CosineBackend,
    StreamingEER,
    TrialSet,
    eer_from_counts,
    eer_report,
    float32_order_keys,
    keys_to_float32,
    score_trials,
    streaming_eer_report,
)
from services.scoring.synthetic import make_synthetic_speakers


def _bruteforce_rocch_eer(target: np.ndarray, nontarget: np.ndarray) -> float:
    """Private minimal ROCCH EER (percent): all ROC points, monotone-chain lower hull,
    BOSARIS rocch2eer."""
    thr = np.unique(np.concatenate([target, nontarget]))
    pts = [(1.0, 0.0)]  # accept everything: Pfa = 1, Pmiss = 0
    for t in thr:
        pts.append((float((nontarget > t).mean()), float((target <= t).mean())))
    pts = sorted(set(pts))
    hull: list[tuple[float, float]] = []
    for p in pts:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:
                hull.pop()
            else:
                break
        hull.append(p)
    eer = 0.0
    for (x1, y1), (x2, y2) in itertools.pairwise(hull):
        dx, dy = x2 - x1, y2 - y1
        if dx != 0 and dy != 0:
            eer = max(eer, (x2 * y1 - x1 * y2) / (dx - dy))
    return 100.0 * eer


def test_order_keys_sort_like_floats() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [rng.normal(size=500).astype(np.float32) * 100, [0.0, -0.0, np.inf, -np.inf, 1e-40]]
    ).astype(np.float32)
    k = float32_order_keys(x)
    np.testing.assert_array_equal(np.argsort(k, kind="stable"), np.argsort(x, kind="stable"))
    assert float32_order_keys(np.float32([-0.0]))[0] == float32_order_keys(np.float32([0.0]))[0]
    np.testing.assert_array_equal(keys_to_float32(k), x + np.float32(0.0))
    with pytest.raises(ValueError, match="NaN"):
        float32_order_keys(np.array([1.0, np.nan]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eer_from_counts_matches_bruteforce_hull(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Rounded scores force ties between and within classes.
    t = np.round(rng.normal(1.0, 1.0, 60), 1)
    n = np.round(rng.normal(0.0, 1.0, 200), 1)
    acc = StreamingEER()
    acc.update(t, n)
    assert acc.result().eer_percent == pytest.approx(_bruteforce_rocch_eer(t, n), abs=1e-9)


@pytest.mark.parametrize("n_blocks", [1, 7, 50])
def test_streaming_equals_in_memory(n_blocks: int) -> None:
    rng = np.random.default_rng(5)
    t = rng.normal(1.5, 1.0, 3000).astype(np.float32)
    n = rng.normal(0.0, 1.2, 20000).astype(np.float32)
    n[:100] = n[100:200]  # exact ties
    acc = StreamingEER()
    for tb, nb in zip(np.array_split(t, n_blocks), np.array_split(n, n_blocks), strict=True):
        acc.update(tb, nb)
    got = acc.result()
    ref = compute_eer(t, n)
    assert got.eer_percent == pytest.approx(ref.eer_percent, abs=1e-9)
    assert got.threshold == pytest.approx(ref.threshold, abs=1e-9)
    assert acc.n_target == t.size and acc.n_nontarget == n.size
    assert acc.n_distinct <= t.size + n.size - 100
    scores, tc, nc = acc.counts()
    assert (np.diff(scores) > 0).all() and tc.sum() == t.size and nc.sum() == n.size


def test_streaming_merge_equals_single_accumulator() -> None:
    rng = np.random.default_rng(6)
    t, n = rng.normal(1, 1, 500), rng.normal(0, 1, 900)
    a, b, whole = StreamingEER(), StreamingEER(), StreamingEER()
    a.update(t[:200], n[:300])
    b.update(t[200:], n[300:])
    whole.update(t, n)
    a.merge(b)
    assert a.result() == whole.result()


def test_eer_from_counts_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="target"):
        eer_from_counts(np.array([0.0, 1.0]), np.array([1, 2]), np.array([0, 0]))


@pytest.mark.parametrize("gender_mode", ["pooled", "per_gender"])
@pytest.mark.parametrize("enrollment", ["speaker_mean", "per_utterance"])
def test_streaming_report_equals_in_memory_report(gender_mode: str, enrollment: str) -> None:
    rng = np.random.default_rng(7)
    spk = make_synthetic_speakers(14, 12, rng, 1.0, 1.0)
    e, e_ids, e_gen = spk.sample(3, rng)
    t, t_ids, t_gen = spk.sample(4, rng)
    ts = TrialSet.from_arrays(t, t_ids, t_gen, e, e_ids, e_gen)
    mem = eer_report(score_trials(CosineBackend(), ts, enrollment, gender_mode))  # type: ignore[arg-type]
    stream = streaming_eer_report(
        CosineBackend(),
        ts,
        enrollment,
        gender_mode,
        memory_budget_bytes=2000,  # type: ignore[arg-type]
    )
    assert stream.eer_percent == pytest.approx(mem.eer_percent, abs=1e-9)
    assert set(stream.per_gender) == set(mem.per_gender)
    for g, r in mem.per_gender.items():
        assert stream.per_gender[g].eer_percent == pytest.approx(r.eer_percent, abs=1e-9)
    if gender_mode == "pooled":
        assert stream.pooled is not None and mem.pooled is not None
        assert stream.pooled.eer_percent == pytest.approx(mem.pooled.eer_percent, abs=1e-9)
