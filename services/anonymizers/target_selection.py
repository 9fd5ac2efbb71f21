"""Target selection algorithms (TSA) and granularity (PROTOCOLS.md section 2).

* **random**: the target is uniform over the whole pool; **same-gender**: uniform over the pool's
  targets with the source speaker's gender.
* **speaker** granularity: one target per source speaker, drawn from a hash of
  (seed, salt, speaker id).
* **utterance** granularity: a new target per utterance. A speaker's utterances are ordered by a
  hash of (seed, salt, utt id) and walk through a seeded permutation of the candidates (a fresh
  permutation each time the candidates run out), so a speaker's utterances get *distinct* targets
  while there are enough, and each utterance's target is still uniform over the candidates.

Every draw is a function of (seed, salt, id), never of input order: the same utterances in any
order give the same mapping. ``salt`` separates independent draws over the same utterances, e.g.
``"enrollment"`` and ``"trial"`` (PROTOCOLS.md: enrollment and trial get independent targets).
A target whose id equals the source speaker's id is never chosen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from services.anonymizers.base import TargetVoice
from services.anonymizers.seeding import keyed_int, keyed_rng
from services.corpus.manifest import Gender, Manifest, Utterance
from services.corpus.protocol import TargetSelection
from services.errors import ConfigError

Strategy = Literal["random", "same-gender"]
Granularity = Literal["utterance", "speaker"]


TargetPool = Mapping[str, Gender] | Mapping[str, TargetVoice] | Sequence[TargetVoice]
"""Target id -> gender, target id -> `TargetVoice`, or a sequence of `TargetVoice`."""


def _pool_genders(pool: TargetPool) -> dict[str, Gender]:
    if isinstance(pool, Mapping):
        return {str(k): (v.gender if isinstance(v, TargetVoice) else v) for k, v in pool.items()}
    return {t.target_id: t.gender for t in pool}


def select_targets(
    utterances: Iterable[Utterance] | Manifest,
    pool: TargetPool,
    *,
    strategy: Strategy = "random",
    granularity: Granularity = "utterance",
    seed: int = 0,
    salt: str = "",
) -> dict[str, str]:
    """Map each utterance id to a target id of ``pool`` (see `TargetPool`).

    Returns a dict sorted by utterance id. Raises ``ConfigError`` for an unknown strategy or
    granularity, an empty pool, or a source gender with no same-gender target.
    """
    if strategy not in ("random", "same-gender"):
        raise ConfigError(
            f"target selection strategy must be random or same-gender, got {strategy!r}"
        )
    if granularity not in ("utterance", "speaker"):
        raise ConfigError(
            f"target selection granularity must be utterance or speaker, got {granularity!r}"
        )
    genders = _pool_genders(pool)
    if not genders:
        raise ConfigError("the target pool is empty")
    all_targets = sorted(genders)
    by_gender = {g: [t for t in all_targets if genders[t] == g] for g in ("f", "m")}

    by_speaker: dict[str, list[Utterance]] = {}
    for u in utterances:
        by_speaker.setdefault(u.speaker_id, []).append(u)

    mapping: dict[str, str] = {}
    for speaker, utts in sorted(by_speaker.items()):
        gender = utts[0].gender
        base = by_gender[gender] if strategy == "same-gender" else all_targets
        candidates = [t for t in base if t != speaker]
        if not candidates:
            what = f"gender {gender!r} " if strategy == "same-gender" else ""
            raise ConfigError(
                f"no {what}target available for source speaker {speaker!r} "
                f"(pool of {len(all_targets)} targets)"
            )
        n = len(candidates)
        if granularity == "speaker":
            chosen = candidates[keyed_int("tsa-speaker", seed, salt, speaker) % n]
            for u in utts:
                mapping[u.utt_id] = chosen
            continue
        ordered = sorted(
            utts, key=lambda u: (keyed_int("tsa-order", seed, salt, u.utt_id), u.utt_id)
        )
        perms: dict[int, list[int]] = {}
        for k, u in enumerate(ordered):
            cycle, pos = divmod(k, n)
            if cycle not in perms:
                perms[cycle] = (
                    keyed_rng("tsa-perm", seed, salt, speaker, cycle).permutation(n).tolist()
                )
            mapping[u.utt_id] = candidates[perms[cycle][pos]]
    return dict(sorted(mapping.items()))


def select_targets_with(
    selection: TargetSelection,
    utterances: Iterable[Utterance] | Manifest,
    pool: TargetPool,
    *,
    salt: str = "",
    granularity: Granularity | None = None,
) -> dict[str, str]:
    """`select_targets` with a protocol's `TargetSelection` (``granularity`` overrides it).

    Attacker training data is always anonymized at utterance level (PROTOCOLS.md section 2):
    pass ``granularity="utterance"`` for it.
    """
    return select_targets(
        utterances,
        pool,
        strategy=selection.strategy,
        granularity=granularity or selection.granularity,
        seed=selection.seed,
        salt=salt,
    )


def targets_for_utterances(
    mapping: Mapping[str, str], voices: Mapping[str, TargetVoice]
) -> dict[str, TargetVoice]:
    """Utterance id -> `TargetVoice`, from a TSA mapping and the pool's voices by target id."""
    missing = sorted({t for t in mapping.values() if t not in voices})
    if missing:
        raise ConfigError(f"target(s) {', '.join(missing[:5])} have no voice in the target pool")
    return {utt: voices[t] for utt, t in mapping.items()}
