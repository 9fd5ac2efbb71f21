"""Speaker roles and utterance splits (PROTOCOLS.md section 1).

Everything here is seeded and independent of the manifest's row order: speakers and utterances
are sorted by id before any random draw, and each speaker's utterance split uses its own random
stream (derived from the seed and the speaker id), so adding or removing one speaker leaves the
other speakers' splits unchanged.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, model_validator

from services.corpus.manifest import Gender, Manifest, Utterance
from services.errors import ConfigError, CorpusError


class SpeakerRoles(BaseModel):
    """Disjoint speaker pools: attacker-train, evaluation, and target (the anonymizer's voices).

    Each pool is sorted by speaker id.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    attacker_train: tuple[str, ...]
    evaluation: tuple[str, ...]
    target: tuple[str, ...]

    @model_validator(mode="after")
    def _disjoint(self) -> SpeakerRoles:
        pools = {
            "attacker_train": self.attacker_train,
            "evaluation": self.evaluation,
            "target": self.target,
        }
        seen: dict[str, str] = {}
        for role, speakers in pools.items():
            if len(set(speakers)) != len(speakers):
                raise ValueError(f"speaker listed twice in the {role} pool")
            for spk in speakers:
                if spk in seen:
                    raise ValueError(f"speaker {spk!r} is in both {seen[spk]} and {role} pools")
                seen[spk] = role
        return self


def _stream(seed: int, *keys: str) -> np.random.Generator:
    """A random generator determined by ``seed`` and string keys (stable across runs/platforms)."""
    words = [int.from_bytes(hashlib.sha256(k.encode()).digest()[:8], "little") for k in keys]
    return np.random.default_rng([seed, *words])


def _resolve_count(
    role: str, count: int | None, fraction: float | None, n_speakers: int
) -> int | None:
    """A pool size from a count or a fraction of all speakers (rounded half up); None = rest."""
    if count is not None and fraction is not None:
        raise ConfigError(f"give either a count or a fraction of {role} speakers, not both")
    if count is not None:
        if count < 0:
            raise ConfigError(f"number of {role} speakers must be >= 0, got {count}")
        return count
    if fraction is not None:
        if not 0 <= fraction <= 1:
            raise ConfigError(f"fraction of {role} speakers must be in [0, 1], got {fraction}")
        return math.floor(fraction * n_speakers + 0.5)
    return None


def _draw(
    role: str,
    n: int,
    pools: dict[Gender, list[str]],
    gender_balanced: bool,
    rank: dict[str, int],
) -> list[str]:
    """Take ``n`` speakers off the front of the (already shuffled) per-gender pools.

    ``rank`` is each speaker's place in the shuffled order over both genders.
    """
    available = len(pools["f"]) + len(pools["m"])
    if n > available:
        raise CorpusError(f"cannot draw {n} {role} speakers: only {available} speakers left")
    if gender_balanced:
        n_f = n // 2
        n_m = n // 2
        if n % 2:  # the odd one goes to the gender with more speakers left (f on a tie)
            if len(pools["f"]) >= len(pools["m"]):
                n_f += 1
            else:
                n_m += 1
        for name, k, pool in (("female", n_f, pools["f"]), ("male", n_m, pools["m"])):
            if k > len(pool):
                raise CorpusError(
                    f"cannot draw {n} gender-balanced {role} speakers: {k} {name} speakers "
                    f"needed, only {len(pool)} left"
                )
        taken = pools["f"][:n_f] + pools["m"][:n_m]
        pools["f"], pools["m"] = pools["f"][n_f:], pools["m"][n_m:]
        return taken
    merged = sorted(pools["f"] + pools["m"], key=rank.__getitem__)
    taken = merged[:n]
    chosen = set(taken)
    pools["f"] = [s for s in pools["f"] if s not in chosen]
    pools["m"] = [s for s in pools["m"] if s not in chosen]
    return taken


def assign_speaker_roles(
    manifest: Manifest,
    *,
    n_attacker_train: int | None = None,
    n_evaluation: int | None = None,
    n_target: int | None = None,
    attacker_train_fraction: float | None = None,
    evaluation_fraction: float | None = None,
    target_fraction: float | None = None,
    gender_balanced: bool = True,
    seed: int = 0,
) -> SpeakerRoles:
    """Assign the manifest's speakers to disjoint attacker-train / evaluation / target pools.

    Each pool size is a count or a fraction of all speakers (rounded half up). Defaults: a third
    of the speakers for evaluation, a sixth as targets, every remaining speaker for attacker
    training (120 speakers -> 60 / 40 / 20). Draw order: evaluation, then target, then
    attacker-train. With ``gender_balanced`` each drawn pool has ``n // 2`` speakers of each
    gender (an odd one goes to the gender with more speakers left); the "rest" attacker-train
    pool takes every remaining speaker whatever its gender.
    """
    speakers = manifest.speakers()
    gender = manifest.speaker_gender()
    n_total = len(speakers)
    n_eval = _resolve_count("evaluation", n_evaluation, evaluation_fraction, n_total)
    n_tgt = _resolve_count("target", n_target, target_fraction, n_total)
    n_att = _resolve_count("attacker-train", n_attacker_train, attacker_train_fraction, n_total)
    if n_eval is None:
        n_eval = math.floor(n_total / 3 + 0.5)
    if n_tgt is None:
        n_tgt = math.floor(n_total / 6 + 0.5)
    rng = _stream(seed, "speaker-roles")
    order = [speakers[i] for i in rng.permutation(n_total)]
    rank = {s: i for i, s in enumerate(order)}
    pools: dict[Gender, list[str]] = {
        "f": [s for s in order if gender[s] == "f"],
        "m": [s for s in order if gender[s] == "m"],
    }
    evaluation = _draw("evaluation", n_eval, pools, gender_balanced, rank)
    target = _draw("target", n_tgt, pools, gender_balanced, rank)
    if n_att is None:
        attacker = pools["f"] + pools["m"]
    else:
        attacker = _draw("attacker-train", n_att, pools, gender_balanced, rank)
    if not attacker:
        raise CorpusError(
            f"no attacker-train speakers left ({n_total} speakers: {n_eval} evaluation, "
            f"{n_tgt} target)"
        )
    return SpeakerRoles(
        attacker_train=tuple(sorted(attacker)),
        evaluation=tuple(sorted(evaluation)),
        target=tuple(sorted(target)),
    )


def _sorted_ids(utts: Sequence[Utterance]) -> list[str]:
    return sorted(u.utt_id for u in utts)


def split_evaluation(
    manifest: Manifest,
    speakers: Sequence[str],
    *,
    trials_per_speaker: int = 20,
    enrollments_per_speaker: int = 20,
    seed: int = 0,
) -> tuple[list[str], list[str]]:
    """Enrollment and trial utterance ids for each evaluation speaker (utterance-disjoint).

    Per speaker, utterances are shuffled (seeded) and enrollment is filled first: a speaker with
    fewer than ``enrollments + trials`` utterances gets ``min(n, enrollments)`` enrollment and
    the rest (up to ``trials``) as trials. Utterances beyond both counts are unused. Returns
    ``(enrollment_ids, trial_ids)``, each sorted.
    """
    if trials_per_speaker < 0 or enrollments_per_speaker < 0:
        raise ConfigError("trials_per_speaker and enrollments_per_speaker must be >= 0")
    groups = manifest.by_speaker()
    enrollment: list[str] = []
    trials: list[str] = []
    for spk in sorted(speakers):
        if spk not in groups:
            raise CorpusError(f"evaluation speaker {spk!r} has no utterance in the manifest")
        ids = _sorted_ids(groups[spk])
        shuffled = [ids[i] for i in _stream(seed, "evaluation-split", spk).permutation(len(ids))]
        n_enr = min(enrollments_per_speaker, len(ids))
        enrollment += shuffled[:n_enr]
        trials += shuffled[n_enr : n_enr + trials_per_speaker]
    return sorted(enrollment), sorted(trials)


def validation_count(n_utterances: int, fraction: float) -> int:
    """How many of a speaker's ``n_utterances`` are held out for validation.

    ``round(fraction * n)`` with halves rounded up, then at least 1 when ``n >= 2`` and at most
    ``n - 1`` (a speaker always keeps one training utterance); 0 when ``n < 2`` or fraction 0.
    """
    if n_utterances < 2 or fraction <= 0:
        return 0
    k = math.floor(fraction * n_utterances + 0.5)
    return min(max(k, 1), n_utterances - 1)


def split_validation(
    manifest: Manifest,
    speakers: Sequence[str],
    *,
    fraction: float = 0.1,
    seed: int = 0,
) -> tuple[list[str], list[str]]:
    """Per-speaker validation hold-out of attacker-train utterances (``validation_count`` each).

    Returns ``(train_ids, validation_ids)``, each sorted.
    """
    if not 0 <= fraction < 1:
        raise ConfigError(f"validation_fraction must be in [0, 1), got {fraction}")
    groups = manifest.by_speaker()
    train: list[str] = []
    validation: list[str] = []
    for spk in sorted(speakers):
        ids = _sorted_ids(groups.get(spk, []))
        k = validation_count(len(ids), fraction)
        perm = _stream(seed, "validation-split", spk).permutation(len(ids))
        held = {ids[i] for i in perm[:k]}
        validation += [i for i in ids if i in held]
        train += [i for i in ids if i not in held]
    return sorted(train), sorted(validation)
