"""`unmask anonymize`: run a built-in anonymizer over a protocol's audio.

Example::

    unmask anonymize --anonymizer pitch --protocol proto.json --out anon/ --set trial
    unmask anonymize --anonymizer vtln --param warp=power --param alpha=0.2 \\
        --protocol proto.json --out anon-fixed/

Targets come from the protocol's target pool and its target selection (TSA): enrollment and trial
use the protocol's strategy and granularity with independent draws (salts ``enrollment`` and
``trial``); attacker-train (training + validation utterances) always uses utterance level. Each
set goes to ``OUT/<set>/`` (``manifest.jsonl``, ``wav/``, ``anonymization.json``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from services.anonymizers.base import TargetVoice
from services.anonymizers.builtin import BuiltinAnonymizer
from services.anonymizers.registry import BUILTIN_NAMES, build_anonymizer
from services.anonymizers.service import anonymize_manifest, build_target_voices
from services.anonymizers.target_selection import select_targets_with, targets_for_utterances
from services.corpus.manifest import Manifest
from services.corpus.protocol import Protocol, load_protocol_and_manifest
from services.errors import InvalidInputError

SetName = Literal["enrollment", "trial", "attacker-train"]
SET_NAMES: tuple[SetName, ...] = ("enrollment", "trial", "attacker-train")


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``["key=value", ...]`` as a dict; InvalidInputError for a malformed or repeated pair."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInputError(f"--param must look like key=value, got {pair!r}")
        if key in out:
            raise InvalidInputError(f"--param {key} given twice")
        out[key] = value.strip()
    return out


def set_utterances(protocol: Protocol, name: SetName) -> tuple[str, ...]:
    """Utterance ids of one set of the protocol (attacker-train includes validation)."""
    if name == "enrollment":
        return protocol.enrollment
    if name == "trial":
        return protocol.trial
    return (*protocol.attacker_train, *protocol.attacker_validation)


def anonymize_protocol_set(
    protocol: Protocol,
    manifest: Manifest,
    anonymizer: BuiltinAnonymizer,
    set_name: SetName,
    out_dir: Path,
    seed: int,
    voices: dict[str, TargetVoice],
) -> Manifest:
    """Select targets for one set with the protocol's TSA and anonymize it into ``out_dir``."""
    subset = manifest.subset(set_utterances(protocol, set_name))
    granularity: Literal["utterance"] | None = "utterance" if set_name == "attacker-train" else None
    mapping = select_targets_with(
        protocol.target_selection, subset, voices, salt=set_name, granularity=granularity
    )
    return anonymize_manifest(
        subset, anonymizer, targets_for_utterances(mapping, voices), out_dir, seed
    )


def anonymize_command(
    anonymizer: Annotated[
        str, typer.Option("--anonymizer", help=f"Built-in: {', '.join(BUILTIN_NAMES)}.")
    ],
    protocol: Annotated[Path, typer.Option("--protocol", help="Protocol JSON.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder (one subfolder per set).")],
    param: Annotated[
        list[str] | None, typer.Option("--param", help="Anonymizer parameter key=value (repeat).")
    ] = None,
    set_name: Annotated[
        str, typer.Option("--set", help="enrollment | trial | attacker-train | all")
    ] = "all",
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed", help="Anonymization seed (jitter); default: the protocol's TSA seed."
        ),
    ] = None,
) -> None:
    """Anonymize a protocol's enrollment / trial / attacker-train audio with a built-in."""
    console = Console(highlight=False, soft_wrap=True)
    if set_name != "all" and set_name not in SET_NAMES:
        raise InvalidInputError(
            f"--set must be one of {', '.join(SET_NAMES)}, all; got {set_name!r}"
        )
    built = build_anonymizer(anonymizer, parse_params(param or []))
    proto, manifest = load_protocol_and_manifest(protocol)
    run_seed = proto.target_selection.seed if seed is None else seed
    sets: list[SetName] = list(SET_NAMES) if set_name == "all" else [set_name]  # type: ignore[list-item]

    target_manifest = manifest.subset(
        u.utt_id for u in manifest if u.speaker_id in set(proto.target_pool)
    )
    genders = target_manifest.speaker_gender()
    needs_profiles = built.uses_profiles and built.fixed is None
    started = time.perf_counter()
    if needs_profiles:
        voices = build_target_voices(target_manifest)
    else:
        voices = {t: TargetVoice(target_id=t, gender=genders[t]) for t in sorted(genders)}
    if not voices:
        raise InvalidInputError(f"{protocol}: the protocol's target pool has no utterance")

    console.print(
        f"anonymizer {built.name} {built.config()} seed {run_seed}, "
        f"{len(voices)} target voices, TSA {proto.target_selection.strategy}/"
        f"{proto.target_selection.granularity}"
    )
    for name in sets:
        t0 = time.perf_counter()
        result = anonymize_protocol_set(proto, manifest, built, name, out / name, run_seed, voices)
        elapsed = time.perf_counter() - t0
        audio_s = sum(u.duration_s for u in result)
        n_targets = len({u.target_id for u in result})
        console.print(
            f"{name}: {len(result)} utterances, {len(result.speakers())} speakers, "
            f"{n_targets} distinct targets, {audio_s / 60:.1f} min of audio in {elapsed:.1f} s "
            f"-> {out / name / 'manifest.jsonl'}"
        )
    console.print(f"done in {time.perf_counter() - started:.1f} s")
