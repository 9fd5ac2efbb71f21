"""Speaker-level bootstrap intervals for the EER and the SRD summaries."""

from __future__ import annotations

import numpy as np
import pytest

from services.metrics import (
    SpeakerTrials,
    bootstrap_eer,
    bootstrap_srd,
    compute_eer,
    compute_srd,
    paired_bootstrap_eer_difference,
)


def synthetic_trials(
    n_speakers: int, trials_per_speaker: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores with a per-speaker offset, so that trials of one speaker are correlated."""
    rng = np.random.default_rng(seed)
    speaker = np.repeat(np.arange(n_speakers), trials_per_speaker)
    is_target = rng.random(speaker.size) < 0.3
    offset = rng.normal(0.0, 0.7, n_speakers)[speaker]
    scores = rng.normal(0.0, 1.0, speaker.size) + 2.0 * is_target + offset
    return scores, is_target, speaker


def synthetic_ranks(
    n_speakers: int, inputs_per_speaker: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    speaker = np.repeat(np.arange(n_speakers), inputs_per_speaker)
    # Per-speaker rank spread: speakers with a small p are identified often.
    ranks = 1 + rng.binomial(39, rng.beta(0.5, 3.0, n_speakers)[speaker])
    return ranks, speaker


def test_eer_interval_contains_the_estimate_of_compute_eer() -> None:
    scores, is_target, speaker = synthetic_trials(40, 60, seed=0)
    interval = bootstrap_eer(scores, is_target, speaker, n_resamples=300, seed=1)
    assert interval.estimate == pytest.approx(
        compute_eer(scores[is_target], scores[~is_target]).eer_percent
    )
    assert interval.low <= interval.estimate <= interval.high
    assert interval.low < interval.high
    assert interval.n_resamples == 300 and interval.n_speakers == 40


def test_eer_interval_narrows_with_more_speakers() -> None:
    few = bootstrap_eer(*synthetic_trials(20, 50, seed=2), n_resamples=300, seed=3)
    many = bootstrap_eer(*synthetic_trials(200, 50, seed=2), n_resamples=300, seed=3)
    assert many.high - many.low < 0.7 * (few.high - few.low)


def test_eer_bootstrap_is_reproducible_with_a_seed_and_varies_without_it() -> None:
    data = synthetic_trials(30, 40, seed=4)
    first = bootstrap_eer(*data, n_resamples=100, seed=7)
    assert bootstrap_eer(*data, n_resamples=100, seed=7) == first
    assert bootstrap_eer(*data, n_resamples=100, seed=8) != first


def test_resampling_speakers_is_not_resampling_trials() -> None:
    # One speaker per score level: a speaker drawn twice repeats all its trials, so the EER
    # of a resample is the weighted EER of whole speakers. With two speakers, every resample
    # is {a, a}, {a, b} or {b, b}: only three EER values can occur.
    scores = np.array([0.0, 1.0, 2.0, 3.0, 0.5, 1.5, 2.5, 3.5])
    is_target = np.array([False, False, True, True, False, True, False, True])
    speaker = np.array(["a", "a", "a", "a", "b", "b", "b", "b"])
    interval = bootstrap_eer(scores, is_target, speaker, n_resamples=200, seed=0)
    eer_a = compute_eer(scores[:4][is_target[:4]], scores[:4][~is_target[:4]]).eer_percent
    eer_b = compute_eer(scores[4:][is_target[4:]], scores[4:][~is_target[4:]]).eer_percent
    both = compute_eer(scores[is_target], scores[~is_target]).eer_percent
    for bound in (interval.low, interval.high):
        assert min(eer_a, eer_b, both) <= bound <= max(eer_a, eer_b, both)


def test_srd_intervals_contain_the_estimates() -> None:
    ranks, speaker = synthetic_ranks(40, 20, seed=5)
    result = bootstrap_srd(ranks, speaker, 40, n_resamples=500, seed=6)
    empirical = compute_srd(ranks, 40, fit_beta_binomial_models=False).empirical
    assert result.mean_disclosure_bits.estimate == pytest.approx(empirical.mean_disclosure_bits)
    assert result.identification_rate_percent.estimate == pytest.approx(
        empirical.identification_rate_percent
    )
    for interval in (result.mean_disclosure_bits, result.identification_rate_percent):
        assert interval.low <= interval.estimate <= interval.high
        assert interval.n_resamples == 500


def test_srd_intervals_narrow_with_more_speakers() -> None:
    few = bootstrap_srd(*synthetic_ranks(20, 20, seed=7), 40, n_resamples=400, seed=8)
    many = bootstrap_srd(*synthetic_ranks(200, 20, seed=7), 40, n_resamples=400, seed=8)
    for name in ("mean_disclosure_bits", "identification_rate_percent"):
        wide, narrow = getattr(few, name), getattr(many, name)
        assert narrow.high - narrow.low < 0.7 * (wide.high - wide.low)


def test_invalid_inputs_raise_value_error() -> None:
    scores, is_target, speaker = synthetic_trials(5, 10, seed=9)
    with pytest.raises(ValueError, match="same length"):
        bootstrap_eer(scores, is_target[:-1], speaker)
    with pytest.raises(ValueError, match="at least one target and one non-target"):
        bootstrap_eer(scores, np.ones_like(is_target), speaker)
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_eer(scores, is_target, speaker, n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_eer(scores, is_target, speaker, confidence=1.0)
    with pytest.raises(ValueError, match="scores contains NaN"):
        bootstrap_eer(np.full(scores.size, np.nan), is_target, speaker)
    with pytest.raises(ValueError, match="is_target must hold booleans"):
        bootstrap_eer(scores, np.full(scores.size, 2), speaker)
    with pytest.raises(ValueError, match=r"ranks must lie in \[1, 40\]"):
        bootstrap_srd([0, 1], ["a", "b"], 40)
    with pytest.raises(ValueError, match="same length"):
        bootstrap_srd([1, 2], ["a"], 40)


# --- the paired bootstrap of an EER difference (the compare page) ----------------------------


def _trials(scores: np.ndarray, is_target: np.ndarray, speaker: np.ndarray) -> SpeakerTrials:
    return SpeakerTrials(scores, is_target, np.array([f"s{k}" for k in speaker]))


def _eer(t: SpeakerTrials) -> float:
    return compute_eer(t.scores[t.is_target], t.scores[~t.is_target]).eer_percent


def test_paired_difference_of_a_system_with_itself_is_exactly_zero() -> None:
    a = _trials(*synthetic_trials(30, 40, seed=2))
    ci = paired_bootstrap_eer_difference([[a]], [[a]], n_resamples=200, seed=0)
    assert (ci.estimate, ci.low, ci.high) == (0.0, 0.0, 0.0)
    assert ci.n_resamples == 200 and ci.n_speakers == 30


def test_paired_estimate_is_the_difference_of_the_leaderboard_aggregates() -> None:
    """Each side: mean over seeds, lowest over attackers (the leaderboard's worst case)."""
    sets = [_trials(*synthetic_trials(25, 40, seed=s)) for s in range(5)]
    # The speakers' trials differ between sets but the speakers are the same 25.
    a = [[sets[0], sets[1]], [sets[2]]]
    b = [[sets[3], sets[4]]]
    ci = paired_bootstrap_eer_difference(a, b, n_resamples=100, seed=0)
    side_a = min(np.mean([_eer(sets[0]), _eer(sets[1])]), _eer(sets[2]))
    side_b = np.mean([_eer(sets[3]), _eer(sets[4])])
    assert ci.estimate == pytest.approx(side_b - side_a)
    assert ci.low <= ci.estimate <= ci.high


def test_pairing_cancels_what_the_two_systems_share() -> None:
    """Two systems whose errors go together over speakers (same hard speakers, b slightly
    worse): the paired interval is much narrower than the two separate intervals combined, and
    it excludes 0 where those overlap."""
    rng = np.random.default_rng(7)
    n_speakers, per = 40, 60
    speaker = np.repeat(np.arange(n_speakers), per)
    is_target = rng.random(speaker.size) < 0.3
    hardness = rng.normal(0.0, 1.0, n_speakers)[speaker]
    noise = rng.normal(0.0, 1.0, speaker.size)
    a_scores = noise + 2.0 * is_target + hardness
    b_scores = noise + 1.7 * is_target + hardness + rng.normal(0.0, 0.1, speaker.size)
    a, b = _trials(a_scores, is_target, speaker), _trials(b_scores, is_target, speaker)
    paired = paired_bootstrap_eer_difference([[a]], [[b]], n_resamples=400, seed=1)
    alone = [bootstrap_eer(t.scores, t.is_target, speaker, n_resamples=400, seed=1) for t in (a, b)]
    separate_width = np.hypot(*(i.high - i.low for i in alone))
    assert paired.high - paired.low < 0.5 * separate_width
    assert paired.estimate > 0 and paired.low > 0  # b is worse at hiding (a higher EER)
    assert alone[1].low < alone[0].high  # ... which the separate intervals cannot tell


def test_paired_bootstrap_refuses_unpaired_or_empty_sides() -> None:
    a = _trials(*synthetic_trials(20, 30, seed=3))
    scores, is_target, speaker = synthetic_trials(21, 30, seed=3)
    other = _trials(scores, is_target, speaker)
    with pytest.raises(ValueError, match="not paired: 0 speakers only in a, 1 only in b"):
        paired_bootstrap_eer_difference([[a]], [[other]], n_resamples=10)
    with pytest.raises(ValueError, match="at least one attacker"):
        paired_bootstrap_eer_difference([[a]], [], n_resamples=10)
    targets_only = SpeakerTrials(a.scores, np.ones(a.scores.size, bool), a.speaker_ids)
    with pytest.raises(ValueError, match="a target and a non-target"):
        paired_bootstrap_eer_difference([[a]], [[targets_only]], n_resamples=10)
