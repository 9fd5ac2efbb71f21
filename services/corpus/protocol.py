"""The evaluation protocol: which speakers and utterances play which part, frozen in one file.

A ``Protocol`` names the manifest it was built from (path and content hash), the speaker roles,
the utterance lists (attacker-train, attacker-validation, enrollment, trial), the target pool, the
target selection settings, the duration filter and the seeds. It is saved as JSON with a
``content_hash`` (SHA-256 of the canonical JSON of every other field); loading checks that hash
and that the manifest on disk still has the recorded content hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.corpus.loaders import read_manifest
from services.corpus.manifest import Manifest
from services.corpus.splits import (
    SpeakerRoles,
    assign_speaker_roles,
    split_evaluation,
    split_validation,
)
from services.corpus.validation import DurationFilter, one_line
from services.errors import CorpusError

PROTOCOL_VERSION = 1
"""Format version of the protocol JSON; loading rejects other versions."""


class TargetSelection(BaseModel):
    """How an anonymizer's target voice is chosen for each utterance (PROTOCOLS.md section 2).

    ``strategy``: ``random`` (uniform over the whole target pool) or ``same-gender`` (uniform over
    targets with the source speaker's gender). ``granularity``: ``utterance`` (a new target per
    utterance) or ``speaker`` (one target per source speaker). It applies to the enrollment and
    trial data; attacker training data is always anonymized at utterance level.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    strategy: Literal["random", "same-gender"] = Field(
        "random", description="random (whole pool) or same-gender (source's gender only)."
    )
    granularity: Literal["utterance", "speaker"] = Field(
        "utterance", description="utterance: a new target per utterance; speaker: one per speaker."
    )
    seed: int = Field(0, description="Seed of the target draws.")


class ProtocolSeeds(BaseModel):
    """Seeds of the random draws (the target selection seed lives in ``TargetSelection``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    roles: int = 0
    evaluation_split: int = 0
    validation_split: int = 0


class TrialList(BaseModel):
    """One published trial list: exactly these (enrollment speaker, trial utterance) pairs are
    scored (a VoicePrivacy ``trials`` file). ``gender``: ``f`` / ``m`` for the per-gender lists,
    ``mixed`` for a list of both genders (cross-gender pairs allowed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="The list's folder, e.g. libri_dev_trials_f.")
    dataset: str = Field(min_length=1, description="The dataset, e.g. libri_dev.")
    gender: Literal["f", "m", "mixed"]
    enrollment_speakers: tuple[str, ...]
    trial_utterances: tuple[str, ...]
    is_target: tuple[bool, ...]

    def __len__(self) -> int:
        return len(self.trial_utterances)

    def pairs(self) -> list[tuple[str, str]]:
        """The (enrollment speaker, trial utterance id) pairs, in list order."""
        return list(zip(self.enrollment_speakers, self.trial_utterances, strict=True))


class FixedTrials(BaseModel):
    """Fixed enrollment and trial lists (PROTOCOLS.md section 1, "VPC-style fixed lists").

    ``folders``: each list folder's utterance ids (``libri_dev_enrolls`` -> enrollment ids,
    ``libri_dev_trials_f`` -> trial ids), ``train_folder``: the folder of the attacker-train and
    validation utterances; a pre-anonymized submission in the VoicePrivacy layout holds
    ``<folder><suffix>/wav/<utt>.wav`` for each of them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Literal["voiceprivacy"] = "voiceprivacy"
    lists: tuple[TrialList, ...] = Field(min_length=1)
    folders: dict[str, tuple[str, ...]]
    train_folder: str

    def n_trials(self) -> int:
        """Pairs in all lists together."""
        return sum(len(t) for t in self.lists)


class Protocol(BaseModel):
    """Speaker roles and utterance lists of one evaluation; every id list is sorted.

    ``fixed_trials``: published trial lists (VoicePrivacy); when set, exactly their pairs are
    scored, instead of every trial utterance against every enrollment speaker.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    version: int = PROTOCOL_VERSION
    manifest_path: str = Field(
        description="Manifest file; a relative path resolves against the protocol file's folder."
    )
    manifest_hash: str = Field(description="Manifest.content_hash() of the (unfiltered) manifest.")
    duration_filter: DurationFilter
    gender_balanced: bool
    speaker_roles: SpeakerRoles
    trials_per_speaker: int = Field(ge=0)
    enrollments_per_speaker: int = Field(ge=0)
    validation_fraction: float = Field(ge=0, lt=1)
    attacker_train: tuple[str, ...]
    attacker_validation: tuple[str, ...]
    enrollment: tuple[str, ...]
    trial: tuple[str, ...]
    target_selection: TargetSelection
    seeds: ProtocolSeeds
    fixed_trials: FixedTrials | None = None
    content_hash: str | None = None

    @property
    def target_pool(self) -> tuple[str, ...]:
        """Speaker ids of the target pool (the voices an anonymizer converts to)."""
        return self.speaker_roles.target

    def compute_hash(self) -> str:
        """SHA-256 (hex) of the canonical JSON of every field except ``content_hash``.

        An unset ``fixed_trials`` is left out, so protocols written before that field existed
        keep their hash.
        """
        exclude = {"content_hash"} | ({"fixed_trials"} if self.fixed_trials is None else set())
        return _canonical_hash(self.model_dump(mode="json", exclude=exclude))

    def with_hash(self) -> Protocol:
        """This protocol with ``content_hash`` set."""
        return self.model_copy(update={"content_hash": self.compute_hash()})

    def utterance_ids(self) -> set[str]:
        """Every utterance id the protocol uses (target-pool utterances not included)."""
        return {*self.attacker_train, *self.attacker_validation, *self.enrollment, *self.trial}


def _canonical_hash(data: Any) -> str:
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def build_protocol(
    manifest: Manifest,
    *,
    name: str = "default",
    manifest_path: str | Path = "manifest.jsonl",
    n_attacker_train_speakers: int | None = None,
    n_eval_speakers: int | None = None,
    n_target_speakers: int | None = None,
    attacker_train_fraction: float | None = None,
    eval_fraction: float | None = None,
    target_fraction: float | None = None,
    trials_per_speaker: int = 20,
    enrollments_per_speaker: int = 20,
    validation_fraction: float = 0.1,
    gender_balanced: bool = True,
    duration_filter: DurationFilter | None = None,
    tsa: TargetSelection | None = None,
    roles: SpeakerRoles | None = None,
    seed: int = 0,
) -> Protocol:
    """Build a protocol from a manifest (the duration filter is applied first).

    Pool sizes: a count or a fraction of the speakers left after filtering; by default a third
    evaluation, a sixth target, the rest attacker-train (120 speakers -> 60 / 40 / 20), see
    ``assign_speaker_roles``. ``roles`` fixes the pools instead (they must be disjoint speakers of
    the manifest). Speakers that the duration filter leaves with no utterance are dropped.
    ``seed`` drives the role draw and both utterance splits; ``tsa`` defaults to random,
    utterance-level target selection with the same seed. The manifest hash recorded is that of
    ``manifest`` as given (before filtering), so it matches the file at ``manifest_path``.
    """
    filt = duration_filter or DurationFilter()
    filtered = filt.apply(manifest).manifest
    if len(filtered) == 0:
        raise CorpusError(
            f"no utterance of the manifest is within the {filt.min_s:g}-{filt.max_s:g} s "
            "duration filter"
        )
    if roles is None:
        roles = assign_speaker_roles(
            filtered,
            n_attacker_train=n_attacker_train_speakers,
            n_evaluation=n_eval_speakers,
            n_target=n_target_speakers,
            attacker_train_fraction=attacker_train_fraction,
            evaluation_fraction=eval_fraction,
            target_fraction=target_fraction,
            gender_balanced=gender_balanced,
            seed=seed,
        )
    else:
        known = set(filtered.speakers())
        missing = [
            s for s in (*roles.attacker_train, *roles.evaluation, *roles.target) if s not in known
        ]
        if missing:
            raise CorpusError(
                f"speaker(s) {', '.join(missing[:10])} of the given roles have no utterance in "
                "the (duration-filtered) manifest"
            )
    seeds = ProtocolSeeds(roles=seed, evaluation_split=seed, validation_split=seed)
    enrollment, trial = split_evaluation(
        filtered,
        roles.evaluation,
        trials_per_speaker=trials_per_speaker,
        enrollments_per_speaker=enrollments_per_speaker,
        seed=seeds.evaluation_split,
    )
    train, validation = split_validation(
        filtered, roles.attacker_train, fraction=validation_fraction, seed=seeds.validation_split
    )
    if trials_per_speaker > 0 and not trial:
        # Enrollment is filled first, so short speaker lists end up with no trial at all: a
        # protocol that cannot score anything is a mistake, not a result.
        most = max(len(v) for k, v in filtered.by_speaker().items() if k in set(roles.evaluation))
        raise CorpusError(
            f"no trial utterances: the evaluation speakers have at most {most} utterances and "
            f"enrollment takes the first {enrollments_per_speaker} of each; lower "
            "enrollments_per_speaker (--enrollments) or use speakers with more utterances"
        )
    protocol = Protocol(
        name=name,
        manifest_path=Path(manifest_path).as_posix(),
        manifest_hash=manifest.content_hash(),
        duration_filter=filt,
        gender_balanced=gender_balanced,
        speaker_roles=roles,
        trials_per_speaker=trials_per_speaker,
        enrollments_per_speaker=enrollments_per_speaker,
        validation_fraction=validation_fraction,
        attacker_train=tuple(train),
        attacker_validation=tuple(validation),
        enrollment=tuple(enrollment),
        trial=tuple(trial),
        target_selection=tsa or TargetSelection(seed=seed),
        seeds=seeds,
    )
    return protocol.with_hash()


def save_protocol(protocol: Protocol, path: str | Path) -> Protocol:
    """Write ``protocol`` as indented JSON with its content hash (atomically); returns it hashed."""
    p = Path(path)
    hashed = protocol.with_hash()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".part")
    unset = {"fixed_trials"} if hashed.fixed_trials is None else None
    data = hashed.model_dump(mode="json", exclude=unset)
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return hashed


def manifest_path_for(protocol_file: str | Path, manifest_file: str | Path) -> str:
    """The ``manifest_path`` to record: relative to the protocol file's folder (POSIX form)."""
    out_dir = Path(protocol_file).resolve().parent
    return Path(os.path.relpath(Path(manifest_file).resolve(), out_dir)).as_posix()


def resolve_manifest_path(protocol: Protocol, protocol_file: str | Path) -> Path:
    """Absolute path of the protocol's manifest (relative paths: from the protocol's folder)."""
    mp = Path(protocol.manifest_path)
    return mp if mp.is_absolute() else (Path(protocol_file).resolve().parent / mp).resolve()


def load_protocol(
    path: str | Path, *, manifest: Manifest | None = None, check_manifest: bool = True
) -> Protocol:
    """Read a protocol JSON, checking its format, version and content hash.

    With ``manifest`` given, its content hash must equal the protocol's ``manifest_hash``;
    otherwise, with ``check_manifest``, the manifest file named by the protocol is read (rows
    only, no audio) and checked. Any mismatch raises ``CorpusError`` naming the file.
    """
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"{p}: protocol file not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{p}: not valid JSON ({one_line(exc)})") from exc
    if not isinstance(data, dict):
        raise CorpusError(f"{p}: expected a JSON object")
    if data.get("version") != PROTOCOL_VERSION:
        raise CorpusError(
            f"{p}: protocol version {data.get('version')!r} is not supported "
            f"(expected {PROTOCOL_VERSION})"
        )
    try:
        protocol = Protocol.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise CorpusError(
            f"{p}: invalid protocol: {where}: {first['msg']}"
            + (f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else "")
        ) from exc
    if protocol.content_hash != protocol.compute_hash():
        raise CorpusError(
            f"{p}: content hash mismatch (file says {protocol.content_hash}, content hashes to "
            f"{protocol.compute_hash()}): the protocol was edited after it was built"
        )
    if manifest is None and check_manifest:
        manifest = read_manifest(resolve_manifest_path(protocol, p), check_audio=False)
    if manifest is not None and manifest.content_hash() != protocol.manifest_hash:
        raise CorpusError(
            f"{p}: manifest {protocol.manifest_path} has content hash {manifest.content_hash()}, "
            f"but the protocol was built from {protocol.manifest_hash}"
        )
    return protocol


def load_protocol_and_manifest(
    path: str | Path, *, check_audio: bool = False
) -> tuple[Protocol, Manifest]:
    """A checked protocol and its manifest, duration filter applied (what the pipeline uses)."""
    p = Path(path)
    protocol = load_protocol(p, check_manifest=False)
    manifest = read_manifest(resolve_manifest_path(protocol, p), check_audio=check_audio)
    load_protocol(p, manifest=manifest)
    return protocol, protocol.duration_filter.apply(manifest).manifest
