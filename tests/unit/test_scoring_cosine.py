"""Cosine back-end: scores equal a naive per-pair computation; modes; block size; genders."""

from __future__ import annotations

import numpy as np
import pytest

from services.metrics import compute_eer
from services.scoring import (
    CosineBackend,
    TrialSet,
    eer_report,
    score_trials,
)
from services.scoring.synthetic import make_synthetic_speakers


def _trial_set(seed: int = 0, n_spk: int = 8, n_enr: int = 4, n_trial: int = 3) -> TrialSet:
    rng = np.random.default_rng(seed)
    spk = make_synthetic_speakers(n_spk, 16, rng, between_scale=1.0, within_scale=0.5)
    e, e_spk, e_gen = spk.sample(n_enr, rng)
    t, t_spk, t_gen = spk.sample(n_trial, rng)
    return TrialSet.from_arrays(t, t_spk, t_gen, e, e_spk, e_gen)


def _naive_cos(x: np.ndarray, y: np.ndarray) -> float:
    x = x.astype(np.float64)
    y = y.astype(np.float64)
    return float(x @ y / np.sqrt((x @ x) * (y @ y)))


def test_cosine_per_utterance_equals_naive_per_pair() -> None:
    ts = _trial_set()
    m = score_trials(CosineBackend(), ts, enrollment="per_utterance").partitions["all"]
    t, e = ts.trials.embeddings, ts.enrollment.embeddings
    naive = np.array([[_naive_cos(t[i], e[j]) for j in range(len(e))] for i in range(len(t))])
    np.testing.assert_allclose(m.scores, naive, atol=1e-6)
    assert m.scores.dtype == np.float32
    mask = m.target_mask()
    expected = ts.trials.speaker_ids[:, None] == ts.enrollment.speaker_ids[None, :]
    np.testing.assert_array_equal(mask, expected)


def test_cosine_speaker_mean_uses_mean_embedding() -> None:
    ts = _trial_set(1)
    m = score_trials(CosineBackend(), ts, enrollment="speaker_mean").partitions["all"]
    assert m.scores.shape == (len(ts.trials), np.unique(ts.enrollment.speaker_ids).size)
    for j, s in enumerate(m.col_speaker_ids):
        mean = ts.enrollment.embeddings[ts.enrollment.speaker_ids == s].astype(np.float64).mean(0)
        col = [_naive_cos(x, mean) for x in ts.trials.embeddings]
        np.testing.assert_allclose(m.scores[:, j], col, atol=1e-6)
    split = m.target_nontarget()
    assert split.target.size == len(ts.trials)
    assert split.nontarget.size == len(ts.trials) * (m.scores.shape[1] - 1)


@pytest.mark.parametrize("budget", [1, 200, 5_000, 10**9])
def test_block_size_does_not_change_scores(budget: int) -> None:
    ts = _trial_set(2)
    ref = score_trials(CosineBackend(), ts, enrollment="per_utterance").partitions["all"]
    got = score_trials(
        CosineBackend(), ts, enrollment="per_utterance", memory_budget_bytes=budget
    ).partitions["all"]
    # BLAS may round a 1-row product differently from a many-row one: float32 ulps only.
    np.testing.assert_allclose(got.scores, ref.scores, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(got.target_mask(), ref.target_mask())
    exact = score_trials(
        CosineBackend(),
        ts,
        enrollment="per_utterance",
        memory_budget_bytes=budget,
        dtype=np.float64,
    ).partitions["all"]
    np.testing.assert_allclose(exact.scores, ref.scores.astype(np.float64), atol=1e-6)


def test_per_gender_has_no_cross_gender_trials() -> None:
    ts = _trial_set(3, n_spk=10)
    scored = score_trials(CosineBackend(), ts, gender_mode="per_gender")
    assert set(scored.partitions) == {"f", "m"}
    total = 0
    for g, m in scored.partitions.items():
        assert (m.row_genders == g).all()
        assert (m.col_genders == g).all()
        total += m.scores.size
    pooled = score_trials(CosineBackend(), ts).partitions["all"]
    same = pooled.row_genders[:, None] == pooled.col_genders[None, :]
    assert total == int(same.sum()) < pooled.scores.size
    report = eer_report(scored)
    assert report.pooled is None
    assert set(report.per_gender) == {"f", "m"}
    assert report.eer_percent == pytest.approx(
        np.mean([r.eer_percent for r in report.per_gender.values()])
    )


def test_pooled_report_has_pooled_and_gender_breakdown() -> None:
    ts = _trial_set(4, n_spk=12, n_trial=5)
    report = eer_report(score_trials(CosineBackend(), ts))
    assert report.pooled is not None
    assert report.eer_percent == report.pooled.eer_percent
    assert set(report.per_gender) == {"f", "m"}
    assert 0.0 <= report.pooled.eer_percent <= 50.0


def test_pooled_report_equals_eer_of_the_unsorted_pooled_scores() -> None:
    # eer_report merges per-gender sorted runs into the pooled sets: same EER, bit for bit.
    ts = _trial_set(7, n_spk=16, n_trial=6)
    scored = score_trials(CosineBackend(), ts)
    report = eer_report(scored)
    matrix = scored.partitions["all"]
    split = matrix.target_nontarget()
    direct = compute_eer(split.target, split.nontarget)
    assert report.pooled is not None
    assert report.pooled.eer_percent == direct.eer_percent
    assert report.pooled.threshold == direct.threshold
    for g, result in report.per_gender.items():
        sub = matrix.rows_of_gender(g).target_nontarget()
        assert result.eer_percent == compute_eer(sub.target, sub.nontarget).eer_percent
