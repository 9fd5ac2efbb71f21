"""Protocols from the VoicePrivacy Challenge's published lists (PROTOCOLS.md sections 1 and 13).

Under a lists root (a VoicePrivacy ``data/`` folder) the ``<dataset>_enrolls`` folders give the
enrollment utterances (their ``enrolls`` file), the ``<dataset>_trials_f`` / ``_trials_m`` (or a
mixed-gender ``<dataset>_trials``) folders the trials (their ``trials`` file, lines
``<enroll speaker> <trial utt> target|nontarget``), and the ``--train`` folder (default
``train-clean-360``) the attacker's training speech. The protocol records every list, so the
score stage scores exactly the listed pairs; the attacker-train speakers' utterances are split
into train and validation as usual (``split_validation``). The duration filter keeps every listed
utterance (the lists are used as published).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from services.corpus.kaldi import (
    VPC_FOLDER,
    is_data_folder,
    is_suffixed_copy,
    read_table,
    utterance_speakers,
)
from services.corpus.manifest import Manifest
from services.corpus.protocol import (
    FixedTrials,
    Protocol,
    ProtocolSeeds,
    TargetSelection,
    TrialList,
)
from services.corpus.splits import SpeakerRoles, split_validation
from services.corpus.validation import DurationFilter
from services.errors import CorpusError

DEFAULT_TRAIN_FOLDER = "train-clean-360"
_LABELS = {"target": True, "nontarget": False}


@dataclass(frozen=True)
class ListFolder:
    """A list folder under the lists root: its path, dataset and role."""

    path: Path
    dataset: str
    role: Literal["enrolls", "trials_f", "trials_m", "trials"]


def list_folders(root: Path) -> list[ListFolder]:
    """The ``*_enrolls`` / ``*_trials_f`` / ``*_trials_m`` / ``*_trials`` folders of ``root``
    (suffixed anonymized copies left out), sorted by name."""
    if not root.is_dir():
        raise CorpusError(f"{root}: lists folder not found")
    subs = sorted(p for p in root.iterdir() if p.is_dir())
    names = {p.name for p in subs}
    out = []
    for p in subs:
        m = VPC_FOLDER.match(p.name)
        if m is None or is_suffixed_copy(p.name, names):
            continue
        out.append(ListFolder(p, m["dataset"], m["role"]))  # type: ignore[arg-type]
    return out


def _enrolls(folder: ListFolder, by_id: dict[str, str]) -> list[str]:
    path = folder.path / "enrolls"
    if not path.is_file():
        raise CorpusError(f"{folder.path}: no enrolls file (the enrollment utterance ids)")
    ids: list[str] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        utt = line.strip().split(" ")[0] if line.strip() else ""
        if not utt or utt in seen:
            continue
        if utt not in by_id:
            raise CorpusError(
                f"{path}:{n}: enrollment utterance {utt!r} is not in the manifest (import this "
                "folder too, without a duration filter: --min-duration 0)"
            )
        seen.add(utt)
        ids.append(utt)
    if not ids:
        raise CorpusError(f"{path}: no enrollment utterance listed")
    return ids


def _trials(folder: ListFolder, speaker_of: dict[str, str], enrolled: set[str]) -> TrialList:
    path = folder.path / "trials"
    if not path.is_file():
        raise CorpusError(f"{folder.path}: no trials file")
    enroll_spk: list[str] = []
    utts: list[str] = []
    labels: list[bool] = []
    seen: dict[tuple[str, str], int] = {}
    for n, key, rest in read_table(path, what="trials"):
        parts = rest.split()
        if len(parts) != 2 or parts[1] not in _LABELS:
            raise CorpusError(
                f"{path}:{n}: expected '<enroll speaker> <trial utt> target|nontarget', got "
                f"{key} {rest!r:.60}"
            )
        utt, label = parts[0], _LABELS[parts[1]]
        if key not in enrolled:
            raise CorpusError(
                f"{path}:{n}: unknown speaker {key!r}: not a speaker of {folder.dataset}_enrolls"
            )
        spk = speaker_of.get(utt)
        if spk is None:
            raise CorpusError(f"{path}:{n}: trial utterance {utt!r} is not in the manifest")
        if (spk == key) != label:
            raise CorpusError(
                f"{path}:{n}: labelled {parts[1]} but utterance {utt!r} is of speaker {spk!r}"
            )
        if (key, utt) in seen:
            raise CorpusError(
                f"{path}:{n}: duplicate trial {key} {utt} (also line {seen[key, utt]})"
            )
        seen[key, utt] = n
        enroll_spk.append(key)
        utts.append(utt)
        labels.append(label)
    if not utts:
        raise CorpusError(f"{path}: no trial listed")
    gender: Literal["f", "m", "mixed"] = (
        "f" if folder.role == "trials_f" else "m" if folder.role == "trials_m" else "mixed"
    )
    return TrialList(
        name=folder.path.name,
        dataset=folder.dataset,
        gender=gender,
        enrollment_speakers=tuple(enroll_spk),
        trial_utterances=tuple(utts),
        is_target=tuple(labels),
    )


def build_vpc_protocol(
    manifest: Manifest,
    lists_root: str | Path,
    *,
    train: str = DEFAULT_TRAIN_FOLDER,
    name: str = "voiceprivacy",
    manifest_path: str | Path = "manifest.jsonl",
    validation_fraction: float = 0.1,
    seed: int = 0,
) -> Protocol:
    """A protocol whose enrollment and trials are the published lists under ``lists_root``.

    Enrollment = the ``enrolls`` lists; trials = the ``trials`` lists (each kept as a
    `TrialList`); attacker-train = the utterances of the folder ``train`` (its ``utt2spk``),
    ``validation_fraction`` of each speaker held out. Every malformed or inconsistent line raises
    ``CorpusError`` naming the file and line: a listed utterance missing from the manifest, an
    unknown enrollment speaker, a label that contradicts the speakers, a duplicate trial.
    """
    root = Path(lists_root)
    folders = list_folders(root)
    by_id = {u.utt_id: u.speaker_id for u in manifest.utterances}
    enrolls = [f for f in folders if f.role == "enrolls"]
    trials = [f for f in folders if f.role != "enrolls"]
    if not enrolls or not trials:
        raise CorpusError(
            f"{root}: expected <dataset>_enrolls and <dataset>_trials_f / _trials_m folders, "
            f"found {', '.join(f.path.name for f in folders) or 'none'}"
        )
    enrollment_of: dict[str, list[str]] = {}
    lists_folders: dict[str, tuple[str, ...]] = {}
    for f in enrolls:
        ids = _enrolls(f, by_id)
        enrollment_of.setdefault(f.dataset, []).extend(ids)
        lists_folders[f.path.name] = tuple(sorted(ids))
    lists: list[TrialList] = []
    for f in trials:
        if f.dataset not in enrollment_of:
            raise CorpusError(f"{f.path}: no {f.dataset}_enrolls folder beside it")
        enrolled = {by_id[u] for u in enrollment_of[f.dataset]}
        t = _trials(f, by_id, enrolled)
        lists.append(t)
        lists_folders[f.path.name] = tuple(sorted(set(t.trial_utterances)))
    enrollment = sorted({u for ids in enrollment_of.values() for u in ids})
    trial = sorted({u for t in lists for u in t.trial_utterances})
    both = sorted(set(enrollment) & set(trial))
    if both:
        raise CorpusError(
            f"{root}: {len(both)} utterance(s) are both enrollment and trial, e.g. {both[0]!r}"
        )
    train_dir = root / train
    if not is_data_folder(train_dir):
        raise CorpusError(f"{train_dir}: the attacker-train folder (--train) is not a data folder")
    train_ids = sorted(utterance_speakers(train_dir))
    missing = [u for u in train_ids if u not in by_id]
    if missing:
        raise CorpusError(
            f"{train_dir}: {len(missing)} utterance(s) are not in the manifest, e.g. "
            f"{missing[0]!r} (import this folder too)"
        )
    train_manifest = manifest.subset(train_ids)
    train_speakers = tuple(train_manifest.speakers())
    eval_speakers = tuple(sorted({by_id[u] for u in (*enrollment, *trial)}))
    try:
        roles = SpeakerRoles(attacker_train=train_speakers, evaluation=eval_speakers, target=())
    except ValidationError as exc:
        raise CorpusError(
            f"{root}: the {train} speakers and the evaluation speakers must be disjoint "
            f"({exc.errors()[0]['msg'].removeprefix('Value error, ')})"
        ) from None
    fit, validation = split_validation(
        train_manifest, train_speakers, fraction=validation_fraction, seed=seed
    )
    used = manifest.subset({*enrollment, *trial, *train_ids})
    longest = max(u.duration_s for u in used.utterances)
    protocol = Protocol(
        name=name,
        manifest_path=Path(manifest_path).as_posix(),
        manifest_hash=manifest.content_hash(),
        duration_filter=DurationFilter(min_s=0.0, max_s=longest),
        gender_balanced=False,
        speaker_roles=roles,
        trials_per_speaker=0,
        enrollments_per_speaker=0,
        validation_fraction=validation_fraction,
        attacker_train=tuple(fit),
        attacker_validation=tuple(validation),
        enrollment=tuple(enrollment),
        trial=tuple(trial),
        target_selection=TargetSelection(seed=seed),
        seeds=ProtocolSeeds(roles=seed, evaluation_split=seed, validation_split=seed),
        fixed_trials=FixedTrials(lists=tuple(lists), folders=lists_folders, train_folder=train),
    )
    return protocol.with_hash()
