"""Target selection algorithms (PROTOCOLS.md section 2)."""

from __future__ import annotations

from collections import Counter

import pytest

from services.anonymizers.base import TargetVoice
from services.anonymizers.target_selection import (
    select_targets,
    select_targets_with,
    targets_for_utterances,
)
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.protocol import TargetSelection
from services.errors import ConfigError

POOL: dict[str, Gender] = {f"tf{i:02d}": "f" for i in range(10)} | {
    f"tm{i:02d}": "m" for i in range(10)
}


def utterances(n_speakers: int = 6, per_speaker: int = 8) -> list[Utterance]:
    return [
        Utterance(
            utt_id=f"s{s}-{u:03d}",
            speaker_id=f"s{s}",
            gender="f" if s % 2 == 0 else "m",
            path=f"s{s}/{u}.wav",
            duration_s=3.0,
        )
        for s in range(n_speakers)
        for u in range(per_speaker)
    ]


def test_every_utterance_gets_a_target_of_the_pool() -> None:
    utts = utterances()
    mapping = select_targets(utts, POOL, seed=1)
    assert set(mapping) == {u.utt_id for u in utts}
    assert set(mapping.values()) <= set(POOL)


@pytest.mark.parametrize("granularity", ["utterance", "speaker"])
def test_same_gender_picks_only_same_gender_targets(granularity: str) -> None:
    utts = utterances()
    mapping = select_targets(
        utts,
        POOL,
        strategy="same-gender",
        granularity=granularity,
        seed=3,  # type: ignore[arg-type]
    )
    for u in utts:
        assert POOL[mapping[u.utt_id]] == u.gender


def test_random_strategy_crosses_genders() -> None:
    utts = utterances(10, 10)
    mapping = select_targets(utts, POOL, strategy="random", seed=0)
    cross = sum(POOL[mapping[u.utt_id]] != u.gender for u in utts)
    assert 20 < cross < 80  # about half of 100


def test_utterance_level_gives_distinct_targets_within_a_speaker() -> None:
    utts = utterances(4, 10)
    mapping = select_targets(utts, POOL, strategy="same-gender", granularity="utterance", seed=0)
    for s in range(4):
        targets = [mapping[u.utt_id] for u in utts if u.speaker_id == f"s{s}"]
        assert len(set(targets)) == 10  # 10 same-gender candidates, 10 utterances


def test_utterance_level_cycles_when_a_speaker_has_more_utterances_than_targets() -> None:
    utts = utterances(1, 25)
    mapping = select_targets(utts, POOL, strategy="same-gender", seed=0)
    counts = Counter(mapping.values())
    assert len(counts) == 10 and max(counts.values()) == 3 and min(counts.values()) == 2


def test_speaker_level_gives_one_target_per_speaker() -> None:
    utts = utterances(8, 6)
    mapping = select_targets(utts, POOL, granularity="speaker", seed=0)
    per_speaker = {u.speaker_id: set() for u in utts}
    for u in utts:
        per_speaker[u.speaker_id].add(mapping[u.utt_id])
    assert all(len(t) == 1 for t in per_speaker.values())
    assert len({next(iter(t)) for t in per_speaker.values()}) > 1


def test_seeded_deterministic_and_independent_of_input_order() -> None:
    utts = utterances()
    for granularity in ("utterance", "speaker"):
        a = select_targets(utts, POOL, granularity=granularity, seed=5)  # type: ignore[arg-type]
        b = select_targets(
            utts[::-1], dict(reversed(POOL.items())), granularity=granularity, seed=5
        )  # type: ignore[arg-type]
        assert a == b
        assert list(a) == sorted(a)
    assert select_targets(utts, POOL, seed=5) != select_targets(utts, POOL, seed=6)


def test_salts_give_independent_draws_for_enrollment_and_trial() -> None:
    utts = utterances(10, 10)
    enrollment = select_targets(utts, POOL, seed=0, salt="enrollment")
    trial = select_targets(utts, POOL, seed=0, salt="trial")
    same = sum(enrollment[k] == trial[k] for k in enrollment)
    assert same < 20  # independent uniform draws over 20 targets: about 5 of 100 agree


def test_targets_are_roughly_uniform_over_the_pool() -> None:
    utts = utterances(40, 10)
    counts = Counter(select_targets(utts, POOL, strategy="random", seed=2).values())
    assert len(counts) == 20
    assert max(counts.values()) < 40 and min(counts.values()) > 5  # expected 20 each


def test_source_speaker_is_never_its_own_target() -> None:
    utts = utterances(2, 10)
    pool: dict[str, Gender] = {"s0": "f", "tf": "f"}
    mapping = select_targets(utts[:10], pool, strategy="same-gender", seed=0)
    assert set(mapping.values()) == {"tf"}


def test_selection_config_model_and_pool_of_voices() -> None:
    utts = utterances()
    voices = [TargetVoice(t, g) for t, g in POOL.items()]
    config = TargetSelection(strategy="same-gender", granularity="speaker", seed=4)
    from_config = select_targets_with(config, Manifest(utterances=tuple(utts)), voices)
    direct = select_targets(utts, POOL, strategy="same-gender", granularity="speaker", seed=4)
    assert from_config == direct
    forced = select_targets_with(config, utts, voices, granularity="utterance")
    assert forced == select_targets(utts, POOL, strategy="same-gender", seed=4)
    by_utt = targets_for_utterances(direct, {v.target_id: v for v in voices})
    assert all(by_utt[k].target_id == t for k, t in direct.items())


def test_bad_configurations_raise_config_error() -> None:
    utts = utterances()
    with pytest.raises(ConfigError, match="empty"):
        select_targets(utts, {})
    with pytest.raises(ConfigError, match="gender 'm'"):
        select_targets(utts, {"tf": "f"}, strategy="same-gender")
    with pytest.raises(ConfigError, match="strategy"):
        select_targets(utts, POOL, strategy="nearest")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no voice"):
        targets_for_utterances({"u": "missing"}, {})
