"""`unmask corpus ...`: import, validate, synthesize corpora; build protocols."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

from services.corpus.importers import import_corpus
from services.corpus.loaders import load_manifest, write_manifest
from services.corpus.manifest import Manifest
from services.corpus.protocol import (
    Protocol,
    TargetSelection,
    build_protocol,
    load_protocol,
    manifest_path_for,
    save_protocol,
)
from services.corpus.validation import DurationFilter, ManifestProblem
from services.errors import ConfigError

corpus_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)

_MAX_SHOWN_PROBLEMS = 20


def _console() -> Console:
    # Built per call so output goes to the current sys.stdout (tests capture it).
    return Console(highlight=False, soft_wrap=True)


def _summary(manifest: Manifest) -> str:
    genders = Counter(manifest.speaker_gender().values())
    hours = sum(u.duration_s for u in manifest) / 3600
    return (
        f"{len(manifest)} utterances, {len(manifest.speakers())} speakers "
        f"({genders.get('f', 0)} f, {genders.get('m', 0)} m), {hours:.2f} h"
    )


def _print_skipped(console: Console, problems: list[ManifestProblem], omitted: int = 0) -> None:
    """The first problems and how many more there are (``omitted``: found but not kept)."""
    total = len(problems) + omitted
    if not total:
        return
    console.print(f"[yellow]skipped {total} problem(s):[/yellow]")
    for p in problems[:_MAX_SHOWN_PROBLEMS]:
        console.print(f"  {p}", markup=False)
    shown = min(len(problems), _MAX_SHOWN_PROBLEMS)
    if total > shown:
        console.print(f"  ... and {total - shown} more")


def _duration_filter(min_duration: float, max_duration: float) -> DurationFilter:
    if not 0 <= min_duration <= max_duration:
        raise ConfigError(
            f"need 0 <= --min-duration <= --max-duration, got {min_duration}, {max_duration}"
        )
    return DurationFilter(min_s=min_duration, max_s=max_duration)


@corpus_app.command("import")
def import_command(
    src: Annotated[Path, typer.Argument(help="Corpus folder (or .csv/.jsonl manifest).")],
    out: Annotated[Path, typer.Option("--out", help="Manifest to write (.jsonl or .csv).")],
    layout: Annotated[
        str,
        typer.Option(
            "--layout",
            help="librispeech | libritts | librispeech-tts | folder (audio files + "
            "speakers.csv) | kaldi (Kaldi / VoicePrivacy data folders) | csv | jsonl",
        ),
    ],
    skip_invalid: Annotated[
        bool, typer.Option("--skip-invalid", help="Skip and report bad rows/files.")
    ] = False,
    min_duration: Annotated[
        float | None,
        typer.Option(help="Shortest kept utterance (s); default 2, kaldi layout: no bound."),
    ] = None,
    max_duration: Annotated[
        float | None,
        typer.Option(help="Longest kept utterance (s); default 25, kaldi layout: no bound."),
    ] = None,
    allow_audio_under: Annotated[
        list[Path] | None,
        typer.Option(
            "--allow-audio-under",
            help="kaldi layout: also read audio files wav.scp names under this folder "
            "(repeatable); by default only files under the toolkit root (the data folders' "
            "grandparent) are read.",
        ),
    ] = None,
) -> None:
    """Import a corpus into a manifest (durations from the audio headers, duration filter)."""
    # The VoicePrivacy lists are used as published: the kaldi layout keeps every duration
    # unless asked otherwise, so every listed utterance stays in the manifest.
    unbounded = layout == "kaldi"
    lowest = min_duration if min_duration is not None else (0.0 if unbounded else 2.0)
    longest = max_duration if max_duration is not None else (1e9 if unbounded else 25.0)
    report = import_corpus(
        layout,
        src,
        skip_invalid=skip_invalid,
        duration_filter=_duration_filter(lowest, longest),
        allow_audio_under=allow_audio_under or (),
    )
    console = _console()
    _print_skipped(console, report.problems, report.omitted_problems)
    if len(report.manifest) == 0:
        raise ConfigError(f"{src}: nothing left to import")
    written = write_manifest(report.manifest, out)
    console.print(f"wrote {out}: {_summary(written)}", markup=False)


@corpus_app.command("synth")
def synth_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for the WAVs and manifest.jsonl.")],
    speakers: Annotated[int, typer.Option("--speakers", help="Number of speakers.")] = 120,
    utterances: Annotated[int, typer.Option("--utterances", help="Utterances per speaker.")] = 40,
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
) -> None:
    """Generate the built-in synthetic corpus (deterministic for a seed)."""
    from services.corpus.synthetic import generate_synthetic_corpus  # heavy, only when needed

    manifest = generate_synthetic_corpus(
        out, n_speakers=speakers, utts_per_speaker=utterances, seed=seed
    )
    _console().print(f"wrote {out / 'manifest.jsonl'}: {_summary(manifest)}", markup=False)


@corpus_app.command("protocol")
def protocol_command(
    manifest: Annotated[Path, typer.Argument(help="Manifest (.jsonl or .csv).")],
    out: Annotated[Path, typer.Option("--out", help="Protocol JSON to write.")],
    name: Annotated[str, typer.Option(help="Protocol name.")] = "default",
    attacker_speakers: Annotated[
        int | None, typer.Option(help="Attacker-train speakers (default: all the rest).")
    ] = None,
    eval_speakers: Annotated[
        int | None, typer.Option(help="Evaluation speakers (default: a third).")
    ] = None,
    target_speakers: Annotated[
        int | None, typer.Option(help="Target-pool speakers (default: a sixth).")
    ] = None,
    trials: Annotated[int, typer.Option(help="Trial utterances per evaluation speaker.")] = 20,
    enrollments: Annotated[
        int, typer.Option(help="Enrollment utterances per evaluation speaker.")
    ] = 20,
    validation_fraction: Annotated[
        float, typer.Option(help="Held-out share of each attacker-train speaker.")
    ] = 0.1,
    gender_balanced: Annotated[
        bool, typer.Option("--gender-balanced/--no-gender-balanced", help="Balance pools.")
    ] = True,
    tsa_strategy: Annotated[
        str, typer.Option(help="Target selection: random | same-gender.")
    ] = "random",
    tsa_granularity: Annotated[
        str, typer.Option(help="Target per utterance | speaker (evaluation data).")
    ] = "utterance",
    min_duration: Annotated[float, typer.Option(help="Shortest used utterance (s).")] = 2.0,
    max_duration: Annotated[float, typer.Option(help="Longest used utterance (s).")] = 25.0,
    seed: Annotated[int, typer.Option(help="Seed of roles, splits and target selection.")] = 0,
    check_audio: Annotated[
        bool, typer.Option("--check-audio/--no-check-audio", help="Check every audio file.")
    ] = True,
    vpc_lists: Annotated[
        Path | None,
        typer.Option(
            "--vpc-lists",
            help="VoicePrivacy data folder: enrollment and trials exactly as its *_enrolls / "
            "*_trials_f / *_trials_m lists (speaker and split options are then unused).",
        ),
    ] = None,
    train: Annotated[
        str, typer.Option("--train", help="With --vpc-lists: the attacker-train folder.")
    ] = "train-clean-360",
) -> None:
    """Assign speaker roles, split utterances and write a protocol JSON."""
    if vpc_lists is not None:
        from services.corpus.voiceprivacy import build_vpc_protocol

        loaded = load_manifest(manifest, check_audio=check_audio).manifest
        protocol = build_vpc_protocol(
            loaded,
            vpc_lists,
            train=train,
            name=name if name != "default" else "voiceprivacy",
            manifest_path=manifest_path_for(out, manifest),
            validation_fraction=validation_fraction,
            seed=seed,
        )
        saved = save_protocol(protocol, out)
        _console().print(f"wrote {out}: {_protocol_summary(saved)}", markup=False)
        return
    if tsa_strategy not in ("random", "same-gender"):
        raise ConfigError(f"--tsa-strategy must be random or same-gender, got {tsa_strategy!r}")
    if tsa_granularity not in ("utterance", "speaker"):
        raise ConfigError(
            f"--tsa-granularity must be utterance or speaker, got {tsa_granularity!r}"
        )
    strategy: Literal["random", "same-gender"] = (
        "random" if tsa_strategy == "random" else "same-gender"
    )
    granularity: Literal["utterance", "speaker"] = (
        "utterance" if tsa_granularity == "utterance" else "speaker"
    )
    loaded = load_manifest(manifest, check_audio=check_audio).manifest
    protocol = build_protocol(
        loaded,
        name=name,
        manifest_path=manifest_path_for(out, manifest),
        n_attacker_train_speakers=attacker_speakers,
        n_eval_speakers=eval_speakers,
        n_target_speakers=target_speakers,
        trials_per_speaker=trials,
        enrollments_per_speaker=enrollments,
        validation_fraction=validation_fraction,
        gender_balanced=gender_balanced,
        duration_filter=_duration_filter(min_duration, max_duration),
        tsa=TargetSelection(strategy=strategy, granularity=granularity, seed=seed),
        seed=seed,
    )
    saved = save_protocol(protocol, out)
    _console().print(f"wrote {out}: {_protocol_summary(saved)}", markup=False)


def _protocol_summary(p: Protocol) -> str:
    r = p.speaker_roles
    lists = ""
    if p.fixed_trials is not None:
        counts = ", ".join(f"{t.name} {len(t)}" for t in p.fixed_trials.lists)
        lists = f"; fixed trial lists: {counts}"
    return (
        f"speakers {len(r.attacker_train)} attacker-train / {len(r.evaluation)} evaluation / "
        f"{len(r.target)} target; utterances {len(p.attacker_train)} train, "
        f"{len(p.attacker_validation)} validation, {len(p.enrollment)} enrollment, "
        f"{len(p.trial)} trial{lists}; hash {(p.content_hash or '')[:12]}"
    )


@corpus_app.command("validate")
def validate_command(
    path: Annotated[Path, typer.Argument(help="Manifest (.jsonl/.csv) or protocol (.json).")],
    check_audio: Annotated[
        bool, typer.Option("--check-audio/--no-check-audio", help="Check every audio file.")
    ] = True,
) -> None:
    """Check a manifest (rows and audio) or a protocol (hashes); exit 2 listing the problems."""
    console = _console()
    if path.suffix.lower() == ".json":
        protocol = load_protocol(path)
        console.print(f"ok {path}: {_protocol_summary(protocol)}", markup=False)
        return
    manifest = load_manifest(path, check_audio=check_audio).manifest
    console.print(f"ok {path}: {_summary(manifest)}", markup=False)
