"""Per-speaker EER, detection rate at low FAR, mixed-gender trial lists, and the score row that
carries them to the catalogue."""

from __future__ import annotations

import math

import numpy as np
import pytest

from services.metrics import (
    catalogue,
    compute_eer,
    detection_rate_at_far,
    per_speaker_eer,
    summarize_per_speaker,
)
from services.pipeline.config import MetricsSpec
from services.pipeline.stages.score import metrics_row
from services.scoring import (
    CosineBackend,
    TrialSet,
    eer_report,
    per_speaker_eer_report,
    score_trials,
    streaming_eer_report,
)
from services.scoring.synthetic import make_synthetic_speakers

# -- per-speaker EER ---------------------------------------------------------------------------


def test_perfectly_separated_speakers_have_zero_eer() -> None:
    r = per_speaker_eer([5.0, 6.0, 7.0, 8.0], ["a", "a", "b", "b"], [0.0, 1.0, 2.0])
    assert r.eer_percent.tolist() == [0.0, 0.0]
    assert r.mean_percent == 0.0 and r.worst_decile_percent == 0.0


def test_identical_distributions_give_about_chance() -> None:
    rng = np.random.default_rng(0)
    tar = rng.normal(0.0, 1.0, 4000)
    spk = np.repeat([f"s{i}" for i in range(4)], 1000)
    r = per_speaker_eer(tar, spk, rng.normal(0.0, 1.0, 20000))
    assert np.all(np.abs(r.eer_percent - 50.0) < 3.0)
    tied = per_speaker_eer([0.3] * 6, list("aabbcc"), [0.3] * 10)  # every score tied
    assert tied.eer_percent.tolist() == [50.0, 50.0, 50.0]


def test_hand_built_case_per_speaker() -> None:
    # a: both targets above every non-target -> 0 %. b: targets {0, 3} vs non-targets {1, 2}:
    # labels t n n t, PAV blocks {t n n}, {t}, hull meets the diagonal at 1/3 -> 33.33 %.
    r = per_speaker_eer([3.5, 4.0, 0.0, 3.0], ["a", "a", "b", "b"], [1.0, 2.0])
    assert r.speaker_ids.tolist() == ["a", "b"]
    np.testing.assert_allclose(r.eer_percent, [0.0, 100.0 / 3.0])
    assert r.mean_percent == pytest.approx(50.0 / 3.0)
    assert r.n_worst_decile == 1 and r.worst_decile_percent == 0.0  # ceil(2 / 10) = 1 speaker


def test_per_speaker_eer_equals_compute_eer_on_each_speaker_with_ties() -> None:
    rng = np.random.default_rng(1)
    spk = rng.integers(0, 12, 300).astype(str)
    tar = rng.normal(1.5, 1.0, 300).round(1)  # rounding makes many ties
    non = rng.normal(0.0, 1.0, 3000).round(1)
    r = per_speaker_eer(tar, spk, non)
    expected = [min(compute_eer(tar[spk == s], non).eer_percent, 50.0) for s in r.speaker_ids]
    np.testing.assert_allclose(r.eer_percent, expected, atol=1e-12)


def test_worst_decile_is_the_mean_of_the_lowest_tenth_rounded_up() -> None:
    eers = np.arange(25, dtype=float)  # 25 speakers -> ceil(2.5) = 3 lowest: 0, 1, 2
    r = summarize_per_speaker([f"s{i}" for i in range(25)], eers[::-1])
    assert r.n_worst_decile == 3 and r.worst_decile_percent == pytest.approx(1.0)
    clipped = summarize_per_speaker(["a", "b"], [70.0, 10.0])
    assert clipped.eer_percent.tolist() == [50.0, 10.0] and clipped.mean_percent == 30.0


def test_per_speaker_eer_rejects_mismatched_input() -> None:
    with pytest.raises(ValueError, match="target_speaker_ids"):
        per_speaker_eer([1.0, 2.0], ["a"], [0.0])
    with pytest.raises(ValueError, match="nontarget_scores"):
        per_speaker_eer([1.0], ["a"], [np.nan])


# -- detection rate at a false-alarm rate ------------------------------------------------------


def test_detection_rate_threshold_allows_at_most_far_false_alarms() -> None:
    non = np.arange(1000, dtype=float)  # 0 .. 999
    r = detection_rate_at_far([989.0, 989.5, 1000.0], non, 0.01)
    # 10 false alarms allowed: accept scores above the 11th highest non-target (989)
    assert r.threshold == 989.0 and r.realised_far == pytest.approx(0.01)
    assert r.detection_percent == pytest.approx(200.0 / 3.0)
    strict = detection_rate_at_far([989.0, 989.5, 1000.0], non, 0.001)
    assert strict.threshold == 998.0 and strict.detection_percent == pytest.approx(100.0 / 3.0)


def test_detection_rate_separated_and_tied() -> None:
    assert detection_rate_at_far([5.0, 6.0], np.zeros(100), 0.01).detection_percent == 100.0
    tied = detection_rate_at_far(np.zeros(10), np.zeros(1000), 0.001)
    assert tied.detection_percent == 0.0 and tied.realised_far == 0.0


def test_detection_rate_is_none_with_a_reason_when_too_few_nontargets() -> None:
    rng = np.random.default_rng(2)
    r = detection_rate_at_far(rng.normal(2, 1, 50), rng.normal(0, 1, 999), 0.001)
    assert r.detection_percent is None and r.threshold is None
    assert r.reason is not None and "1000" in r.reason and "999" in r.reason
    ok = detection_rate_at_far(rng.normal(2, 1, 50), rng.normal(0, 1, 100), 0.01)
    assert ok.detection_percent is not None and ok.reason is None
    with pytest.raises(ValueError, match="far"):
        detection_rate_at_far([1.0], [0.0], 0.0)


def test_detection_rate_matches_a_direct_threshold_scan() -> None:
    rng = np.random.default_rng(3)
    tar, non = rng.normal(2, 1, 400).round(2), rng.normal(0, 1, 5000).round(2)
    for far in (0.01, 0.001):
        r = detection_rate_at_far(tar, non, far)
        # best detection over every candidate threshold whose false-alarm rate is <= far
        candidates = np.unique(np.concatenate([tar, non, [np.inf]]))
        best = max(float(np.mean(tar >= t)) for t in candidates if np.mean(non >= t) <= far)
        assert r.detection_percent == pytest.approx(100.0 * best)


# -- mixed-gender trial lists and the score row ------------------------------------------------


def _trial_set(seed: int = 0) -> TrialSet:
    rng = np.random.default_rng(seed)
    pop = make_synthetic_speakers(12, 16, rng, 1.0, 1.5, gender_shift=0.2)
    e, e_spk, e_gen = pop.sample(4, rng)
    t, t_spk, t_gen = pop.sample(5, rng)
    return TrialSet.from_arrays(t, t_spk, t_gen, e, e_spk, e_gen)


def test_mixed_mode_is_one_list_of_same_gender_trials() -> None:
    ts = _trial_set()
    per_gender = score_trials(CosineBackend(), ts, gender_mode="per_gender")
    mixed = score_trials(CosineBackend(), ts, gender_mode="mixed")
    pooled = score_trials(CosineBackend(), ts)
    assert set(mixed.partitions) == {"f", "m"}  # no cross-gender pair is formed
    report = eer_report(mixed)
    splits = [m.target_nontarget() for m in per_gender.partitions.values()]
    one_list = compute_eer(
        np.concatenate([s.target for s in splits]), np.concatenate([s.nontarget for s in splits])
    )
    assert report.pooled is not None and report.eer_percent == one_list.eer_percent
    pg = eer_report(per_gender)
    assert report.per_gender == pg.per_gender  # the breakdown is the per-gender lists' EERs
    n_mixed = sum(m.scores.size for m in mixed.partitions.values())
    assert n_mixed < pooled.partitions["all"].scores.size
    streamed = streaming_eer_report(CosineBackend(), ts, gender_mode="mixed")
    assert streamed.eer_percent == pytest.approx(report.eer_percent, abs=1e-9)


def test_per_speaker_report_uses_each_speakers_trial_list() -> None:
    ts = _trial_set(1)
    per_gender = score_trials(CosineBackend(), ts, gender_mode="per_gender")
    r = per_speaker_eer_report(per_gender)
    f = per_gender.partitions["f"]
    first_f = f.row_speaker_ids[0]
    mask = f.target_mask()
    own = f.scores[mask][np.broadcast_to(f.row_speaker_ids[:, None], mask.shape)[mask] == first_f]
    expected = min(compute_eer(own, f.scores[~mask]).eer_percent, 50.0)
    assert r.eer_percent[r.speaker_ids.tolist().index(first_f)] == pytest.approx(expected)
    assert r.speaker_ids.size == np.unique(ts.trials.speaker_ids).size


def test_score_row_carries_the_new_metrics_to_the_catalogue() -> None:
    ts = _trial_set(2)
    scored = score_trials(CosineBackend(), ts)
    spec = MetricsSpec(bootstrap_resamples=0, srd=False, zebra=False, linkability=False)
    row = metrics_row(scored, spec, 0, llr_scores=False)
    per_speaker = per_speaker_eer_report(scored)
    assert catalogue.PER_SPEAKER_EER_MEAN.value_in(row) == pytest.approx(per_speaker.mean_percent)
    worst = catalogue.PER_SPEAKER_EER_WORST_DECILE.value_in(row)
    assert worst == pytest.approx(per_speaker.worst_decile_percent)
    assert worst is not None and worst <= per_speaker.mean_percent
    # 60 trials x 12 models: 660 non-targets -> FAR 1 % is measured, FAR 0.1 % is not
    assert row["n_nontarget"] == 660
    split = scored.partitions["all"].target_nontarget()
    expected = detection_rate_at_far(split.target, split.nontarget, 0.01).detection_percent
    assert catalogue.DETECTION_RATE_FAR_1.value_in(row) == pytest.approx(expected)
    assert catalogue.DETECTION_RATE_FAR_0_1.value_in(row) is None
    assert "1000" in row["detection_rate"]["reasons"]["far_0_1_percent"]
    off = metrics_row(
        scored, spec.model_copy(update={"per_speaker_eer": False, "detection_rate": False}), 0,
        llr_scores=False,
    )  # fmt: skip
    assert "per_speaker_eer" not in off and "detection_rate" not in off
    assert math.isfinite(row[catalogue.EER.key])
