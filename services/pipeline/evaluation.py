"""The evaluation pipeline: (protocol, anonymizer, config) -> result JSON + plots.

Stages (each a plain function keyed by a content hash of its inputs, see `stage_runner`):

1. ``corpus``      the protocol and its manifest (synthetic corpus generated when none is given);
2. ``anonymize``   the attacker-train, enrollment and trial sets through the anonymizer, each with
                   targets drawn by the TSA (training data always at utterance level);
3. ``train``       the attacker's recognizer per (training data, seed): original speech for the
                   ignorant and lazy-informed attackers, anonymized speech for the semi-informed;
4. ``embed``       embeddings of every (recognizer, set) pair a scenario needs;
5. ``score``       per (scenario, back-end, seed): scores, EER (+ bootstrap interval), Cllr,
                   min Cllr, linkability, ZEBRA, DET points, SRD on the embeddings;
6. ``report``      results.json, summary over seeds, plots.

The same stage functions are what the platform's Celery tasks run; here they run in-process.
"""

from __future__ import annotations

import json
import platform
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np

from services import plotting as plots
from services.anonymizers.registry import build_anonymizer_of_kind
from services.anonymizers.service import anonymize_manifest, build_target_voices
from services.anonymizers.target_selection import select_targets_with, targets_for_utterances
from services.attacker.embeddings import extract_embeddings, resolve_device
from services.attacker.probe import probe_error_rate
from services.attacker.training import (
    ADVERSARIAL_CHECKPOINT_RULE,
    TrainedAttacker,
    TrainingItem,
    train_attacker,
)
from services.attacks.prerestore import plot_per_parameter_eer
from services.audio import read_audio
from services.corpus.loaders import read_manifest
from services.corpus.manifest import Manifest
from services.corpus.protocol import (
    Protocol,
    TargetSelection,
    build_protocol,
    load_protocol_and_manifest,
    save_protocol,
)
from services.errors import ConfigError
from services.metrics import (
    bootstrap_eer,
    compute_cllr,
    compute_linkability,
    compute_min_cllr,
    compute_zebra,
    det_curve,
)
from services.pipeline.config import EvaluationConfig
from services.pipeline.stage_runner import StageOutcome, StageRunner
from services.scoring import (
    CosineBackend,
    PLDABackend,
    TrialSet,
    eer_report,
    score_trials,
    train_plda,
)
from services.studies.dataset_size import SizeStudyConfig

RESULT_SCHEMA_VERSION = 1

CONTAINER_RUNS_NAME = "container-runs.json"
"""Record of the container runs of an anonymize stage (kind ``container``), in its folder."""

Phase = Literal["corpus", "anonymize", "train", "embed", "score", "analyze", "report"]
PHASES: tuple[Phase, ...] = ("corpus", "anonymize", "train", "embed", "score", "analyze", "report")
"""The pipeline's phases in order; the platform runs each as a Celery task on its queue."""

ProgressReporter = Callable[[str, float, str], None]
"""``(stage, fraction done in [0, 1], message)``; stages report as they go."""

_SET_NAMES = ("train", "validation", "enrollment", "trial")

# Which recognizer and which enrollment data each scenario uses (PROTOCOLS.md section 3).
# Trials are always anonymized, except in the unprotected "original" reference.
_SCENARIO_PLAN: dict[str, tuple[str, str, str]] = {
    # scenario: (recognizer trained on, enrollment data, trial data)
    "original": ("original", "original", "original"),
    "ignorant": ("original", "original", "anonymized"),
    "lazy-informed": ("original", "anonymized", "anonymized"),
    "semi-informed": ("anonymized", "anonymized", "anonymized"),
}


def _noop_progress(stage: str, fraction: float, message: str) -> None:
    return None


@dataclass
class _Sets:
    """Manifests of one data condition (original or anonymized) and their stage keys."""

    train: Manifest
    validation: Manifest
    enrollment: Manifest
    trial: Manifest
    keys: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Manifest:
        return {
            "train": self.train,
            "validation": self.validation,
            "enrollment": self.enrollment,
            "trial": self.trial,
        }[name]


class _AudioCache:
    """Waveforms read once per run (the same utterance feeds training, embedding and SRD)."""

    def __init__(self) -> None:
        self._cache: dict[Path, np.ndarray] = {}

    def load(self, manifest: Manifest) -> list[np.ndarray]:
        out = []
        for u in manifest.utterances:
            p = manifest.resolve(u)
            if p not in self._cache:
                self._cache[p] = read_audio(p)[0]
            out.append(self._cache[p])
        return out


def _rel(folder: Path, path: Path) -> str:
    return str(path.relative_to(folder))


class EvaluationRun:
    """One evaluation in a work folder; ``run()`` executes (or reuses) every stage."""

    def __init__(
        self,
        config: EvaluationConfig,
        out_dir: Path,
        *,
        cache_dir: Path | None = None,
        progress: ProgressReporter | None = None,
        stages_dir: Path | None = None,
    ) -> None:
        self.cfg = config
        self.out_dir = Path(out_dir)
        # Stages are content-addressed, so evaluations may share one store (default: private).
        self.runner = StageRunner(Path(stages_dir) if stages_dir else self.out_dir / "stages")
        self.cache_dir = cache_dir
        self.progress = progress or _noop_progress
        self.audio = _AudioCache()

    # -- stage 1 -----------------------------------------------------------------------------
    def corpus_stage(self) -> tuple[Protocol, Manifest, str]:
        """The protocol, its (duration-filtered) manifest and the stage key."""
        cfg = self.cfg
        if cfg.protocol is not None:
            protocol, manifest = load_protocol_and_manifest(cfg.protocol)
            return protocol, manifest, protocol.content_hash or protocol.compute_hash()
        spec = cfg.synthetic

        def make(folder: Path) -> dict[str, Any]:
            from services.corpus.synthetic import generate_synthetic_corpus

            self.progress("corpus", 0.0, "generating the synthetic corpus")
            manifest = generate_synthetic_corpus(
                folder / "corpus",
                n_speakers=spec.n_speakers,
                utts_per_speaker=spec.utts_per_speaker,
                seed=spec.seed,
                min_duration_s=spec.min_duration_s,
                max_duration_s=spec.max_duration_s,
            )
            protocol = build_protocol(
                manifest,
                name=f"synthetic-{spec.n_speakers}x{spec.utts_per_speaker}-s{spec.seed}",
                manifest_path="corpus/manifest.jsonl",
                n_attacker_train_speakers=spec.n_attacker_train_speakers,
                n_eval_speakers=spec.n_eval_speakers,
                n_target_speakers=spec.n_target_speakers,
                trials_per_speaker=spec.trials_per_speaker,
                enrollments_per_speaker=spec.enrollments_per_speaker,
                seed=spec.seed,
            )
            save_protocol(protocol, folder / "protocol.json")
            self.progress("corpus", 1.0, f"{len(manifest)} utterances")
            return {"protocol": "protocol.json"}

        outcome = self.runner.run("corpus", {"synthetic": spec.model_dump(mode="json")}, make)
        protocol, manifest = load_protocol_and_manifest(outcome.folder / "protocol.json")
        return protocol, manifest, protocol.content_hash or protocol.compute_hash()

    # -- stage 2 -----------------------------------------------------------------------------
    def original_sets(self, protocol: Protocol, manifest: Manifest, key: str) -> _Sets:
        sets = _Sets(
            train=manifest.subset(protocol.attacker_train),
            validation=manifest.subset(protocol.attacker_validation),
            enrollment=manifest.subset(protocol.enrollment),
            trial=manifest.subset(protocol.trial),
        )
        sets.keys = {
            name: f"original:{key}:{name}"
            for name in ("train", "validation", "enrollment", "trial")
        }
        return sets

    def anonymize_stage(
        self,
        protocol: Protocol,
        manifest: Manifest,
        protocol_key: str,
        original: _Sets,
        *,
        tsa_seed: int | None = None,
        names: tuple[str, ...] = ("train", "validation", "enrollment", "trial"),
    ) -> _Sets:
        """Anonymize the sets ``names``; enrollment and trial get independently drawn targets.

        ``tsa_seed`` replaces the TSA's seed (the size study anonymizes once per target seed);
        sets not in ``names`` are returned as the original ones.
        """
        cfg = self.cfg
        tsa: TargetSelection = cfg.tsa or protocol.target_selection
        if tsa_seed is not None:
            tsa = tsa.model_copy(update={"seed": tsa_seed})
        spec = cfg.anonymizer
        # A container gets the GPU exactly when this worker has one (the gpu queue's hosts).
        options = {"gpu": resolve_device(cfg.training.device).type == "cuda"}
        anonymizer = build_anonymizer_of_kind(
            spec.kind,
            name=spec.name,
            params=spec.params,
            archive=spec.archive,
            image=spec.image,
            **(options if spec.kind == "container" else {}),
        )
        # A container runs once per shard: hand it whole shards, not the default small batches.
        batch_size = int(getattr(anonymizer, "shard_size", 16))
        target_manifest = manifest.subset(
            u.utt_id for u in manifest.utterances if u.speaker_id in set(protocol.target_pool)
        )
        voices: dict[str, Any] | None = None
        out: dict[str, Manifest] = {n: original.get(n) for n in _SET_NAMES}
        keys: dict[str, str] = dict(original.keys)
        for i, name in enumerate(names):
            subset = original.get(name)
            # Attacker training data is always anonymized at utterance level (PROTOCOLS.md s. 2).
            granularity = "utterance" if name in ("train", "validation") else tsa.granularity
            inputs = {
                "protocol": protocol_key,
                "set": name,
                "manifest": subset.content_hash(),
                "anonymizer": anonymizer.config(),
                "tsa": tsa.model_dump(mode="json"),
                "granularity": granularity,
            }

            def make(
                folder: Path,
                subset: Manifest = subset,
                name: str = name,
                g: str = granularity,
                i: int = i,
            ) -> dict[str, Any]:
                nonlocal voices
                if voices is None:
                    voices = build_target_voices(target_manifest)
                mapping = select_targets_with(tsa, subset, voices, salt=name, granularity=g)  # type: ignore[arg-type]
                targets = targets_for_utterances(mapping, voices)

                def report(done: int, total: int) -> None:
                    self.progress(
                        "anonymize",
                        (i + done / max(total, 1)) / len(names),
                        f"{name} {done}/{total}",
                    )

                runs_before = len(getattr(anonymizer, "runs", ()))
                anonymize_manifest(
                    subset,
                    anonymizer,
                    targets,
                    folder / "audio",
                    seed=tsa.seed,
                    progress=report,
                    batch_size=batch_size,
                )
                outputs = {"manifest": "audio/manifest.jsonl"}
                run_record = getattr(anonymizer, "run_record", None)
                if callable(run_record):
                    # A container's runs (exit code, wall time, log tail, metadata.json per shard)
                    # are otherwise lost on success: keep those of this set with its audio.
                    record = run_record()
                    record["runs"] = record["runs"][runs_before:]
                    (folder / CONTAINER_RUNS_NAME).write_text(json.dumps(record, indent=1))
                    outputs["container_runs"] = CONTAINER_RUNS_NAME
                return outputs

            outcome = self.runner.run("anonymize", inputs, make)
            out[name] = read_manifest(
                outcome.folder / outcome.outputs["manifest"], check_audio=False
            )
            keys[name] = f"anonymize:{outcome.key}"
        return _Sets(out["train"], out["validation"], out["enrollment"], out["trial"], keys)

    # -- stage 3 -----------------------------------------------------------------------------
    def train_stage(
        self, data: _Sets, condition: str, seed: int
    ) -> tuple[TrainedAttacker, StageOutcome]:
        """Train the recognizer on ``data`` (original or anonymized speech) with ``seed``."""
        training = self.cfg.training.model_copy(update={"seed": seed})
        if condition == "original" and training.target_classifier != "off":
            # Original speech has no targets: there is nothing for a target head to learn.
            training = training.model_copy(update={"target_classifier": "off"})
        inputs = {
            "condition": condition,
            "train": data.keys["train"],
            "validation": data.keys["validation"],
            "training": training.model_dump(mode="json", exclude={"device", "dataloader_workers"}),
        }
        if training.target_classifier == "adversarial":
            # Adversarial models cached under the older rule may hold a w_T = 0 epoch.
            inputs["checkpoint_rule"] = ADVERSARIAL_CHECKPOINT_RULE
        holder: dict[str, TrainedAttacker] = {}

        def make(folder: Path) -> dict[str, Any]:
            def items(m: Manifest) -> list[TrainingItem]:
                waves = self.audio.load(m)
                return [
                    TrainingItem(w, u.speaker_id, u.target_id)
                    for w, u in zip(waves, m.utterances, strict=True)
                ]

            train_items, val_items = items(data.train), items(data.validation)
            label = f"{condition} seed {seed}"

            def report(
                epoch: int, step: int, steps: int, eta: float, metrics: dict[str, float]
            ) -> None:
                frac = ((epoch - 1) + step / max(steps, 1)) / training.epochs
                msg = f"{label}: epoch {epoch}/{training.epochs} step {step}/{steps} ETA {eta:.0f}s"
                self.progress("train", min(frac, 1.0), msg)

            result = train_attacker(
                train_items, val_items, training, folder / "model", progress=report
            )
            holder["result"] = result
            (folder / "trained.json").write_text(result.model_dump_json(indent=2))
            return {"trained": "trained.json"}

        outcome = self.runner.run("train", inputs, make, resumable=True)
        trained = TrainedAttacker.model_validate_json((outcome.folder / "trained.json").read_text())
        # Paths recorded while training point into the temporary folder that became ``folder``.
        trained = trained.model_copy(
            update={
                "output_dir": outcome.folder / "model",
                "best_checkpoint": outcome.folder / "model" / trained.best_checkpoint.name,
                "last_checkpoint": outcome.folder / "model" / trained.last_checkpoint.name,
            }
        )
        return trained, outcome

    # -- stage 4 -----------------------------------------------------------------------------
    def embed_stage(
        self, model_key: str, checkpoint: Path, data: Manifest, data_key: str
    ) -> np.ndarray:
        """Embeddings (n, dim) of ``data`` by the recognizer at ``checkpoint`` (manifest order)."""
        inputs = {"model": model_key, "data": data_key, "manifest": data.content_hash()}

        def make(folder: Path) -> dict[str, Any]:
            self.progress("embed", 0.0, f"{len(data)} utterances")
            waves = self.audio.load(data)
            emb = extract_embeddings(
                checkpoint, waves, cache=self.cache_dir, device=self.cfg.training.device
            )
            np.save(folder / "embeddings.npy", emb)
            (folder / "utt_ids.json").write_text(json.dumps([u.utt_id for u in data.utterances]))
            self.progress("embed", 1.0, f"{len(data)} utterances")
            return {"embeddings": "embeddings.npy", "utt_ids": "utt_ids.json"}

        outcome = self.runner.run("embed", inputs, make)
        return np.load(outcome.folder / "embeddings.npy")

    # -- stage 5 -----------------------------------------------------------------------------
    def score_stage(
        self,
        scenario: str,
        backend_name: str,
        seed: int,
        enrollment: tuple[Manifest, np.ndarray, str],
        trial: tuple[Manifest, np.ndarray, str],
        plda_train: tuple[Manifest, np.ndarray, str] | None,
    ) -> dict[str, Any]:
        """Scores and every metric of one (scenario, back-end, seed) row."""
        cfg = self.cfg
        gender_mode = "per_gender" if cfg.gender_handling == "per-gender" else "pooled"
        inputs = {
            "scenario": scenario,
            "backend": backend_name,
            "seed": seed,
            "enrollment": enrollment[2],
            "trial": trial[2],
            "plda_train": plda_train[2] if plda_train else None,
            "gender_mode": gender_mode,
            "metrics": cfg.metrics.model_dump(mode="json"),
        }

        def make(folder: Path) -> dict[str, Any]:
            e_man, e_emb, _ = enrollment
            t_man, t_emb, _ = trial
            trial_set = TrialSet.from_arrays(
                t_emb,
                np.array([u.speaker_id for u in t_man.utterances]),
                np.array([u.gender for u in t_man.utterances]),
                e_emb,
                np.array([u.speaker_id for u in e_man.utterances]),
                np.array([u.gender for u in e_man.utterances]),
            )
            backend: Any
            if backend_name == "cosine":
                backend = CosineBackend()
            else:
                assert plda_train is not None
                p_man, p_emb, _ = plda_train
                backend = PLDABackend(
                    train_plda(p_emb, np.array([u.speaker_id for u in p_man.utterances]))
                )
            scored = score_trials(backend, trial_set, gender_mode=gender_mode)  # type: ignore[arg-type]
            row = _metrics_row(scored, cfg.metrics, seed, llr_scores=backend_name == "plda")
            # SRD on the embeddings: inputs = trial utterances, references = enrollment speakers.
            if cfg.metrics.srd:
                row["srd"] = _srd_of(scored, cfg.metrics.bootstrap_resamples, seed)
            matrices = {k: m.scores for k, m in scored.partitions.items()}
            np.savez_compressed(folder / "scores.npz", allow_pickle=False, **matrices)
            np.savez_compressed(
                folder / "score_sample.npz", allow_pickle=False, **_score_sample(scored, seed)
            )
            (folder / "row.json").write_text(json.dumps(row, indent=2))
            return {"row": "row.json", "scores": "scores.npz", "score_sample": "score_sample.npz"}

        outcome = self.runner.run("score", inputs, make)
        row: dict[str, Any] = json.loads((outcome.folder / "row.json").read_text())
        row.update(
            {"scenario": scenario, "backend": backend_name, "seed": seed, "stage_key": outcome.key}
        )
        return row

    # -- the whole run ---------------------------------------------------------------------------
    def run(self, stop_after: Phase | None = None) -> dict[str, Any] | None:
        """Run every stage, or every stage up to and including the phase ``stop_after``.

        Finished stages are reused, so calling ``run(stop_after=p)`` for each phase in turn (what
        the platform's workers do, each on its own queue) computes every stage exactly once.
        Returns the result document after the ``report`` phase, else ``None``.
        """
        if stop_after is not None and stop_after not in PHASES:
            raise ConfigError(f"stop_after: unknown phase {stop_after!r}; one of {PHASES}")
        last = PHASES.index(stop_after) if stop_after is not None else len(PHASES) - 1
        t0 = time.perf_counter()
        cfg = self.cfg
        protocol, manifest, protocol_key = self.corpus_stage()
        if last == PHASES.index("corpus"):
            return None
        original = self.original_sets(protocol, manifest, protocol_key)
        needs_anon = any(s != "original" for s in cfg.scenarios)
        anonymized = (
            self.anonymize_stage(protocol, manifest, protocol_key, original) if needs_anon else None
        )
        if last == PHASES.index("anonymize"):
            return None

        conditions = {"original": original, "anonymized": anonymized}
        models: dict[tuple[str, int], tuple[TrainedAttacker, StageOutcome]] = {}
        needed = sorted({(_SCENARIO_PLAN[s][0], seed) for s in cfg.scenarios for seed in cfg.seeds})
        for condition, seed in needed:
            data = conditions[condition]
            assert data is not None
            models[(condition, seed)] = self.train_stage(data, condition, seed)
        if last == PHASES.index("train"):
            return None

        # Every (recognizer, data condition, set) the scenarios and back-ends need, embedded once.
        plan: list[tuple[str, str, int, str, str, str | None]] = []
        wanted: list[tuple[str, int, str, str]] = []
        for scenario in cfg.scenarios:
            model_cond, enr_cond, trial_cond = _SCENARIO_PLAN[scenario]
            for seed in cfg.seeds:
                for backend in cfg.backends:
                    plda_cond = model_cond if backend == "plda" else None
                    plan.append((scenario, backend, seed, enr_cond, trial_cond, plda_cond))
                    wanted += [
                        (model_cond, seed, enr_cond, "enrollment"),
                        (model_cond, seed, trial_cond, "trial"),
                    ]
                    if plda_cond is not None:
                        wanted.append((model_cond, seed, plda_cond, "train"))
        # The target probe (services/attacker/probe.py) reads the anonymized recognizers'
        # embeddings of their own training data, whenever a target classifier was asked for.
        probed = [
            ("anonymized", seed, "anonymized", "train")
            for (condition, seed) in needed
            if condition == "anonymized" and cfg.training.target_classifier != "off"
        ]
        wanted += probed
        embeddings: dict[tuple[str, int, str, str], tuple[Manifest, np.ndarray, str]] = {}
        for k in dict.fromkeys(wanted):
            condition, seed, data_condition, set_name = k
            trained, outcome = models[(condition, seed)]
            data = conditions[data_condition]
            assert data is not None
            m = data.get(set_name)
            emb = self.embed_stage(
                f"train:{outcome.key}", trained.best_checkpoint, m, data.keys[set_name]
            )
            embeddings[k] = (m, emb, f"embed:{outcome.key}:{data.keys[set_name]}")
        if last == PHASES.index("embed"):
            return None

        rows = []
        for row_scenario, row_backend, seed, enr_cond, trial_cond, plda_cond in plan:
            model_cond = _SCENARIO_PLAN[row_scenario][0]
            enr = embeddings[(model_cond, seed, enr_cond, "enrollment")]
            tri = embeddings[(model_cond, seed, trial_cond, "trial")]
            plda = embeddings[(model_cond, seed, plda_cond, "train")] if plda_cond else None
            self.progress("score", 0.0, f"{row_scenario} {row_backend} seed {seed}")
            rows.append(self.score_stage(row_scenario, row_backend, seed, enr, tri, plda))
        self.progress("score", 1.0, f"{len(rows)} rows")
        if last == PHASES.index("score"):
            return None
        analyses = self.analyze_phase(protocol, manifest, protocol_key, conditions, models)
        if last == PHASES.index("analyze"):
            return None
        probes = {(k[0], k[1]): _probe_recognizer(*embeddings[k][:2]) for k in probed}
        return self._report(
            protocol, protocol_key, rows, models, analyses, time.perf_counter() - t0, probes
        )

    # -- analyses (PROTOCOLS.md sections 5-7) ------------------------------------------------
    def _embed_set(
        self,
        models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
        model: tuple[str, int],
        data: _Sets,
        set_name: str,
    ) -> np.ndarray:
        trained, outcome = models[model]
        return self.embed_stage(
            f"train:{outcome.key}", trained.best_checkpoint, data.get(set_name), data.keys[set_name]
        )

    def analyze_phase(
        self,
        protocol: Protocol,
        manifest: Manifest,
        protocol_key: str,
        conditions: Mapping[str, _Sets | None],
        models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
    ) -> dict[str, Any]:
        """Run the analyses the config selects; returns their JSON-able results by name."""
        spec = self.cfg.analyses
        out: dict[str, Any] = {}
        if spec.srd_representations is not None:
            out["srd_representations"] = self._srd_representations(conditions, models)
        if spec.size_study is not None:
            out["size_study"] = self._size_study(
                protocol, manifest, protocol_key, conditions, models
            )
        if spec.prerestoration is not None and conditions.get("anonymized") is not None:
            out["prerestoration"] = self._prerestoration(conditions, models)
        return out

    def _prerestoration(
        self,
        conditions: Mapping[str, _Sets | None],
        models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
    ) -> dict[str, Any]:
        """Pre-restoration attacks on the anonymized trials, per attacker (seed 001).

        The enrollment side is the original or the anonymized enrollment set (``enrollment``).
        """
        from services.attacks.prerestore import run_prerestoration
        from services.attacks.prerestore_config import (
            PIPELINE_ATTACKER_TRAINING,
            AttackerTraining,
            anonymizer_family_of,
        )

        spec = self.cfg.analyses.prerestoration
        assert spec is not None
        data = conditions["anonymized"]
        enrollment_data = conditions[spec.enrollment]
        assert data is not None and enrollment_data is not None
        seed = self.cfg.seeds[0]
        anon = self.cfg.anonymizer
        family = anonymizer_family_of(anon.name, anon.params) if anon.kind == "builtin" else None
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
                    self.progress("analyze", fraction, f"pre-restoration {step}: {message}")

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
                    device=self.cfg.training.device
                    if self.cfg.training.device != "auto"
                    else "cpu",
                )
                (folder / "plots").mkdir()
                plot_per_parameter_eer(result, folder / "plots" / "per_parameter_eer")
                (folder / "result.json").write_text(
                    json.dumps(result.to_dict(), default=_json_default)
                )
                return {"result": "result.json"}

            outcome = self.runner.run("analysis-prerestore", inputs, make)
            results[attacker] = {
                **json.loads((outcome.folder / "result.json").read_text()),
                "stage_key": outcome.key,
            }
        return results

    def _srd_representations(
        self,
        conditions: Mapping[str, _Sets | None],
        models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
    ) -> dict[str, Any]:
        """SRD of embeddings, F0 and phone units, on original and anonymized evaluation speech."""
        from services.attacks.srd_representations import run_srd_representations

        spec = self.cfg.analyses.srd_representations
        assert spec is not None
        seed = self.cfg.seeds[0]
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
                    [self._embed_set(models, model, data, s) for s in ("enrollment", "trial")]
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
                self.progress("analyze", 0.0, f"SRD representations ({condition} speech)")
                result = run_srd_representations(
                    self.audio.load(pooled),
                    [u.speaker_id for u in pooled.utterances],
                    attacker_train_waveforms=self.audio.load(codebook),
                    embeddings=embeddings,
                    cache_dir=(self.cache_dir / "f0") if self.cache_dir else None,
                    out_dir=folder / "plots",
                    config=spec,
                    seed=seed,
                )
                (folder / "result.json").write_text(json.dumps(result, default=_json_default))
                return {"result": "result.json"}

            outcome = self.runner.run("analysis-srd", inputs, make)
            results[condition] = {
                **json.loads((outcome.folder / "result.json").read_text()),
                "stage_key": outcome.key,
            }
        return results

    def _size_study(
        self,
        protocol: Protocol,
        manifest: Manifest,
        protocol_key: str,
        conditions: Mapping[str, _Sets | None],
        models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
    ) -> dict[str, Any]:
        """Dataset-size sweeps on the strongest attacker's embeddings, one table per TSA seed."""
        from services.studies.dataset_size import EmbeddingTable, run_size_study

        spec = self.cfg.analyses.size_study
        assert spec is not None
        seed = self.cfg.seeds[0]
        original = conditions["original"]
        assert original is not None
        anonymized_model = ("anonymized", seed) in models
        model = ("anonymized", seed) if anonymized_model else ("original", seed)
        tables: dict[int, EmbeddingTable] = {}
        table_keys: dict[int, list[str]] = {}
        for target_seed in spec.target_seeds:
            if anonymized_model:
                data = self.anonymize_stage(
                    protocol,
                    manifest,
                    protocol_key,
                    original,
                    tsa_seed=target_seed,
                    names=("enrollment", "trial"),
                )
            else:
                data = original
            enr = self._embed_set(models, model, data, "enrollment")
            tri = self._embed_set(models, model, data, "trial")
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
            self._embed_set(models, model, conditions[model[0]] or original, "train")
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
                self.progress("analyze", i / max(n, 1), f"size study: {sweep} {i}/{n}")

            study = SizeStudyConfig.model_validate(
                spec.model_dump(exclude={"target_seeds", "backend"})
            )
            result = run_size_study(
                tables, backend, study, out_dir=str(folder / "plots"), progress=report
            )
            (folder / "result.json").write_text(json.dumps(result, default=_json_default))
            return {"result": "result.json"}

        outcome = self.runner.run("analysis-size", inputs, make)
        return {
            **json.loads((outcome.folder / "result.json").read_text()),
            "attacker": f"{model[0]}-seed{seed}",
            "stage_key": outcome.key,
        }

    def _copy_analysis_plots(
        self, analyses: Mapping[str, Any], plot_dir: Path
    ) -> dict[str, list[str]]:
        """Copy the analyses' plots next to the others (``plots/<analysis>-<name>``)."""
        import shutil

        stage_folders: list[tuple[str, Path]] = []
        for condition, res in analyses.get("srd_representations", {}).items():
            stage_folders.append(
                (f"srd-{condition}", self.runner.folder("analysis-srd", res["stage_key"]))
            )
        if "size_study" in analyses:
            key = analyses["size_study"]["stage_key"]
            stage_folders.append(("size", self.runner.folder("analysis-size", key)))
        for attacker, res in analyses.get("prerestoration", {}).items():
            folder = self.runner.folder("analysis-prerestore", res["stage_key"])
            stage_folders.append((f"prerestore-{attacker}", folder))
        copied: dict[str, list[str]] = {}
        plot_dir.mkdir(parents=True, exist_ok=True)
        for prefix, folder in stage_folders:
            for path in _stage_plot_files(folder):
                name = f"{prefix}-{path.name}"
                shutil.copyfile(path, plot_dir / name)
                copied.setdefault(f"{prefix}-{path.stem}", []).append(name)
        return copied

    # -- stage 6 -----------------------------------------------------------------------------
    def _report(
        self,
        protocol: Protocol,
        protocol_key: str,
        rows: list[dict[str, Any]],
        models: Mapping[tuple[str, int], tuple[TrainedAttacker, StageOutcome]],
        analyses: dict[str, Any],
        seconds: float,
        probes: Mapping[tuple[str, int], dict[str, Any]],
    ) -> dict[str, Any]:
        cfg = self.cfg
        plot_dir = self.out_dir / "plots"
        plot_files: dict[str, list[str]] = {}
        training = {}
        for (condition, seed), (trained, outcome) in sorted(models.items()):
            name = f"{condition}-seed{seed}"
            history = [r.model_dump(mode="json") for r in trained.history]
            training[name] = {
                "condition": condition,
                "seed": seed,
                "best_epoch": trained.best_epoch,
                "best_w_target": trained.best_w_target,
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
                    levels["probe target error, after training"] = target_probe[
                        "error_rate_percent"
                    ]
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
        for scenario in cfg.scenarios:
            for backend in cfg.backends:
                sel = [r for r in rows if r["scenario"] == scenario and r["backend"] == backend]
                curves = {
                    f"seed {r['seed']}": (np.array(r["det"]["pfa"]), np.array(r["det"]["pmiss"]))
                    for r in sel
                }
                plot_files[f"det-{scenario}-{backend}"] = plots.plot_det_curves(
                    curves, plot_dir / f"det-{scenario}-{backend}", f"DET: {scenario}, {backend}"
                )
                first = sel[0]
                if "srd" in first:
                    srd = first["srd"]
                    plot_files[f"ranks-{scenario}-{backend}"] = plots.plot_rank_histogram(
                        np.array(srd["empirical"]["pmf"]),
                        plot_dir / f"ranks-{scenario}-{backend}",
                        f"Rank histogram: {scenario}, {backend}, seed {first['seed']}",
                        fitted=np.array(srd["constrained_fit"]["pmf"])
                        if srd.get("constrained_fit")
                        else None,
                    )
                sample = np.load(
                    self.runner.folder("score", first["stage_key"]) / "score_sample.npz"
                )
                tar, non = sample["target"], sample["nontarget"]
                plot_files[f"scores-{scenario}-{backend}"] = plots.plot_score_histograms(
                    tar,
                    non,
                    plot_dir / f"scores-{scenario}-{backend}",
                    f"Scores: {scenario}, {backend}",
                )
        plot_files.update(self._copy_analysis_plots(analyses, plot_dir))
        result = {
            "schema_version": RESULT_SCHEMA_VERSION,
            "name": cfg.name,
            "created_at": datetime.now(UTC).isoformat(),
            "protocol": {"name": protocol.name, "hash": protocol_key},
            "anonymizer": cfg.anonymizer.model_dump(mode="json"),
            "rows": [{k: v for k, v in r.items() if k not in ("det", "stage_key")} for r in rows],
            "summary": _with_prerestoration(summarize_rows(rows), analyses),
            "training": training,
            "analyses": analyses,
            "plots": {k: [f"plots/{n}" for n in v] for k, v in plot_files.items()},
            "stages": [
                {"stage": o.stage, "key": o.key, "reused": o.reused, "seconds": round(o.seconds, 3)}
                for o in self.runner.log
            ],
            "provenance": provenance(cfg, protocol_key, seconds),
        }
        (self.out_dir / "results.json").write_text(
            json.dumps(result, indent=2, default=_json_default)
        )
        return result


def _with_prerestoration(
    summary: list[dict[str, Any]], analyses: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Add each attacker's lowest pre-restoration EER (%) over families and modes to the summary.

    Stored as ``prerestore_eer_percent`` of (attacker scenario, cosine): the leaderboard's
    pre-restoration column reads the ignorant attacker's (seed 001's setting).
    """
    for attacker, res in analyses.get("prerestoration", {}).items():
        entries = res.get("entries", [])
        if not entries:
            continue
        best = min(float(e["eer_percent"]) for e in entries)
        entry = next(
            (e for e in summary if e["scenario"] == attacker and e["backend"] == "cosine"), None
        )
        if entry is None:
            entry = {"scenario": attacker, "backend": "cosine", "n_seeds": 1}
            summary.append(entry)
        entry["prerestore_eer_percent"] = {"mean": best, "std": 0.0}
    return summary


def _probe_recognizer(train: Manifest, embeddings: np.ndarray) -> dict[str, Any]:
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


def _stage_plot_files(stage_folder: Path) -> list[Path]:
    return sorted(p for p in (stage_folder / "plots").glob("*") if p.suffix in (".png", ".svg"))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON-serializable: {type(obj).__name__}")


def _target_nontarget(scored: Any) -> tuple[np.ndarray, np.ndarray]:
    parts = [m.target_nontarget() for m in scored.partitions.values()]
    tar = np.concatenate([p.target for p in parts]).astype(np.float64)
    non = np.concatenate([p.nontarget for p in parts]).astype(np.float64)
    return tar, non


def _score_sample(scored: Any, seed: int) -> dict[str, np.ndarray]:
    """A bounded random sample of target / non-target scores for the histogram plot."""
    tar, non = _target_nontarget(scored)
    rng = np.random.default_rng(seed)
    return {"target": rng.permutation(tar)[:5000], "nontarget": rng.permutation(non)[:20000]}


def _metrics_row(scored: Any, spec: Any, seed: int, *, llr_scores: bool) -> dict[str, Any]:
    """EER (+ per gender, + bootstrap interval), Cllr, min Cllr, linkability, ZEBRA, DET points.

    Cllr (bits) is reported only when the scores are log-likelihood ratios (``llr_scores``, the
    PLDA back-end): on cosine scores it measures the score scale, not the evidence. min Cllr,
    ZEBRA and the rest calibrate by PAV first, so they apply to any score.
    """
    report = eer_report(scored)
    parts = list(scored.partitions.values())
    tar, non = _target_nontarget(scored)
    row: dict[str, Any] = {
        "eer_percent": report.eer_percent,
        "eer_threshold": report.pooled.threshold if report.pooled is not None else None,
        "eer_per_gender_percent": {g: r.eer_percent for g, r in report.per_gender.items()},
        "n_target": int(tar.size),
        "n_nontarget": int(non.size),
    }
    if spec.bootstrap_resamples > 0:
        scores = np.concatenate([m.scores.ravel() for m in parts])
        is_target = np.concatenate([m.target_mask().ravel() for m in parts])
        speakers = np.concatenate(
            [np.broadcast_to(m.row_speaker_ids[:, None], m.scores.shape).ravel() for m in parts]
        )
        ci = bootstrap_eer(
            scores, is_target, speakers, n_resamples=spec.bootstrap_resamples, seed=seed
        )
        row["eer_ci95_percent"] = [ci.low, ci.high]
    if spec.cllr:
        if llr_scores:
            row["cllr_bits"] = compute_cllr(tar, non)
        row["min_cllr_bits"] = compute_min_cllr(tar, non)
    if spec.linkability:
        try:
            row["linkability"] = compute_linkability(tar, non).d_sys
        except ValueError:
            row["linkability"] = None  # too few mated scores for the VPC binning rule
    if spec.zebra:
        z = compute_zebra(tar, non)
        row["zebra"] = {
            "expected_disclosure_bits": z.expected_disclosure_bits,
            "worst_case_log10_lr": z.worst_case_log10_lr,
            "category": z.category,
        }
    det = det_curve(tar, non, n_points=200)
    row["det"] = {"pfa": det.pfa.tolist(), "pmiss": det.pmiss.tolist()}
    return row


def _srd_of(scored: Any, resamples: int, seed: int) -> dict[str, Any]:
    """SRD of the score matrix: for each trial, the rank of its own speaker among the models."""
    from services.attacks.srd_representations import srd_report

    parts = list(scored.partitions.values())
    # Per-gender mode: the partitions have different N; the larger one is reported.
    m = max(parts, key=lambda p: p.scores.shape[1])
    col_index = {s: i for i, s in enumerate(m.col_speaker_ids.tolist())}
    ref = np.array([col_index[s] for s in m.row_speaker_ids.tolist()])
    report, _ = srd_report(m.scores, ref, m.row_speaker_ids, n_resamples=resamples, seed=seed)
    return report


_SUMMARY_METRICS: dict[str, Callable[[Mapping[str, Any]], float | None]] = {
    "eer_percent": lambda r: r.get("eer_percent"),
    "cllr_bits": lambda r: r.get("cllr_bits"),
    "min_cllr_bits": lambda r: r.get("min_cllr_bits"),
    "linkability": lambda r: r.get("linkability"),
    "srd_mean_disclosure_bits": lambda r: (
        r["srd"]["empirical"]["mean_disclosure_bits"] if "srd" in r else None
    ),
    "srd_identification_rate_percent": lambda r: (
        r["srd"]["empirical"]["identification_rate_percent"] if "srd" in r else None
    ),
}


def summarize_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mean and (sample) standard deviation over seeds per (scenario, back-end)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["backend"]), []).append(r)
    out = []
    for (scenario, backend), sel in groups.items():
        entry: dict[str, Any] = {"scenario": scenario, "backend": backend, "n_seeds": len(sel)}
        for name, get in _SUMMARY_METRICS.items():
            values = np.array([v for v in (get(r) for r in sel) if v is not None], dtype=float)
            if values.size == 0:
                entry[name] = None
                continue
            std = float(values.std(ddof=1)) if values.size > 1 else 0.0
            entry[name] = {"mean": float(values.mean()), "std": std}
        out.append(entry)
    return out


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def provenance(cfg: EvaluationConfig, protocol_key: str, seconds: float) -> dict[str, Any]:
    """What a result was computed with: config, protocol, code and package versions, device."""
    import torch

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
        "code_version": _git_revision(),
        "packages": packages,
        "python": platform.python_version(),
        "device": device,
        "cuda_device": torch.cuda.get_device_name(0)
        if device == "cuda" and torch.cuda.is_available()
        else None,
        "host": socket.gethostname(),
        "wall_seconds": round(seconds, 3),
    }


def run_evaluation(
    config: EvaluationConfig,
    out_dir: str | Path,
    *,
    cache_dir: Path | None = None,
    progress: ProgressReporter | None = None,
    stages_dir: Path | None = None,
) -> dict[str, Any]:
    """Run (or resume) an evaluation into ``out_dir``; returns the result document.

    ``stages_dir``: a stage store shared between evaluations (stages with equal inputs are
    computed once); default ``out_dir/stages``.
    """
    if config.protocol is not None and not Path(config.protocol).is_file():
        raise ConfigError(f"protocol: file not found: {config.protocol}")
    run = EvaluationRun(
        config, Path(out_dir), cache_dir=cache_dir, progress=progress, stages_dir=stages_dir
    )
    result = run.run()
    assert result is not None
    return result
