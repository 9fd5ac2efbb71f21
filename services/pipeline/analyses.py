"""The optional analyses of an evaluation (PROTOCOLS.md sections 5-7), each a pipeline stage.

- ``analysis-srd``: SRD on speaker embeddings, F0 and phone units, per data condition
  (Chandra et al.);
- ``analysis-size``: dataset-size sweeps on the strongest attacker's embeddings (Georgiou et al.);
- ``analysis-prerestore``: pre-restoration attacks on the anonymized evaluation sets (Liu et al.).

They run in the ``analyze`` phase, after scoring, on the stages the scenarios already computed
(plus the size study's anonymizations with other target seeds).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig
from services.attacks.prerestore import plot_per_parameter_eer, run_prerestoration
from services.attacks.prerestore_config import (
    PIPELINE_ATTACKER_TRAINING,
    AttackerTraining,
    anonymizer_family_of,
)
from services.attacks.srd_representations import run_srd_representations
from services.corpus.manifest import Manifest
from services.corpus.protocol import Protocol
from services.pipeline.sets import ConditionSets
from services.pipeline.stage_runner import StageRunner
from services.pipeline.stages.anonymize import anonymize_sets
from services.pipeline.stages.context import StageContext, json_default
from services.pipeline.stages.embed import embed_set
from services.pipeline.stages.train import TrainedModels
from services.scoring import CosineBackend, PLDABackend, train_plda
from services.studies.dataset_size import EmbeddingTable, SizeStudyConfig, run_size_study

Conditions = Mapping[str, ConditionSets | None]
"""The sets by data condition (``original``, ``anonymized``; None where not computed)."""


def run_analyses(
    ctx: StageContext,
    protocol: Protocol,
    manifest: Manifest,
    protocol_key: str,
    conditions: Conditions,
    models: TrainedModels,
) -> dict[str, Any]:
    """Run the analyses the config selects; returns their JSON-able results by name."""
    spec = ctx.config.analyses
    out: dict[str, Any] = {}
    if spec.srd_representations is not None:
        out["srd_representations"] = _srd_representations(ctx, conditions, models)
    if spec.size_study is not None:
        out["size_study"] = _size_study(ctx, protocol, manifest, protocol_key, conditions, models)
    if spec.prerestoration is not None and conditions.get("anonymized") is not None:
        out["prerestoration"] = _prerestoration(ctx, conditions, models)
    return out


def _prerestoration(
    ctx: StageContext, conditions: Conditions, models: TrainedModels
) -> dict[str, Any]:
    """Pre-restoration attacks on the anonymized trials, per attacker (Liu et al.).

    The enrollment side is the original or the anonymized enrollment set (``enrollment``).
    """
    cfg = ctx.config
    spec = cfg.analyses.prerestoration
    assert spec is not None
    data = conditions["anonymized"]
    enrollment_data = conditions[spec.enrollment]
    assert data is not None and enrollment_data is not None
    seed = cfg.seeds[0]
    anon = cfg.anonymizer
    # Only a built-in's transform family is known (the others are the maker's code).
    family = (
        anonymizer_family_of(anon.name, anon.params)
        if isinstance(anon, BuiltinAnonymizerConfig)
        else None
    )
    results: dict[str, Any] = {}
    for attacker in spec.attackers:
        model = ("original", seed) if attacker == "ignorant" else ("anonymized", seed)
        if model not in models:
            continue
        trained, trained_stage = models[model]
        inputs = {
            "model": trained_stage.key,
            "sets": [enrollment_data.keys["enrollment"], data.keys["trial"]],
            "config": spec.model_dump(mode="json"),
            "anonymizer_family": family,
        }

        def make(
            folder: Path,
            checkpoint: Path = trained.best_checkpoint,
            training: AttackerTraining = PIPELINE_ATTACKER_TRAINING[attacker],
        ) -> dict[str, Any]:
            def report(step: str, fraction: float, message: str) -> None:
                ctx.progress("analyze", fraction, f"pre-restoration {step}: {message}")

            result = run_prerestoration(
                checkpoint,
                enrollment_data.enrollment,
                data.trial,
                families=spec.families,
                modes=spec.modes,
                implementation=spec.implementation,
                anonymizer_family=family,
                attacker_training=training,
                enrollment_condition=spec.enrollment,
                enrollment_model=spec.enrollment_model,
                progress=report,
                device=cfg.training.device if cfg.training.device != "auto" else "cpu",
            )
            (folder / "plots").mkdir()
            plot_per_parameter_eer(result, folder / "plots" / "per_parameter_eer")
            (folder / "result.json").write_text(json.dumps(result.to_dict(), default=json_default))
            return {"result": "result.json"}

        outcome = ctx.runner.run("analysis-prerestore", inputs, make)
        results[attacker] = {
            **json.loads((outcome.folder / "result.json").read_text()),
            "stage_key": outcome.key,
        }
    return results


def _srd_representations(
    ctx: StageContext, conditions: Conditions, models: TrainedModels
) -> dict[str, Any]:
    """SRD of embeddings, F0 and phone units, on original and anonymized evaluation speech."""
    spec = ctx.config.analyses.srd_representations
    assert spec is not None
    seed = ctx.config.seeds[0]
    recognizers = {"ignorant": ("original", seed), "semi-informed": ("anonymized", seed)}
    results: dict[str, Any] = {}
    for condition, data in conditions.items():
        if data is None:
            continue
        embeddings: dict[str, np.ndarray] = {}
        emb_keys: dict[str, str] = {}
        for label, model in recognizers.items():
            if model not in models:
                continue
            name = label if condition == "anonymized" else f"{model[0]}-trained"
            if name in embeddings:
                continue
            embeddings[name] = np.concatenate(
                [embed_set(ctx, models, model, data, s) for s in ("enrollment", "trial")]
            )
            emb_keys[name] = models[model][1].key
        pooled = Manifest.concat(data.enrollment, data.trial)
        # The phone-unit codebook is learnt on (a bounded sample of) attacker-train speech.
        codebook = data.train.with_utterances(data.train.utterances[:200])
        inputs = {
            "condition": condition,
            "sets": [data.keys["enrollment"], data.keys["trial"], data.keys["train"]],
            "embeddings": emb_keys,
            "config": spec.model_dump(mode="json"),
            "seed": seed,
        }

        def make(
            folder: Path,
            pooled: Manifest = pooled,
            codebook: Manifest = codebook,
            embeddings: dict[str, np.ndarray] = embeddings,
            condition: str = condition,
        ) -> dict[str, Any]:
            ctx.progress("analyze", 0.0, f"SRD representations ({condition} speech)")
            result = run_srd_representations(
                ctx.audio.load(pooled),
                [u.speaker_id for u in pooled.utterances],
                attacker_train_waveforms=ctx.audio.load(codebook),
                embeddings=embeddings,
                cache_dir=(ctx.cache_dir / "f0") if ctx.cache_dir else None,
                out_dir=folder / "plots",
                config=spec,
                seed=seed,
            )
            (folder / "result.json").write_text(json.dumps(result, default=json_default))
            return {"result": "result.json"}

        outcome = ctx.runner.run("analysis-srd", inputs, make)
        results[condition] = {
            **json.loads((outcome.folder / "result.json").read_text()),
            "stage_key": outcome.key,
        }
    return results


def _size_study(
    ctx: StageContext,
    protocol: Protocol,
    manifest: Manifest,
    protocol_key: str,
    conditions: Conditions,
    models: TrainedModels,
) -> dict[str, Any]:
    """Dataset-size sweeps on the strongest attacker's embeddings, one table per TSA seed."""
    spec = ctx.config.analyses.size_study
    assert spec is not None
    seed = ctx.config.seeds[0]
    original = conditions["original"]
    assert original is not None
    anonymized_model = ("anonymized", seed) in models
    model = ("anonymized", seed) if anonymized_model else ("original", seed)
    tables: dict[int, EmbeddingTable] = {}
    table_keys: dict[int, list[str]] = {}
    for target_seed in spec.target_seeds:
        if anonymized_model:
            data = anonymize_sets(
                ctx,
                protocol,
                manifest,
                protocol_key,
                original,
                tsa_seed=target_seed,
                names=("enrollment", "trial"),
            )
        else:
            data = original
        enr = embed_set(ctx, models, model, data, "enrollment")
        tri = embed_set(ctx, models, model, data, "trial")
        utts = (*data.enrollment.utterances, *data.trial.utterances)
        tables[target_seed] = EmbeddingTable(
            np.concatenate([enr, tri]),
            np.array([u.speaker_id for u in utts]),
            np.array([u.gender for u in utts]),
            np.array(["enrollment"] * len(enr) + ["trial"] * len(tri)),
            np.array([u.utt_id for u in utts]),
        )
        table_keys[target_seed] = [data.keys["enrollment"], data.keys["trial"]]
    plda_train = (
        embed_set(ctx, models, model, conditions[model[0]] or original, "train")
        if spec.backend == "plda"
        else None
    )
    train_set = (conditions[model[0]] or original).train
    inputs = {
        "model": models[model][1].key,
        "tables": {str(k): v for k, v in table_keys.items()},
        "config": spec.model_dump(mode="json"),
    }

    def make(folder: Path) -> dict[str, Any]:
        backend: Any
        if spec.backend == "plda":
            assert plda_train is not None
            labels = np.array([u.speaker_id for u in train_set.utterances])
            backend = PLDABackend(train_plda(plda_train, labels))
        else:
            backend = CosineBackend()

        def report(sweep: str, i: int, n: int) -> None:
            ctx.progress("analyze", i / max(n, 1), f"size study: {sweep} {i}/{n}")

        study = SizeStudyConfig.model_validate(spec.model_dump(exclude={"target_seeds", "backend"}))
        result = run_size_study(
            tables, backend, study, out_dir=str(folder / "plots"), progress=report
        )
        (folder / "result.json").write_text(json.dumps(result, default=json_default))
        return {"result": "result.json"}

    outcome = ctx.runner.run("analysis-size", inputs, make)
    return {
        **json.loads((outcome.folder / "result.json").read_text()),
        "attacker": f"{model[0]}-seed{seed}",
        "stage_key": outcome.key,
    }


def copy_analysis_plots(
    runner: StageRunner, analyses: Mapping[str, Any], plot_dir: Path
) -> dict[str, list[str]]:
    """Copy the analyses' plots next to the others (``plots/<analysis>-<name>``).

    Returns the copied file names by plot name (``<analysis>-<plot stem>``).
    """
    stage_folders: list[tuple[str, Path]] = []
    for condition, res in analyses.get("srd_representations", {}).items():
        stage_folders.append((f"srd-{condition}", runner.folder("analysis-srd", res["stage_key"])))
    if "size_study" in analyses:
        key = analyses["size_study"]["stage_key"]
        stage_folders.append(("size", runner.folder("analysis-size", key)))
    for attacker, res in analyses.get("prerestoration", {}).items():
        folder = runner.folder("analysis-prerestore", res["stage_key"])
        stage_folders.append((f"prerestore-{attacker}", folder))
    copied: dict[str, list[str]] = {}
    plot_dir.mkdir(parents=True, exist_ok=True)
    for prefix, folder in stage_folders:
        for path in _stage_plot_files(folder):
            name = f"{prefix}-{path.name}"
            shutil.copyfile(path, plot_dir / name)
            copied.setdefault(f"{prefix}-{path.stem}", []).append(name)
    return copied


def _stage_plot_files(stage_folder: Path) -> list[Path]:
    return sorted(p for p in (stage_folder / "plots").glob("*") if p.suffix in (".png", ".svg"))
