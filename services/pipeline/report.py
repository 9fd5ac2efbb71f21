"""The report phase: ``results.json`` (rows, summary over seeds, training, analyses, provenance)
and the plots of an evaluation."""

from __future__ import annotations

import json
import platform
import shutil
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import torch

from services import plotting as plots
from services.attacker.probe import probe_error_rate
from services.corpus.manifest import Manifest
from services.corpus.protocol import Protocol
from services.metrics import catalogue
from services.metrics.legal import paper_original_curves
from services.pipeline.analyses import copy_analysis_plots
from services.pipeline.code_version import git_revision
from services.pipeline.config import EvaluationConfig
from services.pipeline.stage_runner import StageOutcome
from services.pipeline.stages.context import StageContext, json_default
from services.pipeline.stages.score import SCORE_SAMPLE_NAME
from services.pipeline.stages.train import TrainedModels
from services.pipeline.trust import assess_trust
from services.pipeline.zoo import row_attacker, worst_case
from services.scoring.trial_scores import TRIALS_NAME, trials_path

RESULT_SCHEMA_VERSION = 1
"""Version of the ``results.json`` document."""

RESULTS_NAME = "results.json"
"""The result document, in the evaluation's output folder."""


@dataclass(frozen=True)
class ZooAttacker:
    """One attacker of a zoo as the report reads it: its config (``config.attacker_config``), its
    recognizers by (condition, seed) and their probes."""

    config: EvaluationConfig
    models: TrainedModels
    probes: Mapping[tuple[str, int], dict[str, Any]]


def write_report(
    ctx: StageContext,
    out_dir: Path,
    protocol: Protocol,
    protocol_key: str,
    rows: list[dict[str, Any]],
    models: TrainedModels,
    analyses: dict[str, Any],
    seconds: float,
    probes: Mapping[tuple[str, int], dict[str, Any]],
    *,
    zoo: Mapping[str, ZooAttacker] | None = None,
    blocks: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Plot, then write ``out_dir/results.json``; returns the result document as the file holds
    it (JSON types: numpy values converted).

    ``rows``: the score stages' rows; ``probes``: the target / source probes of the recognizers
    trained with a target classifier, by (condition, seed); ``seconds``: the run's wall time.
    ``zoo``: the attackers of a zoo by name (rows then carry ``attacker``); training entries and
    plots are then named ``<attacker>-...``, summary entries carry ``attacker`` and the document
    gets ``worst_case`` (``zoo.worst_case``). None (no zoo): ``models`` and ``probes`` are the one
    attacker's and the document is as before zoos. ``blocks``: further top-level blocks of the
    document (``utility``, ``enrollment_leak``), written before the trust check reads it.
    """
    cfg = ctx.config
    plot_dir = out_dir / "plots"
    plot_files: dict[str, list[str]] = {}
    training: dict[str, Any] = {}
    attackers = (
        [(f"{name}-", name, a.config, a.models, a.probes) for name, a in zoo.items()]
        if zoo is not None
        else [("", None, cfg, models, probes)]
    )
    for prefix, attacker, _, attacker_models, attacker_probes in attackers:
        _training_entries(
            prefix, attacker, attacker_models, attacker_probes, training, plot_files, plot_dir
        )
    for prefix, attacker, acfg, _, _ in attackers:
        mine = [r for r in rows if r.get("attacker") == attacker]
        _score_plots(ctx, prefix, cfg.scenarios, acfg.backends, mine, plot_files, plot_dir)
    plot_files.update(copy_analysis_plots(ctx.runner, analyses, plot_dir))
    trial_files = _copy_trials(ctx, rows, out_dir)
    result = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "name": cfg.name,
        "created_at": datetime.now(UTC).isoformat(),
        "protocol": {"name": protocol.name, "hash": protocol_key},
        "anonymizer": anonymizer_record(cfg, ctx.runner.log),
        # DET points stay (200 per row): the leaderboard overlays the top submissions' curves.
        "rows": [{k: v for k, v in r.items() if k != "stage_key"} for r in rows],
        "summary": _with_prerestoration(summarize_rows(rows), analyses),
        "training": training,
        "analyses": analyses,
        "plots": {k: [f"plots/{n}" for n in v] for k, v in plot_files.items()},
        "trials": trial_files,
        "stages": [
            {
                "stage": o.stage,
                "key": o.key,
                "reused": o.reused,
                "seconds": round(o.seconds, 3),
                "compute_seconds": (
                    None if o.compute_seconds is None else round(o.compute_seconds, 3)
                ),
            }
            for o in ctx.runner.log
        ],
        "provenance": {
            **provenance(cfg, protocol_key, seconds),
            **compute_time(ctx.runner.log),
        },
    }
    if zoo is not None:
        result[catalogue.WORST_CASE.key] = worst_case(rows)
    result.update(blocks or {})
    _report_challenger(result)
    result["trust"] = assess_trust(result).to_json()
    text = json.dumps(result, indent=2, default=json_default)
    (out_dir / RESULTS_NAME).write_text(text)
    # The document as results.json holds it (plain JSON types), so a caller need not re-read it.
    document: dict[str, Any] = json.loads(text)
    return document


def _report_challenger(result: dict[str, Any]) -> None:
    """The worst case of the challenger's scenario names the challenger (its EER, whether it was
    stronger beyond the interval, the row the verdict reports), so the worst case reports an
    attacker outside the zoo."""
    block = result.get("challenger")
    worst = result.get(catalogue.WORST_CASE.key)
    if not isinstance(block, dict) or not isinstance(worst, dict):
        return
    for scenario, challenge in (block.get("scenarios") or {}).items():
        entry = worst.get(scenario)
        if isinstance(entry, dict) and isinstance(challenge, dict):
            entry["challenger"] = {
                "attacker": block.get("attacker"),
                "backend": block.get("backend"),
                **{
                    k: challenge.get(k)
                    for k in (catalogue.EER.key, "interval_points", "stronger", "row")
                },
            }


def _training_entries(
    prefix: str,
    attacker: str | None,
    models: TrainedModels,
    probes: Mapping[tuple[str, int], dict[str, Any]],
    training: dict[str, Any],
    plot_files: dict[str, list[str]],
    plot_dir: Path,
) -> None:
    """Training entries and history plots of one attacker's recognizers (into ``training`` and
    ``plot_files``); ``prefix`` names the attacker (empty without a zoo)."""
    for (condition, seed), (trained, outcome) in sorted(models.items()):
        name = f"{prefix}{condition}-seed{seed}"
        history = [r.model_dump(mode="json") for r in trained.history]
        training[name] = {
            **({"attacker": attacker} if attacker is not None else {}),
            "condition": condition,
            "seed": seed,
            "best_epoch": trained.best_epoch,
            "best_w_target": trained.best_w_target,
            # Transfer and the epochs cap: what the trust check reads to say what to change.
            "start": trained.start,
            "epochs_cap": trained.config.epochs,
            "patience": trained.config.patience,
            "stopped": trained.stopped,
            "history": history,
            "stage_key": outcome.key,
        }
        levels: dict[str, float] = {}
        if (condition, seed) in probes:
            training[name]["probe"] = probes[(condition, seed)]
            target_probe = probes[(condition, seed)].get("target")
            if target_probe:
                k = target_probe["n_classes"]
                levels[f"VER_T at chance (1 - 1/{k})"] = 100.0 * (1.0 - 1.0 / k)
                levels["probe target error, after training"] = target_probe["error_rate_percent"]
        plot_files[f"training-{name}"] = plots.plot_training_history(
            [r["epoch"] for r in history],
            {
                "VER_S": [r["ver_source"] for r in history],
                "VER_T": [r["ver_target"] for r in history],
            },
            plot_dir / f"training-{name}",
            f"Validation error rates ({name})",
            levels,
        )


def _score_plots(
    ctx: StageContext,
    prefix: str,
    scenarios: Sequence[str],
    backends: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    plot_files: dict[str, list[str]],
    plot_dir: Path,
) -> None:
    """DET, rank and score plots of one attacker's rows (``prefix`` names it, empty without a
    zoo)."""
    for scenario in scenarios:
        # The legal metrics do not depend on the back-end: one plot per scenario, first seed.
        legal_row = next(
            (r for r in rows if r["scenario"] == scenario and "curves" in r.get("legal", {})),
            None,
        )
        if legal_row is not None:
            legal = legal_row["legal"]
            head = legal["headline"]
            plot_files[f"legal-{prefix}{scenario}"] = plots.plot_legal_curves(
                legal["curves"],
                [
                    (c.metric, c.conversation_length, c.n, c.mean_percent, c.label)
                    for c in paper_original_curves()
                ],
                plot_dir / f"legal-{prefix}{scenario}",
                f"Legal metrics: {prefix}{scenario}, seed {legal_row['seed']} (headline N = "
                f"{head['n']}, L = {head['conversation_length']})",
            )
        for backend in backends:
            sel = [r for r in rows if r["scenario"] == scenario and r["backend"] == backend]
            curves = {
                f"seed {r['seed']}": (np.array(r["det"]["pfa"]), np.array(r["det"]["pmiss"]))
                for r in sel
            }
            plot_files[f"det-{prefix}{scenario}-{backend}"] = plots.plot_det_curves(
                curves,
                plot_dir / f"det-{prefix}{scenario}-{backend}",
                f"DET: {prefix}{scenario}, {backend}",
            )
            first = sel[0]
            if "srd" in first:
                srd = first["srd"]
                plot_files[f"ranks-{prefix}{scenario}-{backend}"] = plots.plot_rank_histogram(
                    np.array(srd["empirical"]["pmf"]),
                    plot_dir / f"ranks-{prefix}{scenario}-{backend}",
                    f"Rank histogram: {prefix}{scenario}, {backend}, seed {first['seed']}",
                    fitted=np.array(srd["constrained_fit"]["pmf"])
                    if srd.get("constrained_fit")
                    else None,
                )
            sample = np.load(ctx.runner.folder("score", first["stage_key"]) / SCORE_SAMPLE_NAME)
            tar, non = sample["target"], sample["nontarget"]
            plot_files[f"scores-{prefix}{scenario}-{backend}"] = plots.plot_score_histograms(
                tar,
                non,
                plot_dir / f"scores-{prefix}{scenario}-{backend}",
                f"Scores: {prefix}{scenario}, {backend}",
            )


def _copy_trials(ctx: StageContext, rows: Sequence[Mapping[str, Any]], out_dir: Path) -> list[str]:
    """Copy each row's trials (``services.scoring.trial_scores``) from its score stage into
    ``out_dir/trials/``; returns the relative paths. A score stage reused from before trials
    were kept has none: its row is skipped."""
    copied = []
    for row in rows:
        source = ctx.runner.folder("score", row["stage_key"]) / TRIALS_NAME
        if not source.is_file():
            continue
        relative = trials_path(row_attacker(row), row["scenario"], row["backend"], row["seed"])
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(relative)
    return copied


def _with_prerestoration(
    summary: list[dict[str, Any]], analyses: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Add each attacker's lowest pre-restoration EER (%) over families and modes to the summary.

    Stored as the catalogue's pre-restoration EER of (attacker scenario, cosine): the leaderboard's
    pre-restoration column reads the ignorant attacker's (Liu et al.'s setting).
    """
    for attacker, res in analyses.get("prerestoration", {}).items():
        entries = res.get("entries", [])
        if not entries:
            continue
        eers = {str(i): float(e[catalogue.EER.key]) for i, e in enumerate(entries)}
        worst = catalogue.worst_for_maker(catalogue.EER.key, eers)
        if worst is None:
            continue
        best = eers[worst]  # the attack's best: the worst for the maker
        entry = next(
            (e for e in summary if e["scenario"] == attacker and e["backend"] == "cosine"), None
        )
        if entry is None:
            entry = {"scenario": attacker, "backend": "cosine", "n_seeds": 1}
            summary.append(entry)
        entry[catalogue.PRERESTORE_EER.key] = {"mean": best, "std": 0.0}
    return summary


def probe_recognizer(train: Manifest, embeddings: np.ndarray) -> dict[str, Any]:
    """Target and source probe error rates (%) on a recognizer's own training embeddings."""
    out: dict[str, Any] = {"method": "nearest class mean, cosine, 20 % of utterances held out"}
    for name, labels in (
        ("target", np.array([u.target_id or "" for u in train.utterances])),
        ("source", np.array([u.speaker_id for u in train.utterances])),
    ):
        known = labels != ""
        if len(np.unique(labels[known])) >= 2:
            out[name] = probe_error_rate(
                embeddings[known], labels[known].tolist(), seed=0
            ).as_dict()
    return out


def summarize_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and (sample) standard deviation over seeds per (scenario, back-end), for every
    seed-summary metric of the catalogue (``services.metrics.catalogue``); per (attacker,
    scenario, back-end) when the rows carry an ``attacker`` (a zoo), the entry then naming it."""
    groups: dict[tuple[str | None, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r.get("attacker"), r["scenario"], r["backend"]), []).append(r)
    return [
        {
            **({"attacker": attacker} if attacker is not None else {}),
            "scenario": scenario,
            "backend": backend,
            "n_seeds": len(sel),
            **catalogue.summarize_seed_values(sel),
        }
        for (attacker, scenario, backend), sel in groups.items()
    ]


def compute_time(log: Sequence[StageOutcome]) -> dict[str, Any]:
    """What the result cost to compute, reused stages included: ``compute_seconds`` (s) sums
    each distinct stage key's recorded compute time (by whichever process or host computed it);
    ``stages_without_compute_record`` counts the keys whose time is unknown (a folder from
    before compute records, or whose record was lost). ``wall_seconds`` is this run's alone."""
    by_key = {(o.stage, o.key): o.compute_seconds for o in log}
    known = [s for s in by_key.values() if s is not None]
    return {
        "compute_seconds": round(sum(known), 3),
        "stages_without_compute_record": len(by_key) - len(known),
    }


DECLARED_NAME_KEYS = ("name", "system", "anonymizer")
"""Keys of an archive's ``metadata.json`` that name the system, in the order they are read."""


def anonymizer_record(cfg: EvaluationConfig, log: Sequence[Any]) -> dict[str, Any]:
    """The result's ``anonymizer`` block: the config's section, with a ``name`` saying what was
    evaluated. A built-in keeps its name; a container or a service is named by its image or URL;
    pre-anonymized audio by the name its maker declared in ``metadata.json`` (``name``,
    ``system`` or ``anonymizer``), else its file or folder name, with ``vpc_suffix``, the
    VoicePrivacy suffix detected in it (None when not that layout). ``log``: the stage runner's
    outcomes (the ``archive-check`` stage's folder holds the validation report of a raw
    archive)."""
    from services.anonymizers.archive import REPORT_NAME, ArchiveValidation
    from services.anonymizers.kinds.registry import kind_of

    spec = cfg.anonymizer
    kind = kind_of(spec)
    record: dict[str, Any] = spec.model_dump(mode="json")
    if not kind.pre_anonymized:
        reference = record.get("name") or record.get("image") or record.get("url")
        record["name"] = str(reference or kind.name)
        return record
    source = Path(str(record.get("archive")))
    folders = [source] + [o.folder for o in log if o.stage == "archive-check"]
    validation = None
    for folder in folders:
        if (folder / REPORT_NAME).is_file():
            data = json.loads((folder / REPORT_NAME).read_text(encoding="utf-8"))
            validation = ArchiveValidation.from_json(data)
            break
    meta = (validation.metadata if validation is not None else None) or {}
    declared = next(
        (str(meta[k]) for k in DECLARED_NAME_KEYS if isinstance(meta.get(k), str) and meta[k]),
        None,
    )
    record["name"] = declared or source.name
    record["vpc_suffix"] = validation.vpc_suffix if validation is not None else None
    return record


def provenance(cfg: EvaluationConfig, protocol_key: str, seconds: float) -> dict[str, Any]:
    """What a result was computed with: config, protocol, code and package versions, device."""
    packages: dict[str, str | None] = {}
    for name in ("unmask", "torch", "torchaudio", "speechbrain", "numpy", "scipy", "librosa"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    device = cfg.training.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return {
        "config": cfg.model_dump(mode="json"),
        "config_hash": cfg.content_hash(),
        "protocol_hash": protocol_key,
        "seeds": cfg.seeds,
        "code_version": git_revision(),
        "packages": packages,
        "python": platform.python_version(),
        "device": device,
        "cuda_device": torch.cuda.get_device_name(0)
        if device == "cuda" and torch.cuda.is_available()
        else None,
        "host": socket.gethostname(),
        "wall_seconds": round(seconds, 3),
    }
