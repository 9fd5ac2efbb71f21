"""The request a maker of a pre-anonymized archive answers: every utterance of the protocol's
sets with its source gender and the target voice the TSA chose (the container job file's
structure), and what a validated archive must hold (docs/container-contract.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.anonymizers.base import TargetVoice
from services.anonymizers.contract import (
    CONTRACT_NAME,
    CONTRACT_VERSION,
    SET_NAMES,
    output_stem,
    target_description,
)
from services.anonymizers.target_selection import select_targets_with
from services.audio import SAMPLE_RATE_HZ
from services.corpus.manifest import Gender, Manifest
from services.corpus.protocol import Protocol, TargetSelection
from services.errors import ConfigError


def plan_protocol_targets(
    protocol: Protocol,
    manifest: Manifest,
    tsa: TargetSelection | None = None,
    target_voices: Mapping[str, TargetVoice] | None = None,
) -> dict[str, dict[str, str]]:
    """Set name -> (utt id -> target speaker id), drawn exactly as the evaluation pipeline does.

    Attacker-train and validation data at utterance level, enrollment and trial at the TSA's
    granularity, each set with its own salt (the set name). ``target_voices`` defaults to the
    genders of the protocol's target-pool speakers present in ``manifest``.
    """
    tsa = tsa or protocol.target_selection
    pool: Mapping[str, Gender] | Mapping[str, TargetVoice]
    if target_voices is not None:
        pool = target_voices
    else:
        wanted = set(protocol.target_pool)
        pool = {s: g for s, g in manifest.speaker_gender().items() if s in wanted}
    ids = _protocol_sets(protocol)
    plan: dict[str, dict[str, str]] = {}
    for name in SET_NAMES:
        subset = manifest.subset(ids[name])
        if len(subset) != len(ids[name]):
            missing = sorted(set(ids[name]) - {u.utt_id for u in subset})
            raise ConfigError(
                f"protocol {protocol.name!r}: {len(missing)} utterance(s) of set {name} are not "
                f"in the manifest, e.g. {', '.join(missing[:5])}"
            )
        granularity = "utterance" if name in ("train", "validation") else tsa.granularity
        plan[name] = (
            select_targets_with(tsa, subset, pool, salt=name, granularity=granularity)
            if len(subset)
            else {}
        )
    return plan


def _protocol_sets(protocol: Protocol) -> dict[str, tuple[str, ...]]:
    return {
        "train": protocol.attacker_train,
        "validation": protocol.attacker_validation,
        "enrollment": protocol.enrollment,
        "trial": protocol.trial,
    }


def protocol_request(
    protocol: Protocol,
    manifest: Manifest,
    tsa: TargetSelection | None = None,
    target_voices: Mapping[str, TargetVoice] | None = None,
) -> dict[str, Any]:
    """What a maker must anonymize for ``protocol`` (JSON-able; docs/container-contract.md).

    One entry per utterance of the four sets (train, validation, enrollment, trial) with its
    source file (relative to the corpus root when it is under it), duration (seconds), source
    gender, the target the TSA chose, and ``output``: the archive member to write
    (``<set>/<stem>.wav``). Same structure as the container job file, plus ``set``.
    """
    tsa = tsa or protocol.target_selection
    plan = plan_protocol_targets(protocol, manifest, tsa, target_voices)
    genders = manifest.speaker_gender()
    by_id = {u.utt_id: u for u in manifest.utterances}
    root = Path(manifest.root).resolve()
    used_targets: dict[str, dict[str, Any]] = {}
    utterances: list[dict[str, Any]] = []
    for name in SET_NAMES:
        for utt_id, target_id in plan[name].items():
            u = by_id[utt_id]
            voice = target_voices.get(target_id) if target_voices else None
            t_gender = voice.gender if voice is not None else genders[target_id]
            used_targets.setdefault(target_id, target_description(target_id, t_gender, voice))
            path = manifest.resolve(u)
            try:
                file = path.relative_to(root).as_posix()
            except ValueError:
                file = path.as_posix()
            utterances.append(
                {
                    "utt_id": utt_id,
                    "set": name,
                    "file": file,
                    "output": f"{name}/{output_stem(utt_id)}.wav",
                    "duration_s": u.duration_s,
                    "source_gender": u.gender,
                    "target": {"speaker_id": target_id, "gender": t_gender},
                }
            )
    return {
        "contract": CONTRACT_NAME,
        "contract_version": CONTRACT_VERSION,
        "kind": "protocol-request",
        "protocol": {
            "name": protocol.name,
            "content_hash": protocol.content_hash,
            "manifest_hash": protocol.manifest_hash,
        },
        "target_selection": tsa.model_dump(mode="json"),
        "sample_rate_hz": SAMPLE_RATE_HZ,
        "sets": {name: len(plan[name]) for name in SET_NAMES},
        "targets": dict(sorted(used_targets.items())),
        "utterances": utterances,
    }


def expected_from_protocol(protocol: Protocol) -> dict[str, list[str]]:
    """Set name -> utterance ids an archive for ``protocol`` must contain."""
    return {name: list(ids) for name, ids in _protocol_sets(protocol).items()}


def vpc_folders_of(protocol: Protocol) -> dict[str, str] | None:
    """utt id -> its VoicePrivacy data folder (``libri_dev_enrolls``, ``train-clean-360``, ...)
    for a protocol built from the VoicePrivacy lists, else None: an archive for it may then use
    the VoicePrivacy layout ``<folder><suffix>/wav/<utt>.wav``."""
    fixed = protocol.fixed_trials
    if fixed is None:
        return None
    out = {u: fixed.train_folder for u in (*protocol.attacker_train, *protocol.attacker_validation)}
    for folder, ids in fixed.folders.items():
        out.update(dict.fromkeys(ids, folder))
    return out
