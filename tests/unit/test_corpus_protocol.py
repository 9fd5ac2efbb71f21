"""Protocol building, hashing, saving and tamper checks (services.corpus.protocol)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.corpus.loaders import write_manifest
from services.corpus.manifest import Manifest, Utterance
from services.corpus.protocol import (
    Protocol,
    TargetSelection,
    build_protocol,
    load_protocol,
    load_protocol_and_manifest,
    save_protocol,
)
from services.corpus.splits import SpeakerRoles
from services.corpus.validation import DurationFilter
from services.errors import CorpusError


def make_manifest(n_speakers: int, n_utts: int, durations: list[float] | None = None) -> Manifest:
    rows = [
        Utterance(
            utt_id=f"s{k:03d}-{j:03d}",
            speaker_id=f"s{k:03d}",
            gender="f" if k % 2 == 0 else "m",
            path=f"s{k:03d}/{j}.wav",
            duration_s=durations[j % len(durations)] if durations else 3.0,
        )
        for k in range(n_speakers)
        for j in range(n_utts)
    ]
    return Manifest(utterances=tuple(rows))


def _per_speaker(ids: tuple[str, ...]) -> Counter[str]:
    return Counter(i.split("-")[0] for i in ids)


def test_default_protocol_on_synthetic_default_shape() -> None:
    m = make_manifest(120, 40)
    p = build_protocol(m, name="syn")
    r = p.speaker_roles
    assert (len(r.attacker_train), len(r.evaluation), len(r.target)) == (60, 40, 20)
    assert set(_per_speaker(p.enrollment).values()) == {20}
    assert set(_per_speaker(p.trial).values()) == {20}
    assert set(_per_speaker(p.attacker_validation).values()) == {4}
    assert set(_per_speaker(p.attacker_train).values()) == {36}
    assert set(_per_speaker(p.attacker_train)) == set(r.attacker_train)
    assert set(_per_speaker(p.enrollment)) == set(r.evaluation)
    lists = [p.attacker_train, p.attacker_validation, p.enrollment, p.trial]
    assert sum(len(x) for x in lists) == len(set().union(*lists))  # disjoint
    assert p.target_pool == r.target
    assert p.target_selection == TargetSelection(strategy="random", granularity="utterance")
    assert p.manifest_hash == m.content_hash()
    assert p.content_hash == p.compute_hash()


def test_tiny_corpus() -> None:
    m = make_manifest(12, 8)
    p = build_protocol(m, trials_per_speaker=4, enrollments_per_speaker=4)
    r = p.speaker_roles
    assert (len(r.attacker_train), len(r.evaluation), len(r.target)) == (6, 4, 2)
    assert set(_per_speaker(p.trial).values()) == {4}
    assert set(_per_speaker(p.attacker_validation).values()) == {1}


def test_deterministic_and_seed_sensitive() -> None:
    m = make_manifest(24, 10)

    def build(manifest: Manifest, seed: int) -> Protocol:
        return build_protocol(manifest, seed=seed, trials_per_speaker=4, enrollments_per_speaker=4)

    a = build(m, 5)
    assert build(m, 5) == a
    b = build(m, 6)
    assert b.content_hash != a.content_hash
    assert b.speaker_roles != a.speaker_roles
    # Re-ordering the manifest rows changes the manifest hash, not the draws.
    rev = build(m.with_utterances(reversed(m.utterances)), 5)
    assert rev.manifest_hash != a.manifest_hash
    assert (rev.speaker_roles, rev.enrollment, rev.trial, rev.attacker_validation) == (
        a.speaker_roles,
        a.enrollment,
        a.trial,
        a.attacker_validation,
    )


def test_hash_changes_with_any_content() -> None:
    p = build_protocol(make_manifest(12, 8), trials_per_speaker=2, enrollments_per_speaker=2)
    assert p.model_copy(update={"name": "other"}).compute_hash() != p.content_hash
    tsa = TargetSelection(strategy="same-gender", granularity="speaker")
    assert p.model_copy(update={"target_selection": tsa}).compute_hash() != p.content_hash
    assert p.model_copy(update={"content_hash": "x"}).compute_hash() == p.content_hash


def test_duration_filter_applies() -> None:
    m = make_manifest(12, 8, durations=[1.0, 3.0, 30.0, 5.0])
    p = build_protocol(m, trials_per_speaker=1, enrollments_per_speaker=1)
    kept = {u.utt_id for u in m if 2.0 <= u.duration_s <= 25.0}
    assert p.utterance_ids() <= kept
    assert p.duration_filter == DurationFilter()
    with pytest.raises(CorpusError, match="no utterance of the manifest"):
        build_protocol(m, duration_filter=DurationFilter(min_s=40, max_s=50))


def test_explicit_roles() -> None:
    m = make_manifest(6, 4)
    roles = SpeakerRoles(attacker_train=("s000", "s001"), evaluation=("s002", "s003"), target=())
    p = build_protocol(m, roles=roles, trials_per_speaker=2, enrollments_per_speaker=2)
    assert p.speaker_roles == roles
    with pytest.raises(CorpusError, match="s099"):
        build_protocol(m, roles=SpeakerRoles(attacker_train=("s099",), evaluation=(), target=()))


def test_target_selection_validated() -> None:
    with pytest.raises(ValidationError):
        TargetSelection(strategy="nearest")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        TargetSelection(granularity="chapter")  # type: ignore[arg-type]


def _saved(tmp_path: Path) -> tuple[Path, Path, Protocol]:
    mpath = tmp_path / "corpus" / "manifest.jsonl"
    m = write_manifest(make_manifest(12, 8), mpath)  # the rows as the file holds them
    ppath = tmp_path / "protocol.json"
    p = build_protocol(
        m, manifest_path="corpus/manifest.jsonl", trials_per_speaker=3, enrollments_per_speaker=3
    )
    save_protocol(p, ppath)
    return mpath, ppath, p


def test_save_load_round_trip(tmp_path: Path) -> None:
    _, ppath, p = _saved(tmp_path)
    assert load_protocol(ppath) == p
    proto, manifest = load_protocol_and_manifest(ppath)
    assert proto == p
    assert p.utterance_ids() <= {u.utt_id for u in manifest}


def test_tampered_protocol_rejected(tmp_path: Path) -> None:
    _, ppath, _ = _saved(tmp_path)
    data = json.loads(ppath.read_text())
    data["trial"] = data["trial"][:-1]
    ppath.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match="content hash mismatch"):
        load_protocol(ppath)
    data["version"] = 99
    ppath.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match="version 99 is not supported"):
        load_protocol(ppath)
    ppath.write_text("{broken")
    with pytest.raises(CorpusError, match="not valid JSON"):
        load_protocol(ppath)


def test_changed_manifest_rejected(tmp_path: Path) -> None:
    mpath, ppath, _ = _saved(tmp_path)
    lines = mpath.read_text().splitlines()
    row = json.loads(lines[0])
    row["duration_s"] = 4.0
    mpath.write_text("\n".join([json.dumps(row), *lines[1:]]) + "\n")
    with pytest.raises(CorpusError, match="was built from"):
        load_protocol(ppath)
    assert load_protocol(ppath, check_manifest=False).name == "default"


def test_protocol_without_any_trial_is_rejected_with_the_fix(tmp_path: Path) -> None:
    from services.corpus.synthetic import generate_synthetic_corpus

    manifest = generate_synthetic_corpus(tmp_path / "c", n_speakers=12, utts_per_speaker=4)
    with pytest.raises(CorpusError, match=r"no trial utterances.*--enrollments"):
        build_protocol(manifest, enrollments_per_speaker=20, trials_per_speaker=20)
    ok = build_protocol(manifest, enrollments_per_speaker=2, trials_per_speaker=2)
    assert ok.trial and ok.enrollment
