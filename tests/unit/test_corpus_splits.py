"""Speaker roles, evaluation split and validation hold-out (services.corpus.splits)."""

from __future__ import annotations

from collections import Counter

import pytest

from services.corpus.manifest import Manifest, Utterance
from services.corpus.splits import (
    SpeakerRoles,
    assign_speaker_roles,
    split_evaluation,
    split_validation,
    validation_count,
)
from services.errors import ConfigError, CorpusError


def make_manifest(
    n_speakers: int, n_utts: int | list[int], n_female: int | None = None
) -> Manifest:
    """In-memory manifest (no audio): speaker k is female for k < n_female (default half)."""
    n_female = n_speakers // 2 if n_female is None else n_female
    counts = n_utts if isinstance(n_utts, list) else [n_utts] * n_speakers
    rows = [
        Utterance(
            utt_id=f"s{k:03d}-{j:03d}",
            speaker_id=f"s{k:03d}",
            gender="f" if k < n_female else "m",
            path=f"s{k:03d}/{j}.wav",
            duration_s=3.0,
        )
        for k in range(n_speakers)
        for j in range(counts[k])
    ]
    return Manifest(utterances=tuple(rows))


def test_default_sizes_on_synthetic_default_shape() -> None:
    m = make_manifest(120, 2)
    roles = assign_speaker_roles(m)
    assert (len(roles.attacker_train), len(roles.evaluation), len(roles.target)) == (60, 40, 20)
    g = m.speaker_gender()
    assert Counter(g[s] for s in roles.evaluation) == {"f": 20, "m": 20}
    assert Counter(g[s] for s in roles.target) == {"f": 10, "m": 10}
    all_ = [*roles.attacker_train, *roles.evaluation, *roles.target]
    assert sorted(all_) == m.speakers()


def test_counts_fractions_and_balance() -> None:
    m = make_manifest(30, 1, n_female=16)
    roles = assign_speaker_roles(m, n_evaluation=6, n_target=4, attacker_train_fraction=0.5)
    g = m.speaker_gender()
    assert len(roles.attacker_train) == 15
    for pool in (roles.evaluation, roles.target):
        c = Counter(g[s] for s in pool)
        assert c["f"] == c["m"]
    assert len(set(roles.attacker_train) | set(roles.evaluation) | set(roles.target)) == 25
    odd = assign_speaker_roles(m, n_evaluation=5, n_target=0)
    assert Counter(g[s] for s in odd.evaluation) == {"f": 3, "m": 2}  # odd one: more females left
    with pytest.raises(CorpusError, match="3 male speakers needed, only 2 left"):
        assign_speaker_roles(make_manifest(10, 1, n_female=8), n_evaluation=6, n_target=0)
    unbalanced = assign_speaker_roles(
        make_manifest(10, 1, n_female=8), n_evaluation=6, n_target=0, gender_balanced=False
    )
    assert len(unbalanced.evaluation) == 6
    with pytest.raises(ConfigError, match="not both"):
        assign_speaker_roles(m, n_evaluation=3, evaluation_fraction=0.1)
    with pytest.raises(CorpusError, match="no attacker-train speakers left"):
        assign_speaker_roles(make_manifest(4, 1), n_evaluation=2, n_target=2)


def test_roles_deterministic_and_order_independent() -> None:
    m = make_manifest(40, 1)
    a = assign_speaker_roles(m, seed=3)
    assert assign_speaker_roles(m.with_utterances(reversed(m.utterances)), seed=3) == a
    assert assign_speaker_roles(m, seed=4) != a


def test_roles_must_be_disjoint() -> None:
    with pytest.raises(ValueError, match="both attacker_train and target"):
        SpeakerRoles(attacker_train=("a", "b"), evaluation=("c",), target=("b",))


def test_evaluation_split_counts_and_enrollment_first() -> None:
    counts = [50, 40, 30, 12, 1]
    m = make_manifest(5, counts)
    spk = m.speakers()
    enr, tri = split_evaluation(m, spk, trials_per_speaker=20, enrollments_per_speaker=20, seed=1)
    assert not set(enr) & set(tri)
    per_e = Counter(u.split("-")[0] for u in enr)
    per_t = Counter(u.split("-")[0] for u in tri)
    expect = [(min(20, n), max(0, min(20, n - 20))) for n in counts]
    assert [(per_e[s], per_t.get(s, 0)) for s in spk] == expect


def test_evaluation_split_seeded_and_local() -> None:
    m = make_manifest(6, 40)
    spk = m.speakers()
    first = split_evaluation(m, spk, seed=0)
    assert split_evaluation(m.with_utterances(reversed(m.utterances)), spk, seed=0) == first
    assert split_evaluation(m, spk, seed=1) != first
    # A speaker's split does not depend on which other speakers are evaluated.
    alone = split_evaluation(m, spk[2:3], seed=0)
    assert set(alone[0]) <= set(first[0])
    assert set(alone[1]) <= set(first[1])


@pytest.mark.parametrize(
    ("n", "k"), [(0, 0), (1, 0), (2, 1), (5, 1), (14, 1), (15, 2), (40, 4), (100, 10)]
)
def test_validation_count_rounding(n: int, k: int) -> None:
    assert validation_count(n, 0.1) == k


def test_validation_holdout_ten_percent_per_speaker() -> None:
    m = make_manifest(8, [40, 40, 20, 10, 3, 2, 1, 100])
    spk = m.speakers()
    train, val = split_validation(m, spk, fraction=0.1, seed=0)
    assert not set(train) & set(val)
    assert sorted(train + val) == sorted(u.utt_id for u in m)
    per = Counter(u.split("-")[0] for u in val)
    assert [per.get(s, 0) for s in spk] == [4, 4, 2, 1, 1, 1, 0, 10]
    assert split_validation(m, spk, seed=0) == (train, val)
    assert split_validation(m, spk, seed=9) != (train, val)
    with pytest.raises(ConfigError):
        split_validation(m, spk, fraction=1.0)
