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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from services.anonymizers.container_sandbox import ContainerSandbox
from services.anonymizers.contract import SET_NAMES
from services.anonymizers.kinds.registry import kind_of
from services.attacker.training_records import TrainedAttacker
from services.corpus.manifest import Manifest
from services.corpus.protocol import Protocol
from services.errors import ConfigError
from services.pipeline.analyses import Conditions, run_analyses
from services.pipeline.config import EvaluationConfig
from services.pipeline.phases import PHASES, Phase
from services.pipeline.plan import (
    ANONYMIZED,
    ORIGINAL,
    AttackerPlan,
    EmbeddingKey,
    EvaluationPlan,
    RecognizerKey,
    plan_evaluation,
)
from services.pipeline.report import ZooAttacker, probe_recognizer, write_report
from services.pipeline.sets import ConditionSets, corpus_stage, original_sets
from services.pipeline.stage_runner import StageOutcome, StageRunner
from services.pipeline.stages.anonymize import anonymize_sets
from services.pipeline.stages.challenge import challenge_stage, pretrained_rows
from services.pipeline.stages.context import (
    AudioCache,
    ProgressReporter,
    StageContext,
    no_progress,
)
from services.pipeline.stages.embed import embed_manifest
from services.pipeline.stages.score import EmbeddedSet, score_row
from services.pipeline.stages.train import TrainedModels, train_recognizer, transfer_source
from services.pipeline.stages.utility import utility_stage
from services.pipeline.trust import measure_enrollment_leak
from services.settings import get_settings

__all__ = ["PHASE_STEPS", "EvaluationRun", "EvaluationState", "run_evaluation"]


class EvaluationRun:
    """One evaluation in a work folder; ``run()`` executes (or reuses) every stage.

    ``runner``: the stage store (default: a local ``StageRunner`` in ``stages_dir``, else
    ``out_dir/stages``); the platform's workers pass a ``SyncedStageRunner``, which shares stages
    through the blob store. ``sandbox``: where anonymizer containers run (default: from the
    process settings, ``UNMASK_CONTAINER_*``).
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
        runner: StageRunner | None = None,
    ) -> None:
        self.cfg = config
        self.out_dir = Path(out_dir)
        # Stages are content-addressed, so evaluations may share one store (default: private).
        self.runner = runner or StageRunner(
            Path(stages_dir) if stages_dir else self.out_dir / "stages"
        )
        self.cache_dir = cache_dir
        self.progress = progress or no_progress
        self.audio = AudioCache()
        self.sandbox = (
            sandbox if sandbox is not None else ContainerSandbox.from_settings(get_settings())
        )

    @property
    def context(self) -> StageContext:
        """What the stage functions read, with the run's own config."""
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
        transfer_from: tuple[TrainedAttacker, StageOutcome] | None = None,
    ) -> tuple[TrainedAttacker, StageOutcome]:
        """Train the recognizer on ``data`` (original or anonymized speech) with ``seed``;
        ``position``: (i, n), recognizer i of the run's n (for progress); ``context``: an
        attacker's (default: the config's own); ``transfer_from``: the recognizer it starts from
        (transfer; ``stages.train.transfer_source``)."""
        return train_recognizer(
            context or self.context, data, condition, seed, position, transfer_from
        )

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

    # -- the whole run: a table of phase steps over a run state ----------------------------------
    def run(self, stop_after: Phase | None = None) -> dict[str, Any] | None:
        """Run every stage, or every stage up to and including the phase ``stop_after``.

        Walks :data:`PHASE_STEPS` in :data:`PHASES` order over one :class:`EvaluationState`.
        Finished stages are reused, so calling ``run(stop_after=p)`` for each phase in turn
        (what the platform's workers do, each on its own queue) computes every stage exactly
        once. Returns the result document (what ``results.json`` holds) after the ``report``
        phase, else None.
        """
        if stop_after is not None and stop_after not in PHASES:
            raise ConfigError(f"stop_after: unknown phase {stop_after!r}; one of {PHASES}")
        last = PHASES.index(stop_after) if stop_after is not None else len(PHASES) - 1
        state = EvaluationState(plan=plan_evaluation(self.cfg), started=time.perf_counter())
        for phase in PHASES[: last + 1]:
            PHASE_STEPS[phase](self, state)
        return state.result


@dataclass
class EvaluationState:
    """What the phases of one :meth:`EvaluationRun.run` hand each other.

    Each step of :data:`PHASE_STEPS` reads what earlier phases left here and adds its own; a
    phase that is not reached leaves its fields empty.
    """

    plan: EvaluationPlan
    started: float
    """``time.perf_counter()`` at the start of the run (the report's wall time)."""
    protocol: Protocol | None = None
    manifest: Manifest | None = None
    protocol_key: str = ""
    conditions: dict[str, ConditionSets | None] = field(default_factory=dict)
    """Data condition (``original``, ``anonymized``) -> its sets (None: not anonymized)."""
    models: dict[str, dict[RecognizerKey, tuple[TrainedAttacker, StageOutcome]]] = field(
        default_factory=dict
    )
    """Attacker -> its recognizers by (condition, seed)."""
    embeddings: dict[str, dict[EmbeddingKey, EmbeddedSet]] = field(default_factory=dict)
    """Attacker -> its embedded sets by plan key."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    blocks: dict[str, Any] = field(default_factory=dict)
    """Top-level blocks of the document besides rows (``utility``, ``enrollment_leak``)."""
    analyses: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None

    def context_of(self, run: EvaluationRun, attacker: AttackerPlan) -> StageContext:
        """The stage context of one attacker (its resolved config)."""
        return run._context_of(attacker.config)

    def sets(self, condition: str) -> ConditionSets:
        """The sets of a data condition an earlier phase produced."""
        data = self.conditions.get(condition)
        assert data is not None, f"no {condition} sets"
        return data


def _corpus_step(run: EvaluationRun, state: EvaluationState) -> None:
    state.protocol, state.manifest, state.protocol_key = run.corpus_stage()


def _anonymize_step(run: EvaluationRun, state: EvaluationState) -> None:
    assert state.protocol is not None and state.manifest is not None
    original = run.original_sets(state.protocol, state.manifest, state.protocol_key)
    anonymized = (
        run.anonymize_stage(state.protocol, state.manifest, state.protocol_key, original)
        if state.plan.anonymize
        else None
    )
    state.conditions = {ORIGINAL: original, ANONYMIZED: anonymized}


def _train_step(run: EvaluationRun, state: EvaluationState) -> None:
    attackers = state.plan.attackers
    total = sum(len(a.recognizers) for a in attackers)
    position = 0
    for attacker in attackers:
        context = state.context_of(run, attacker)
        models = state.models.setdefault(attacker.name, {})
        for condition, seed in attacker.recognizers:
            position += 1
            # Transfer (stages/train.py): the plan lists an attacker's original-speech
            # recognizers first, so the one an anonymized recognizer starts from is trained.
            models[(condition, seed)] = run.train_stage(
                state.sets(condition),
                condition,
                seed,
                (position, total),
                context=context,
                transfer_from=transfer_source(attacker, condition, seed, models),
            )


def _embed_step(run: EvaluationRun, state: EvaluationState) -> None:
    """Every (recognizer, data condition, set) the plan reads, embedded once per attacker."""
    for attacker in state.plan.attackers:
        context = state.context_of(run, attacker)
        models = state.models[attacker.name]
        embeddings = state.embeddings.setdefault(attacker.name, {})
        for key in attacker.embeddings:
            condition, seed, data_condition, set_name = key
            trained, outcome = models[(condition, seed)]
            data = state.sets(data_condition)
            manifest = data.get(set_name)
            emb = run.embed_stage(
                f"train:{outcome.key}",
                trained.best_checkpoint,
                manifest,
                data.keys[set_name],
                context=context,
            )
            embeddings[key] = (manifest, emb, f"embed:{outcome.key}:{data.keys[set_name]}")


def _score_step(run: EvaluationRun, state: EvaluationState) -> None:
    zoo = state.plan.zoo
    for attacker in state.plan.attackers:
        context = state.context_of(run, attacker)
        embeddings = state.embeddings[attacker.name]
        for step in attacker.scores:
            plda = embeddings[step.embedding("train")] if step.plda else None
            label = f"{step.scenario} {step.backend} seed {step.seed}"
            run.progress("score", 0.0, f"{attacker.name}: {label}" if zoo else label)
            row = run.score_stage(
                step.scenario,
                step.backend,
                step.seed,
                embeddings[step.embedding("enrollment")],
                embeddings[step.embedding("trial")],
                plda,
                context=context,
            )
            if zoo:
                row["attacker"] = attacker.name
            state.rows.append(row)
    for name, verifier, folder in state.plan.pretrained:
        run.progress("score", 0.0, f"{name}: pretrained, every scenario")
        state.rows += pretrained_rows(run.context, name, state.conditions, verifier, folder)
    if get_settings().challenger:
        pretrained = [name for name, _, _ in state.plan.pretrained]
        block = challenge_stage(run.context, state.rows, state.conditions, pretrained)
        if block is not None:
            state.blocks["challenger"] = block
    run.progress("score", 1.0, f"{len(state.rows)} rows")


def _utility_step(run: EvaluationRun, state: EvaluationState) -> None:
    if run.cfg.utility is None:
        return
    run.progress("utility", 0.0, "starting")  # announced before its first long step
    first = state.embeddings[state.plan.first.name]
    orig_key, anon_key = state.plan.utility_embeddings
    pair = (first[orig_key][1], first[anon_key][1], first[orig_key][2], first[anon_key][2])
    state.blocks["utility"] = utility_stage(
        run.context, state.sets(ORIGINAL), state.sets(ANONYMIZED), pair
    )


def _analyze_step(run: EvaluationRun, state: EvaluationState) -> None:
    # The analyses read the first attacker's recognizers (the baseline's, without a zoo).
    assert state.protocol is not None and state.manifest is not None
    if any(run.cfg.analyses.model_dump().values()):
        run.progress("analyze", 0.0, "starting")
    first = state.plan.first
    state.analyses = run.analyze_phase(
        state.protocol,
        state.manifest,
        state.protocol_key,
        state.conditions,
        state.models[first.name],
        context=state.context_of(run, first),
    )


def _report_step(run: EvaluationRun, state: EvaluationState) -> None:
    assert state.protocol is not None
    plan, first = state.plan, state.plan.first
    probes_of = {
        a.name: {(k[0], k[1]): probe_recognizer(*state.embeddings[a.name][k][:2]) for k in a.probes}
        for a in plan.attackers
    }
    if kind_of(run.cfg.anonymizer).pre_anonymized:
        state.blocks["enrollment_leak"] = enrollment_leak_block(
            list(plan.leak_embeddings), state.embeddings[first.name]
        )
    zoo = (
        {
            a.name: ZooAttacker(a.config, state.models[a.name], probes_of[a.name])
            for a in plan.attackers
        }
        if plan.zoo
        else None
    )
    # Without a zoo the one attacker's context is the run's own config.
    state.result = write_report(
        run.context if plan.zoo else state.context_of(run, first),
        run.out_dir,
        state.protocol,
        state.protocol_key,
        state.rows,
        state.models[first.name],
        state.analyses,
        time.perf_counter() - state.started,
        probes_of[first.name],
        zoo=zoo,
        blocks=state.blocks,
    )


PHASE_STEPS: dict[Phase, Callable[[EvaluationRun, EvaluationState], None]] = {
    "corpus": _corpus_step,
    "anonymize": _anonymize_step,
    "train": _train_step,
    "embed": _embed_step,
    "score": _score_step,
    "utility": _utility_step,
    "analyze": _analyze_step,
    "report": _report_step,
}
"""One step per phase (``services.pipeline.phases``), run in ``PHASES`` order: adding a phase is
one entry here and one in ``PHASES``."""
assert tuple(PHASE_STEPS) == PHASES, "every phase has exactly one step, in order"


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
    if config.protocol_file is not None and not Path(config.protocol_file).is_file():
        raise ConfigError(f"protocol_file: file not found: {config.protocol_file}")
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
