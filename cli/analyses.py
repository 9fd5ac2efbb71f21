"""`unmask analyses ...`: the seeds' analyses outside a full evaluation (docs/analyses.md).

Examples::

    unmask analyses srd --manifest eval.jsonl --train-manifest train.jsonl \\
        --embeddings semi-informed=emb.npz --out srd/ --cache cache/
    unmask analyses prerestore --model attacker/best.pt --protocol proto.json \\
        --anonymized-dir anon/ --out prerestore/ --enrollment original --family pitch
    unmask analyses size-study --embeddings seed0.npz --embeddings seed1.npz --out size/ \\
        --trials 1,5,20,50 --samples 5
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from services.attacks.prerestore_config import PrerestorationConfig
from services.errors import InvalidInputError

if TYPE_CHECKING:
    from services.attacks.prerestore import PrerestorationResult

analyses_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None)


def _console() -> Console:
    # Built per call so output goes to the current sys.stdout (tests capture it).
    return Console(highlight=False, soft_wrap=True)


def _int_list(value: str | None, option: str, allow_all: bool = False) -> list[Any] | None:
    """``"1,5,20"`` -> [1, 5, 20]; ``all`` -> None entries when ``allow_all``."""
    if value is None:
        return None
    out: list[Any] = []
    for item in value.split(","):
        item = item.strip()
        if allow_all and item == "all":
            out.append(None)
            continue
        try:
            n = int(item)
        except ValueError:
            raise InvalidInputError(f"{option}: {item!r} is not an integer") from None
        if n < 1:
            raise InvalidInputError(f"{option}: sizes must be >= 1, got {n}")
        out.append(n)
    return out


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, allow_nan=True))


@analyses_app.command("size-study")
def size_study_command(
    embeddings: Annotated[
        list[Path],
        typer.Option(
            "--embeddings",
            help="Embed stage folder(s) written by `unmask evaluate` (OUT/stages/embed/KEY: give "
            "the enrollment and the trial set of one recognizer) or study .npz file(s); see "
            "docs/analyses.md.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="Output folder (JSON + plots).")],
    sweep: Annotated[
        list[str] | None,
        typer.Option("--sweep", help="speakers, enrollment, trials (repeatable; default all)."),
    ] = None,
    speakers: Annotated[str | None, typer.Option(help="Speaker counts, e.g. 10,30,50,all.")] = None,
    enrollment: Annotated[
        str | None, typer.Option(help="Enrollment utterances per speaker, e.g. 1,5,20.")
    ] = None,
    trials: Annotated[
        str | None, typer.Option(help="Trial utterances per speaker, e.g. 1,5,20,50.")
    ] = None,
    trial_enrollment: Annotated[
        int, typer.Option(help="Enrollment utterances per speaker in the trials sweep.")
    ] = 20,
    samples: Annotated[int, typer.Option(help="Random draws per point and target seed.")] = 5,
    backend: Annotated[str, typer.Option(help="cosine or plda.")] = "cosine",
    plda_train: Annotated[
        Path | None, typer.Option(help="PLDA training .npz (embeddings, speaker_ids).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the draws.")] = 0,
) -> None:
    """Dataset-size study (Georgiou et al.): EER mean / std vs speakers, enrollment and trials."""
    from services.scoring import CosineBackend, PLDABackend, train_plda
    from services.scoring.scorer import ScoringBackend
    from services.studies.dataset_size import SWEEPS, SizeStudyConfig, run_size_study
    from services.studies.io import load_training_embeddings

    if samples < 1:
        raise InvalidInputError(f"--samples must be >= 1, got {samples}")
    bad = sorted(set(sweep or []) - set(SWEEPS))
    if bad:
        raise InvalidInputError(f"--sweep: unknown sweep(s) {bad}; choose from {list(SWEEPS)}")
    tables = _size_study_tables(embeddings)
    scorer: ScoringBackend
    if backend == "cosine":
        scorer = CosineBackend()
    elif backend == "plda":
        if plda_train is None:
            raise InvalidInputError("--backend plda needs --plda-train FILE.npz")
        x, labels = load_training_embeddings(plda_train)
        try:
            scorer = PLDABackend(train_plda(x, labels))
        except ValueError as exc:
            raise InvalidInputError(f"{plda_train}: {exc}") from None
    else:
        raise InvalidInputError(f"--backend must be cosine or plda, got {backend!r}")
    update: dict[str, Any] = {
        "samples": samples,
        "seed": seed,
        "trial_sweep_enrollment": trial_enrollment,
    }
    if sweep:
        update["sweeps"] = list(dict.fromkeys(sweep))
    for key, value in (
        ("speaker_counts", _int_list(speakers, "--speakers", allow_all=True)),
        ("enrollment_counts", _int_list(enrollment, "--enrollment")),
        ("trial_counts", _int_list(trials, "--trials")),
    ):
        if value is not None:
            update[key] = value
    cfg = SizeStudyConfig.model_validate({**SizeStudyConfig().model_dump(), **update})
    result = run_size_study(tables, scorer, cfg, out_dir=str(out))
    _write_json(out / "size_study.json", result)
    console = _console()
    for name, rows in result["sweeps"].items():
        table = Table(title=f"sweep: {name} ({len(tables)} target seed(s) x {samples} draws)")
        for col in ("size", "speakers", "EER mean %", "EER std %", "95 % of reps", "ms/rep"):
            table.add_column(col, justify="right")
        for r in rows:
            lo, hi = r["eer_interval95_percent"]
            table.add_row(
                "all" if r["size"] is None else str(r["size"]),
                str(r["n_speakers"]),
                f"{r['eer_mean_percent']:.2f}",
                f"{r['eer_std_percent']:.2f}",
                f"{lo:.1f}-{hi:.1f}",
                f"{1000 * r['seconds_per_repetition']:.0f}",
            )
        console.print(table)
    for s in result["skipped"]:
        console.print(f"skipped {s['sweep']} size {s['size']}: {s['reason']}", markup=False)
    console.print(f"wrote {out / 'size_study.json'}", markup=False)


def _size_study_tables(paths: list[Path]) -> dict[int, Any]:
    """Study tables: embed stage folders of `unmask evaluate` together make one table (target
    seed 0, rows' roles from their sets); each ``.npz`` adds its own target seed(s)."""
    from services.pipeline.stage_embeddings import is_embed_stage, read_embed_stage
    from services.studies.dataset_size import EmbeddingTable
    from services.studies.io import load_embedding_tables

    stage_paths = [p for p in paths if is_embed_stage(p)]
    npz_paths = [p for p in paths if p not in stage_paths]
    for p in npz_paths:
        if p.is_dir():
            raise InvalidInputError(
                f"--embeddings {p}: a folder but not an embed stage folder (expected "
                "OUT/stages/embed/KEY with embeddings.npy and utt_ids.json)"
            )
        if p.suffix == ".npy":
            raise InvalidInputError(
                f"--embeddings {p}: a bare .npy; give its embed stage folder (with utt_ids.json "
                "and DONE.json) or a study .npz"
            )
    tables: dict[int, Any] = load_embedding_tables(npz_paths) if npz_paths else {}
    if stage_paths:
        if 0 in tables:
            raise InvalidInputError("--embeddings: target seed 0 given by an .npz and by stages")
        parts = [read_embed_stage(p) for p in stage_paths]
        try:
            tables[0] = EmbeddingTable(
                np.concatenate([s.embeddings for s in parts]),
                np.array([x for s in parts for x in s.speaker_ids]),
                np.array([x for s in parts for x in s.genders]),
                np.array([s.role for s in parts for _ in s.utt_ids]),
                np.array([x for s in parts for x in s.utt_ids]),
            )
        except ValueError as exc:
            raise InvalidInputError(f"--embeddings: {exc}") from None
    return tables


def _embedding_arrays(spec: str, utt_ids: list[str]) -> tuple[str, np.ndarray]:
    """NAME=PATH: an embed stage folder of `unmask evaluate` or an .npz (embeddings, utt_ids)."""
    from services.pipeline.stage_embeddings import is_embed_stage, read_embed_stage

    name, sep, file = spec.partition("=")
    if not sep or not name.strip() or not file.strip():
        raise InvalidInputError(f"--embeddings must look like NAME=PATH, got {spec!r}")
    path = Path(file.strip())
    if is_embed_stage(path):
        stage = read_embed_stage(path)
        emb, ids = stage.embeddings, np.array(stage.utt_ids)
    elif not path.is_file():
        raise InvalidInputError(f"{path}: embedding file or embed stage folder not found")
    else:
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InvalidInputError(f"{path}: not a readable .npz ({exc})") from None
        if not hasattr(data, "files"):
            raise InvalidInputError(
                f"{path}: a bare array; give an embed stage folder or an .npz with arrays "
                "'embeddings' and 'utt_ids'"
            )
        with data:
            if "embeddings" not in data.files or "utt_ids" not in data.files:
                raise InvalidInputError(f"{path}: needs arrays 'embeddings' and 'utt_ids'")
            emb, ids = data["embeddings"], data["utt_ids"].astype(str)
    row_of = {u: i for i, u in enumerate(ids.tolist())}
    missing = [u for u in utt_ids if u not in row_of]
    if missing:
        raise InvalidInputError(
            f"{path}: no embedding for {len(missing)} utterance(s), e.g. {missing[:3]}"
        )
    return name.strip(), emb[[row_of[u] for u in utt_ids]]


@analyses_app.command("srd")
def srd_command(
    manifest: Annotated[
        Path, typer.Option(help="Manifest of the pooled evaluation utterances (one condition).")
    ],
    out: Annotated[Path, typer.Option("--out", help="Output folder (JSON + plots).")],
    train_manifest: Annotated[
        Path | None, typer.Option(help="Attacker-train manifest (phone-unit codebook).")
    ] = None,
    embeddings: Annotated[
        list[str] | None,
        typer.Option(
            "--embeddings",
            help="NAME=PATH: an embed stage folder written by `unmask evaluate` "
            "(OUT/stages/embed/KEY) or an .npz with arrays embeddings, utt_ids.",
        ),
    ] = None,
    representation: Annotated[
        list[str] | None,
        typer.Option(help="embeddings, f0, phone_units (repeatable; default all available)."),
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="F0 cache folder.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the split, codebook and bootstrap.")] = 0,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples (0 = none).")] = 200,
    workers: Annotated[
        int | None, typer.Option(help="F0 processes (default: one per core).")
    ] = None,
    max_train_utterances: Annotated[
        int, typer.Option(help="Attacker-train utterances read for the codebook.")
    ] = 200,
) -> None:
    """Similarity rank disclosure (Chandra et al.) on speaker embeddings, F0 and phone units."""
    from services.attacks.srd_representations import (
        SRDRepresentationsConfig,
        run_srd_representations,
    )
    from services.audio import read_audio
    from services.corpus.loaders import read_manifest

    m = read_manifest(manifest)
    utts = list(m)
    waves = [read_audio(m.resolve(u))[0] for u in utts]
    emb = dict(_embedding_arrays(s, [u.utt_id for u in utts]) for s in (embeddings or []))
    wanted = representation or (
        ["embeddings"] * bool(emb) + ["f0"] + ["phone_units"] * (train_manifest is not None)
    )
    train_waves = None
    if "phone_units" in wanted:
        if train_manifest is None:
            raise InvalidInputError("--representation phone_units needs --train-manifest")
        tm = read_manifest(train_manifest)
        rng = np.random.default_rng(seed)
        chosen = rng.permutation(len(tm))[:max_train_utterances]
        train_list = list(tm)
        train_waves = [read_audio(tm.resolve(train_list[i]))[0] for i in sorted(chosen)]
    try:
        cfg = SRDRepresentationsConfig(
            representations=wanted, bootstrap_resamples=resamples, workers=workers
        )
    except ValueError as exc:
        raise InvalidInputError(f"invalid option: {exc.errors()[0]['msg']}") from None  # type: ignore[attr-defined]
    try:
        result = run_srd_representations(
            waves,
            [u.speaker_id for u in utts],
            attacker_train_waveforms=train_waves,
            embeddings=emb,
            cache_dir=cache,
            out_dir=out,
            config=cfg,
            seed=seed,
        )
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None
    _write_json(out / "srd_representations.json", result)
    console = _console()
    split = result["split"]
    table = Table(title=f"SRD, N = {split['n_references']} references, {split['n_inputs']} inputs")
    for col in ("representation", "MaxD bits", "MeanD bits", "IdR %", "RS %", "MeanD 95 % CI"):
        table.add_column(col, justify="left" if col == "representation" else "right")
    for name, row in result["representations"].items():
        e = row["empirical"]
        ci = row.get("mean_disclosure_ci95_bits")
        table.add_row(
            name,
            f"{e['max_disclosure_bits']:.2f}",
            f"{e['mean_disclosure_bits']:.2f}",
            f"{e['identification_rate_percent']:.1f}",
            f"{e['rank_spread_percent']:.1f}",
            "-" if ci is None else f"{ci[0]:.2f}-{ci[1]:.2f}",
        )
    console.print(table)
    console.print(f"wrote {out / 'srd_representations.json'}", markup=False)


def _anonymizer_family_from_sidecars(folders: list[Path]) -> str | None:
    """The anonymizer family recorded in ``anonymization.json`` of the anonymized sets, if any."""
    for folder in folders:
        sidecar = folder / "anonymization.json"
        if sidecar.is_file():
            try:
                config = json.loads(sidecar.read_text(encoding="utf-8")).get("config", {})
            except (OSError, json.JSONDecodeError, UnicodeDecodeError):
                continue
            family = config.get("family")
            if isinstance(family, str):
                return family
    return None


@analyses_app.command("prerestore")
def prerestore_command(
    model: Annotated[Path, typer.Option("--model", help="Attacker checkpoint (best.pt).")],
    protocol: Annotated[Path, typer.Option("--protocol", help="Protocol JSON.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder (JSON + plot).")],
    anonymized_dir: Annotated[
        Path | None,
        typer.Option(
            "--anonymized-dir",
            help="Output of `unmask anonymize`: DIR/trial (required) holds the anonymized "
            "trials, DIR/enrollment the anonymized enrollment (read with --enrollment "
            "anonymized).",
        ),
    ] = None,
    enrollment: Annotated[
        str,
        typer.Option(
            "--enrollment",
            help="Enrollment condition: original (Liu et al.'s, the protocol's enrollment) or "
            "anonymized (DIR/enrollment).",
        ),
    ] = PrerestorationConfig.model_fields["enrollment"].default,
    attacker_training: Annotated[
        str,
        typer.Option(
            "--attacker-training",
            help="What the --model recognizer was trained on: original or anonymized speech "
            "(for the label).",
        ),
    ] = "original",
    family: Annotated[
        list[str] | None,
        typer.Option(
            "--family", help="pitch, bilinear, quadratic, power, piecewise_linear (repeat)."
        ),
    ] = None,
    mode: Annotated[
        list[str] | None, typer.Option("--mode", help="enrollment, trial (repeat; default both).")
    ] = None,
    implementation: Annotated[
        str, typer.Option(help="feature (fast) or waveform (built-in anonymizers).")
    ] = PrerestorationConfig.model_fields["implementation"].default,
    anonymizer_family: Annotated[
        str | None,
        typer.Option(
            help="Anonymizer's family for the label (pitch, a warp, vtln, mcadams, ...); "
            "default: from DIR/<set>/anonymization.json."
        ),
    ] = None,
    enrollment_model: Annotated[
        str, typer.Option(help="speaker_mean (cosine back-end) or per_utterance.")
    ] = PrerestorationConfig.model_fields["enrollment_model"].default,
    device: Annotated[str, typer.Option(help="cpu, cuda or auto.")] = "cpu",
) -> None:
    """De-anonymization by pre-restoration (Liu et al.): EER per (family, mode) and curves."""
    from services.attacks.prerestore import UtteranceSet, plot_per_parameter_eer, run_prerestoration
    from services.attacks.prerestore_config import check_attack_condition
    from services.corpus.loaders import read_manifest
    from services.corpus.protocol import load_protocol_and_manifest

    settings = _prerestoration_settings(
        {
            "families": family,
            "modes": mode,
            "implementation": implementation,
            "enrollment_model": enrollment_model,
            "enrollment": enrollment,
        }
    )
    try:
        check_attack_condition(attacker_training, settings.enrollment)
    except InvalidInputError as exc:
        raise InvalidInputError(f"--attacker-training: {exc}") from None
    sources, folders = _anonymized_sources(anonymized_dir, settings.enrollment)
    proto, manifest = load_protocol_and_manifest(protocol)
    sets = {
        name: UtteranceSet.from_manifest(
            read_manifest(Path(sources[name])) if name in sources else manifest.subset(ids)
        )
        for name, ids in (("enrollment", proto.enrollment), ("trial", proto.trial))
    }
    sources.setdefault("enrollment", "original")
    label_family = anonymizer_family or _anonymizer_family_from_sidecars(folders)
    result = run_prerestoration(
        model,
        sets["enrollment"],
        sets["trial"],
        settings.families,
        settings.modes,
        settings.implementation,
        label_family,
        attacker_training=attacker_training,  # type: ignore[arg-type]
        enrollment_condition=settings.enrollment,
        enrollment_model=settings.enrollment_model,
        device=device,
    )
    data = {**result.to_dict(), "sources": sources}
    _write_json(out / "prerestore.json", data)
    plot_per_parameter_eer(result, out / "prerestore_per_parameter")
    _print_prerestoration(result, settings, out / "prerestore.json")


def _anonymized_sources(
    anonymized_dir: Path | None, enrollment: str
) -> tuple[dict[str, str], list[Path]]:
    """The anonymized sets pre-restoration reads (the trials, and the enrollment when
    ``enrollment`` is anonymized): set name -> manifest path, and their folders; names the
    missing set and the command that writes it when one is absent."""
    sources: dict[str, str] = {}
    folders: list[Path] = []
    for name in ("enrollment", "trial"):
        if name == "enrollment" and enrollment == "original":
            continue
        folder = anonymized_dir / name if anonymized_dir is not None else None
        if folder is None or not (folder / "manifest.jsonl").is_file():
            needed = "--enrollment anonymized" if name == "enrollment" else "pre-restoration"
            raise InvalidInputError(
                f"{needed} needs the anonymized {name} set: --anonymized-dir DIR with "
                f"DIR/{name}/manifest.jsonl (`unmask anonymize --set {name}`)"
            )
        sources[name] = str(folder / "manifest.jsonl")
        folders.append(folder)
    return sources, folders


def _print_prerestoration(
    result: PrerestorationResult, settings: PrerestorationConfig, written: Path
) -> None:
    """The EER table per (family, mode) of a pre-restoration ``result`` (percent; the best
    parameter per mode) and a line with the trial counts, the time and the JSON ``written``."""
    console = _console()
    modes = settings.modes
    table = Table(
        title=f"Pre-restoration EER (%), {settings.implementation} implementation, "
        f"{result.enrollment_condition} enrollment vs anonymized trials, attacker trained on "
        f"{result.attacker_training} speech; no pre-restoration: "
        f"{result.baseline_eer_percent:.2f} %"
    )
    columns = ("family", "label", "anonymizer's family")
    for col in (*columns, *(f"{m} EER %" for m in modes), *(f"{m} best r" for m in modes)):
        table.add_column(col, justify="left" if col in columns else "right")
    for fam in settings.families:
        entries = [result.entry(fam, m) for m in modes]
        match = entries[0].family_matches_anonymizer
        table.add_row(
            fam,
            entries[0].label or "-",
            "-" if match is None else "yes" if match else "no",
            *(f"{e.eer_percent:.2f}" for e in entries),
            *(f"{e.best_parameter_by_eer:g}" for e in entries),
        )
    console.print(table)
    console.print(
        f"{result.n_target} target / {result.n_nontarget} non-target trials, "
        f"{result.timings_s['total']:.1f} s; wrote {written}",
        markup=False,
    )


def _prerestoration_settings(options: dict[str, Any]) -> PrerestorationConfig:
    """The command's options as the pipeline's `PrerestorationConfig` (same fields, defaults)."""
    names = {
        "families": "--family",
        "modes": "--mode",
        "implementation": "--implementation",
        "enrollment_model": "--enrollment-model",
        "enrollment": "--enrollment",
    }
    given = {k: list(dict.fromkeys(v)) if isinstance(v, list) else v for k, v in options.items()}
    try:
        return PrerestorationConfig.model_validate({k: v for k, v in given.items() if v})
    except ValidationError as exc:
        err = exc.errors()[0]
        option = names.get(str(err["loc"][0]), str(err["loc"][0]))
        raise InvalidInputError(f"{option}: {err['msg']} (got {err.get('input')!r})") from None
