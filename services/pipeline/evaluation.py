"""The evaluation pipeline: (protocol, anonymizer, config) -> result JSON + plots.

Phases (``services.pipeline.phases``); each stage is a plain function keyed by a content hash of
its inputs (see ``stage_runner``):

1. ``corpus``      the protocol and its manifest (synthetic corpus generated when none is given),
                   and its sets (``sets``);
2. ``anonymize``   the attacker-train, enrollment and trial sets through the anonymizer, each with
                   targets drawn by the TSA (training data always at utterance level)
                   (``stages.anonymize``);
3. ``train``       the attacker's recognizer per (training data, seed): original speech for the
                   ignorant and lazy-informed attackers, anonymized speech for the semi-informed
                   (``stages.train``);
   The attacker zoo (``zoo``, the config's ``attackers``) repeats steps 3-5 per attacker, each
   with its own training, back-ends and normalization; equal training configs share stages.
4. ``embed``       embeddings of every (recognizer, set) pair a scenario needs (``stages.embed``);
5. ``score``       per (scenario, back-end, seed): scores, EER (+ bootstrap interval), Cllr,
                   min Cllr, linkability, ZEBRA, DET points, SRD on the embeddings
                   (``stages.score``);
6. ``utility``     with a ``utility`` block: WER of an ASR trained on original speech, pitch
                   correlation, voice distinctiveness, the usable-speech guard (``stages.utility``);
7. ``analyze``     the optional analyses the config selects (``analyses``);
8. ``report``      results.json, summary over seeds, plots (``report``).

The same stage functions are what the platform's Celery tasks run; here they run in-process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from services.anonymizers.container import ContainerSandbox
from services.attacker.training import TrainedAttacker
from services.corpus.manifest import Manifest
from services.corpus.protocol import Protocol
from services.errors import ConfigError
from services.pipeline.analyses import Conditions, run_analyses
from services.pipeline.config import EvaluationConfig, attacker_config
from services.pipeline.phases import PHASES, Phase
from services.pipeline.report import ZooAttacker, probe_recognizer, write_report
from services.pipeline.sets import (
    SCENARIO_PLAN,
    SET_NAMES,
    ConditionSets,
    corpus_stage,
    original_sets,
)
from services.pipeline.stage_runner import StageOutcome, StageRunner
from services.pipeline.stages.anonymize import anonymize_sets
from services.pipeline.stages.context import (
    AudioCache,
    ProgressReporter,
    StageContext,
    no_progress,
)
from services.pipeline.stages.embed import embed_manifest
from services.pipeline.stages.score import EmbeddedSet, score_row
from services.pipeline.stages.train import (
    TrainedModels,
    train_recognizer,
    transfer_source,
    with_transfer_sources,
)
from services.pipeline.stages.utility import utility_stage
from services.pipeline.trust import measure_enrollment_leak
from services.pipeline.zoo import zoo_specs
from services.settings import get_settings

__all__ = ["PHASES", "EvaluationRun", "Phase", "ProgressReporter", "run_evaluation"]


class EvaluationRun:
    """One evaluation in a work folder; ``run()`` executes (or reuses) every stage.

    ``runner`` (the stage store) may be replaced before ``run()``: the platform's workers put a
    ``SyncedStageRunner`` there, which shares stages through the blob store. ``sandbox``: where
    anonymizer containers run (default: from the process settings, ``UNMASK_CONTAINER_*``).
    """

    def __init__(
        self,
        config: EvaluationConfig,
        out_dir: Path,
        *,
        cache_dir: Path | None = None,
        progress: ProgressReporter | None = None,
        stages_dir: Path | None = None,
        sandbox: ContainerSandbox | None = None,
    ) -> None:
        self.cfg = config
        self.out_dir = Path(out_dir)
        # Stages are content-addressed, so evaluations may share one store (default: private).
        self.runner = StageRunner(Path(stages_dir) if stages_dir else self.out_dir / "stages")
        self.cache_dir = cache_dir
        self.progress = progress or no_progress
        self.audio = AudioCache()
        self.sandbox = (
            sandbox if sandbox is not None else ContainerSandbox.from_settings(get_settings())
        )

    @property
    def context(self) -> StageContext:
        """What the stage functions read (built on each call: ``runner`` may be replaced)."""
        return self._context_of(self.cfg)

    def _context_of(self, config: EvaluationConfig) -> StageContext:
        """The stage context with ``config`` (an attacker's, ``config.attacker_config``)."""
        return StageContext(
            config, self.runner, self.progress, self.audio, self.cache_dir, self.sandbox
        )

    # -- the stages, one call each (services/pipeline/sets.py and stages/) ----------------------
    def corpus_stage(self) -> tuple[Protocol, Manifest, str]:
        """The protocol, its (duration-filtered) manifest and the stage key."""
        return corpus_stage(self.context)

    def original_sets(self, protocol: Protocol, manifest: Manifest, key: str) -> ConditionSets:
        """The protocol's sets of original speech."""
        return original_sets(protocol, manifest, key)

    def anonymize_stage(
        self,
        protocol: Protocol,
        manifest: Manifest,
        protocol_key: str,
        original: ConditionSets,
        *,
        tsa_seed: int | None = None,
        names: tuple[str, ...] = SET_NAMES,
    ) -> ConditionSets:
        """Anonymize the sets ``names`` (``stages.anonymize.anonymize_sets``)."""
        return anonymize_sets(
            self.context, protocol, manifest, protocol_key, original, tsa_seed=tsa_seed, names=names
        )

    def train_stage(
        self,
        data: ConditionSets,
        condition: str,
        seed: int,
        position: tuple[int, int] = (1, 1),
        *,
        context: StageContext | None = None,
        init_from: tuple[TrainedAttacker, StageOutcome] | None = None,
    ) -> tuple[TrainedAttacker, StageOutcome]:
        """Train the recognizer on ``data`` (original or anonymized speech) with ``seed``;
        ``position``: (i, n), recognizer i of the run's n (for progress); ``context``: an
        attacker's (default: the config's own); ``init_from``: the recognizer it starts from
        (transfer; ``stages.train.transfer_source``)."""
        return train_recognizer(context or self.context, data, condition, seed, position, init_from)

    def embed_stage(
        self,
        model_key: str,
        checkpoint: Path,
        data: Manifest,
        data_key: str,
        *,
        context: StageContext | None = None,
    ) -> np.ndarray:
        """Embeddings (n, dim) of ``data`` by the recognizer at ``checkpoint`` (manifest order)."""
        return embed_manifest(context or self.context, model_key, checkpoint, data, data_key)

    def score_stage(
        self,
        scenario: str,
        backend_name: str,
        seed: int,
        enrollment: EmbeddedSet,
        trial: EmbeddedSet,
        plda_train: EmbeddedSet | None,
        *,
        context: StageContext | None = None,
    ) -> dict[str, Any]:
        """Scores and every metric of one (scenario, back-end, seed) row."""
        return score_row(
            context or self.context, scenario, backend_name, seed, enrollment, trial, plda_train
        )

    def analyze_phase(
        self,
        protocol: Protocol,
        manifest: Manifest,
        protocol_key: str,
        conditions: Conditions,
        models: TrainedModels,
        *,
        context: StageContext | None = None,
    ) -> dict[str, Any]:
        """Run the analyses the config selects; returns their JSON-able results by name."""
        return run_analyses(
            context or self.context, protocol, manifest, protocol_key, conditions, models
        )

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
        # The attacker zoo (services/pipeline/zoo.py): each attacker runs the train, embed and
        # score stages with its own config; without a zoo, one attacker whose config is ``cfg``.
        zoo = cfg.attackers is not None
        attackers = [
            (spec.name, self._context_of(attacker_config(cfg, spec)))
            for spec in zoo_specs(cfg.attackers)
        ]
        needed = sorted({(SCENARIO_PLAN[s][0], seed) for s in cfg.scenarios for seed in cfg.seeds})
        utility_keys = utility_embedding_plan(cfg)
        if utility_keys and ("original", cfg.seeds[0]) not in needed:
            # GVD and the one-voice test need a recognizer trained on original speech.
            needed = sorted({*needed, ("original", cfg.seeds[0])})
        leak_keys = enrollment_leak_plan(cfg, needed)
        models_of: dict[str, dict[tuple[str, int], tuple[TrainedAttacker, StageOutcome]]] = {}
        # Transfer (stages/train.py): an attacker whose anonymized-speech recognizers start from
        # the same seed's original-speech ones trains those first (and also when no scenario
        # needs them).
        trained_of = {name: with_transfer_sources(actx.config, needed) for name, actx in attackers}
        n_models = sum(len(keys) for keys in trained_of.values())
        done = 0
        for name, actx in attackers:
            models = models_of.setdefault(name, {})
            for condition, seed in trained_of[name]:
                data = conditions[condition]
                assert data is not None
                done += 1
                models[(condition, seed)] = self.train_stage(
                    data,
                    condition,
                    seed,
                    (done, n_models),
                    context=actx,
                    init_from=transfer_source(actx.config, condition, seed, models),
                )
        if last == PHASES.index("train"):
            return None

        # Every (recognizer, data condition, set) the scenarios and back-ends need, embedded once.
        plans: dict[str, list[tuple[str, str, int, str, str, str | None]]] = {}
        probed: dict[str, list[tuple[str, int, str, str]]] = {}
        embeddings_of: dict[str, dict[tuple[str, int, str, str], EmbeddedSet]] = {}
        for name, actx in attackers:
            acfg = actx.config
            plan = plans.setdefault(name, [])
            wanted: list[tuple[str, int, str, str]] = []
            for scenario in cfg.scenarios:
                model_cond, enr_cond, trial_cond = SCENARIO_PLAN[scenario]
                for seed in cfg.seeds:
                    for backend in acfg.backends:
                        # PLDA trains on, and AS-norm takes its cohort from, attacker-train data.
                        uses_train = backend == "plda" or acfg.scoring.normalization != "none"
                        plda_cond = model_cond if uses_train else None
                        plan.append((scenario, backend, seed, enr_cond, trial_cond, plda_cond))
                        wanted += [
                            (model_cond, seed, enr_cond, "enrollment"),
                            (model_cond, seed, trial_cond, "trial"),
                        ]
                        if plda_cond is not None:
                            wanted.append((model_cond, seed, plda_cond, "train"))
            # The target probe (services/attacker/probe.py) reads the anonymized recognizers'
            # embeddings of their own training data, whenever a target classifier was asked for.
            probed[name] = [
                ("anonymized", seed, "anonymized", "train")
                for (condition, seed) in needed
                if condition == "anonymized" and acfg.training.target_classifier != "off"
            ]
            wanted += probed[name]
            if name == attackers[0][0]:
                # The first attacker's recognizer on original speech serves the enrollment-leak
                # check and the utility phase (the baseline's, without a zoo).
                wanted += leak_keys + utility_keys
            models = models_of[name]
            embeddings = embeddings_of.setdefault(name, {})
            for k in dict.fromkeys(wanted):
                condition, seed, data_condition, set_name = k
                trained, outcome = models[(condition, seed)]
                data = conditions[data_condition]
                assert data is not None
                m = data.get(set_name)
                emb = self.embed_stage(
                    f"train:{outcome.key}",
                    trained.best_checkpoint,
                    m,
                    data.keys[set_name],
                    context=actx,
                )
                embeddings[k] = (m, emb, f"embed:{outcome.key}:{data.keys[set_name]}")
        if last == PHASES.index("embed"):
            return None

        rows = []
        for name, actx in attackers:
            embeddings = embeddings_of[name]
            for row_scenario, row_backend, seed, enr_cond, trial_cond, plda_cond in plans[name]:
                model_cond = SCENARIO_PLAN[row_scenario][0]
                enr = embeddings[(model_cond, seed, enr_cond, "enrollment")]
                tri = embeddings[(model_cond, seed, trial_cond, "trial")]
                plda = embeddings[(model_cond, seed, plda_cond, "train")] if plda_cond else None
                label = f"{row_scenario} {row_backend} seed {seed}"
                self.progress("score", 0.0, f"{name}: {label}" if zoo else label)
                row = self.score_stage(
                    row_scenario, row_backend, seed, enr, tri, plda, context=actx
                )
                if zoo:
                    row["attacker"] = name
                rows.append(row)
        self.progress("score", 1.0, f"{len(rows)} rows")
        if last == PHASES.index("score"):
            return None
        first_name, first_ctx = attackers[0]
        first_embeddings = embeddings_of[first_name]
        blocks: dict[str, Any] = {}
        if cfg.utility is not None:
            assert anonymized is not None
            self.progress("utility", 0.0, "starting")  # announced before its first long step
            orig_key, anon_key = utility_keys
            pair = (
                first_embeddings[orig_key][1],
                first_embeddings[anon_key][1],
                first_embeddings[orig_key][2],
                first_embeddings[anon_key][2],
            )
            blocks["utility"] = utility_stage(self.context, original, anonymized, pair)
        if last == PHASES.index("utility"):
            return None
        if any(cfg.analyses.model_dump().values()):
            self.progress("analyze", 0.0, "starting")
        # The analyses read the first attacker's recognizers (the baseline's, without a zoo).
        analyses = self.analyze_phase(
            protocol, manifest, protocol_key, conditions, models_of[first_name], context=first_ctx
        )
        if last == PHASES.index("analyze"):
            return None
        probes_of = {
            name: {
                (k[0], k[1]): probe_recognizer(*embeddings_of[name][k][:2]) for k in probed[name]
            }
            for name, _ in attackers
        }
        if cfg.anonymizer.kind == "archive":
            blocks["enrollment_leak"] = enrollment_leak_block(leak_keys, first_embeddings)
        # Without a zoo the one attacker's context is the run's own config.
        return write_report(
            self.context if zoo else first_ctx,
            self.out_dir,
            protocol,
            protocol_key,
            rows,
            models_of[first_name],
            analyses,
            time.perf_counter() - t0,
            probes_of[first_name],
            zoo={
                name: ZooAttacker(actx.config, models_of[name], probes_of[name])
                for name, actx in attackers
            }
            if zoo
            else None,
            blocks=blocks,
        )


def utility_embedding_plan(cfg: EvaluationConfig) -> list[tuple[str, int, str, str]]:
    """The embeddings the utility phase reads: original and anonymized trials by the first seed's
    recognizer trained on original speech (GVD, the usable-speech guard's one-voice test)."""
    if cfg.utility is None:
        return []
    seed = cfg.seeds[0]
    return [("original", seed, "original", "trial"), ("original", seed, "anonymized", "trial")]


def enrollment_leak_plan(
    cfg: EvaluationConfig, needed: list[tuple[str, int]]
) -> list[tuple[str, int, str, str]]:
    """The embeddings the enrollment-leak check (archive submissions) needs: original and
    anonymized enrollment and trials, all by the first recognizer trained on original speech."""
    if cfg.anonymizer.kind != "archive":
        return []
    seeds = sorted(seed for condition, seed in needed if condition == "original")
    if not seeds:
        return []
    return [
        ("original", seeds[0], data, set_name)
        for set_name in ("enrollment", "trial")
        for data in ("original", "anonymized")
    ]


def enrollment_leak_block(
    keys: list[tuple[str, int, str, str]],
    embeddings: dict[tuple[str, int, str, str], EmbeddedSet],
) -> dict[str, Any]:
    """The ``enrollment_leak`` block of an archive submission's result (``trust``)."""
    if not keys:
        return {
            "leak": None,
            "reason": "no recognizer trained on original speech in this run (the original, "
            "ignorant or lazy-informed scenario trains one)",
        }

    def paired(set_name: str) -> tuple[np.ndarray, np.ndarray]:
        seed = keys[0][1]
        orig_manifest, orig_emb, _ = embeddings[("original", seed, "original", set_name)]
        anon_manifest, anon_emb, _ = embeddings[("original", seed, "anonymized", set_name)]
        row = {u.utt_id: i for i, u in enumerate(orig_manifest.utterances)}
        index = [row.get(u.utt_id) for u in anon_manifest.utterances]
        keep = np.array([i is not None for i in index], dtype=bool)
        orig_rows = np.array([i for i in index if i is not None], dtype=np.int64)
        return orig_emb[orig_rows], anon_emb[keep]

    orig_enr, anon_enr = paired("enrollment")
    orig_tri, anon_tri = paired("trial")
    return measure_enrollment_leak(orig_enr, anon_enr, orig_tri, anon_tri)


def run_evaluation(
    config: EvaluationConfig,
    out_dir: str | Path,
    *,
    cache_dir: Path | None = None,
    progress: ProgressReporter | None = None,
    stages_dir: Path | None = None,
    sandbox: ContainerSandbox | None = None,
) -> dict[str, Any]:
    """Run (or resume) an evaluation into ``out_dir``; returns the result document.

    ``stages_dir``: a stage store shared between evaluations (stages with equal inputs are
    computed once); default ``out_dir/stages``. ``sandbox``: see `EvaluationRun`.
    """
    if config.protocol is not None and not Path(config.protocol).is_file():
        raise ConfigError(f"protocol: file not found: {config.protocol}")
    run = EvaluationRun(
        config,
        Path(out_dir),
        cache_dir=cache_dir,
        progress=progress,
        stages_dir=stages_dir,
        sandbox=sandbox,
    )
    result = run.run()
    assert result is not None
    return result
