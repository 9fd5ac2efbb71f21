"""The protocol request a maker answers with an archive (services.anonymizers.archive_request)."""

from __future__ import annotations

import json

from services.anonymizers.archive_request import (
    expected_from_protocol,
    plan_protocol_targets,
    protocol_request,
)
from services.anonymizers.contract import SET_NAMES
from services.anonymizers.target_selection import select_targets_with
from services.corpus.manifest import Manifest, Utterance
from services.corpus.protocol import TargetSelection, build_protocol


def make_manifest(n_speakers: int = 18, n_utts: int = 6) -> Manifest:
    rows = [
        Utterance(
            utt_id=f"s{k:03d}-{j:03d}",
            speaker_id=f"s{k:03d}",
            gender="f" if k % 2 == 0 else "m",
            path=f"s{k:03d}/{j}.wav",
            duration_s=3.0 + 0.1 * j,
        )
        for k in range(n_speakers)
        for j in range(n_utts)
    ]
    return Manifest(utterances=tuple(rows), root="/corpus")


def test_request_lists_every_protocol_utterance_once_with_a_valid_target() -> None:
    manifest = make_manifest()
    tsa = TargetSelection(strategy="same-gender", granularity="speaker", seed=3)
    protocol = build_protocol(manifest, trials_per_speaker=2, enrollments_per_speaker=2, tsa=tsa)
    request = protocol_request(protocol, manifest)
    json.dumps(request)  # JSON-able
    utts = request["utterances"]
    expected = expected_from_protocol(protocol)
    assert [u["utt_id"] for u in utts] == [u for s in SET_NAMES for u in expected[s]]
    assert request["sets"] == {s: len(expected[s]) for s in SET_NAMES}
    genders = manifest.speaker_gender()
    speaker_of = {u.utt_id: u.speaker_id for u in manifest}
    pool = set(protocol.target_pool)
    for u in utts:
        target = u["target"]["speaker_id"]
        assert target in pool and target != speaker_of[u["utt_id"]]
        assert u["target"]["gender"] == u["source_gender"] == genders[speaker_of[u["utt_id"]]]
        assert u["output"] == f"{u['set']}/{u['utt_id']}.wav"
        assert (
            u["file"]
            == f"{speaker_of[u['utt_id']]}/{u['utt_id'].split('-')[1].lstrip('0') or '0'}.wav"
        )
        assert request["targets"][target]["gender"] == genders[target]
    # Speaker granularity for enrollment/trial: one target per source speaker and set.
    for set_name in ("enrollment", "trial"):
        per_speaker: dict[str, set[str]] = {}
        for u in utts:
            if u["set"] == set_name:
                per_speaker.setdefault(speaker_of[u["utt_id"]], set()).add(
                    u["target"]["speaker_id"]
                )
        assert all(len(t) == 1 for t in per_speaker.values())


def test_plan_matches_the_pipeline_draw() -> None:
    manifest = make_manifest()
    protocol = build_protocol(manifest, trials_per_speaker=2, enrollments_per_speaker=2)
    plan = plan_protocol_targets(protocol, manifest)
    pool = {s: g for s, g in manifest.speaker_gender().items() if s in protocol.target_pool}
    tsa = protocol.target_selection
    trial = manifest.subset(protocol.trial)
    assert plan["trial"] == select_targets_with(tsa, trial, pool, salt="trial")
    train = manifest.subset(protocol.attacker_train)
    assert plan["train"] == select_targets_with(
        tsa, train, pool, salt="train", granularity="utterance"
    )
