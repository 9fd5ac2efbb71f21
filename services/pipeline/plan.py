"""The evaluation plan: what a config asks the pipeline to compute, derived without torch.

:func:`plan_evaluation` turns an :class:`EvaluationConfig` into an :class:`EvaluationPlan`: per
attacker of the zoo (one, ``baseline``, without a zoo), the recognizers to train, every embedding
the scenarios, back-ends, probes and checks read (each once), and the score rows; plus the
embeddings of the utility phase and of the enrollment-leak check. It imports no torch, so the
printed plan before a run (``config_checks.plan_lines``), the platform's cost check
(``services.platform.jobs.cost.check_job_cost``) and the runner
(``services.pipeline.evaluation``) read the same plan.

Stage keys are content hashes of the stages' inputs and are known only when the inputs exist
(``stage_runner``); the plan names each stage by what it is made of (:meth:`EvaluationPlan.stages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from services.anonymizers.kinds.registry import kind_of
from services.attacker.recipes import zoo_specs
from services.attacker.training_config import (
    StartPoint,
    recognizer_start,
    recognizer_training,
)
from services.pipeline.config import EvaluationConfig, attacker_config

ORIGINAL = "original"
ANONYMIZED = "anonymized"

SCENARIO_PLAN: dict[str, tuple[str, str, str]] = {
    # scenario: (recognizer trained on, enrollment data, trial data)
    "original": (ORIGINAL, ORIGINAL, ORIGINAL),
    "ignorant": (ORIGINAL, ORIGINAL, ANONYMIZED),
    "lazy-informed": (ORIGINAL, ANONYMIZED, ANONYMIZED),
    "semi-informed": (ANONYMIZED, ANONYMIZED, ANONYMIZED),
}
"""Which recognizer and which enrollment and trial data each scenario uses (docs/evaluation.md).

Trials are always anonymized, except in the unprotected ``original`` reference.
"""

RecognizerKey = tuple[str, int]
"""(data condition the recognizer trains on, training seed)."""

EmbeddingKey = tuple[str, int, str, str]
"""(recognizer condition, seed, data condition embedded, set name)."""


@dataclass(frozen=True)
class ScoreStep:
    """One score row: a scenario with one back-end and the recognizer of one seed.

    ``plda``: the data condition of the attacker-train embeddings PLDA trains on and AS-norm
    takes its cohort from; None when the back-end and normalization need none.
    """

    scenario: str
    backend: str
    seed: int
    enrollment: str
    trial: str
    plda: str | None

    @property
    def recognizer(self) -> RecognizerKey:
        """The recognizer that embeds this row's enrollment and trials."""
        return (SCENARIO_PLAN[self.scenario][0], self.seed)

    def embedding(self, set_name: str) -> EmbeddingKey:
        """The embedding of ``set_name`` (``enrollment``, ``trial`` or ``train``) it reads."""
        condition = {"enrollment": self.enrollment, "trial": self.trial}.get(set_name, self.plda)
        assert condition is not None
        return (*self.recognizer, condition, set_name)


@dataclass(frozen=True)
class AttackerPlan:
    """What one attacker of the zoo computes: its resolved config, the recognizers it trains,
    the embeddings it reads (each once, in order) and its score rows."""

    name: str
    config: EvaluationConfig
    recognizers: tuple[RecognizerKey, ...]
    embeddings: tuple[EmbeddingKey, ...]
    scores: tuple[ScoreStep, ...]
    probes: tuple[EmbeddingKey, ...]
    """Embeddings of anonymized recognizers' own training data (the target probe)."""

    @property
    def epochs(self) -> int:
        """Training epochs of each of its recognizers."""
        return self.config.training.epochs

    @property
    def training_identity(self) -> str:
        """Equal for attackers whose recognizers are the same stages (equal training config)."""
        return self.config.training.model_dump_json()

    def stage_start(self, condition: str) -> StartPoint:
        """Where its recognizer on ``condition`` speech starts (:func:`recognizer_start_of`)."""
        return recognizer_start_of(self.config, condition)

    def stage_identity(self, condition: str) -> str:
        """What distinguishes its train stage on ``condition`` speech from another attacker's (as
        ``stages.train`` keys them): the recognizer's training as
        ``training_config.recognizer_training`` makes it for the condition (an original-speech
        recognizer has no target classifier and no transfer)."""
        training = recognizer_training(self.config.training, condition, self.stage_start(condition))
        return repr(sorted(training.model_dump(mode="json").items()))


@dataclass(frozen=True)
class PlannedStage:
    """A stage the plan runs, named by what it is made of (its key is a hash of its inputs)."""

    phase: str
    name: str
    attacker: str | None
    inputs: tuple[str, ...]


@dataclass(frozen=True)
class EvaluationPlan:
    """Every stage an evaluation config asks for (see the module docstring)."""

    config: EvaluationConfig
    attackers: tuple[AttackerPlan, ...]
    anonymize: bool
    """Whether any scenario reads anonymized speech (the anonymize phase runs)."""
    utility_embeddings: tuple[EmbeddingKey, ...]
    """(original trials, anonymized trials) by the first attacker's original recognizer."""
    leak_embeddings: tuple[EmbeddingKey, ...]
    """The enrollment-leak check's embeddings (archive submissions)."""
    pretrained: tuple[tuple[str, str, str | None], ...] = ()
    """(name, verifier, checkpoint folder or None) of the zoo's pretrained attackers
    (``AttackerSpec.pretrained``): nothing to train; their embeddings and cosine rows (every
    scenario, the first seed) are computed in the score phase
    (``stages.challenge.pretrained_rows``)."""

    @property
    def zoo(self) -> bool:
        """Whether the config names an attacker zoo (rows then carry ``attacker``)."""
        return self.config.attackers is not None

    @property
    def first(self) -> AttackerPlan:
        """The first attacker: its recognizers serve the utility phase, the analyses and the
        enrollment-leak check (the baseline's, without a zoo)."""
        return self.attackers[0]

    def distinct_recognizers(self) -> list[tuple[AttackerPlan, RecognizerKey]]:
        """The recognizers actually trained: attackers whose train stages are equal share them,
        so each (stage identity, condition, seed) counts once (the first attacker naming it)."""
        seen: set[tuple[str, str, int]] = set()
        out = []
        for attacker in self.attackers:
            for key in attacker.recognizers:
                identity = (attacker.stage_identity(key[0]), *key)
                if identity not in seen:
                    seen.add(identity)
                    out.append((attacker, key))
        return out

    @property
    def n_recognizers(self) -> int:
        """How many recognizers the run trains (shared ones once)."""
        return len(self.distinct_recognizers())

    @property
    def training_epochs(self) -> int:
        """Epochs over every trained recognizer: the training cost in recognizer-epochs."""
        return sum(attacker.epochs for attacker, _ in self.distinct_recognizers())

    @property
    def max_epochs(self) -> int:
        """The longest schedule any attacker trains (epochs)."""
        return max(attacker.epochs for attacker in self.attackers)

    @property
    def n_score_rows(self) -> int:
        """Score rows over every attacker (scenario x back-end x seed each)."""
        return sum(len(attacker.scores) for attacker in self.attackers)

    def stages(self) -> Iterator[PlannedStage]:
        """Every stage in phase order, named by its inputs."""
        yield PlannedStage("corpus", "corpus", None, ("protocol", "synthetic corpus"))
        if self.anonymize:
            yield PlannedStage("anonymize", "anonymize", None, ("corpus", "anonymizer"))
        trained = {(a.name, k) for a, k in self.distinct_recognizers()}
        inputs: tuple[str, ...]
        for attacker in self.attackers:
            for condition, seed in attacker.recognizers:
                if (attacker.name, (condition, seed)) in trained:
                    inputs = (f"{condition} train", f"seed {seed}", "training config")
                    yield PlannedStage("train", "train", attacker.name, inputs)
        for attacker in self.attackers:
            for recognizer, seed, data, set_name in attacker.embeddings:
                inputs = (f"{recognizer} recognizer seed {seed}", f"{data} {set_name}")
                yield PlannedStage("embed", "embed", attacker.name, inputs)
        for attacker in self.attackers:
            for step in attacker.scores:
                inputs = (step.scenario, step.backend, f"seed {step.seed}")
                yield PlannedStage("score", "score", attacker.name, inputs)
        for name, verifier, _ in self.pretrained:
            for scenario in self.config.scenarios:
                inputs = (f"{verifier} (pretrained)", scenario, "cosine")
                yield PlannedStage("score", "score", name, inputs)
        if self.config.utility is not None:
            yield PlannedStage("utility", "utility", None, ("original and anonymized trials",))
        yield PlannedStage("report", "report", None, ("score rows", "analyses"))


# -- transfer: which recognizers start from the original-speech ones (stages/train.py) ----------


def trains_original_speech(cfg: EvaluationConfig) -> bool:
    """Whether a scenario of ``cfg`` trains a recognizer on original speech (original, ignorant,
    lazy-informed)."""
    return any(SCENARIO_PLAN[s][0] == ORIGINAL for s in cfg.scenarios)


def recognizer_start_of(cfg: EvaluationConfig, condition: str) -> StartPoint:
    """Where ``cfg``'s recognizer on ``condition`` speech starts: the one rule,
    ``training_config.recognizer_start``, with what the scenarios train."""
    return recognizer_start(cfg.training, condition, trains_original=trains_original_speech(cfg))


def with_transfer_sources(
    cfg: EvaluationConfig, needed: Sequence[tuple[str, int]]
) -> list[tuple[str, int]]:
    """``needed`` (data condition, seed) plus, for start ``original``, the same seed's
    original-speech recognizer of every anonymized one; originals first (``transfer_order``)."""
    out = set(needed)
    if recognizer_start_of(cfg, ANONYMIZED) == "original":
        out |= {("original", seed) for condition, seed in needed if condition == "anonymized"}
    return transfer_order(out)


def transfer_order(needed: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """Recognizers in training order: original speech first (the transfer sources), by seed."""
    return sorted(needed, key=lambda k: (k[0] != "original", k[1], k[0]))


def _recognizers(cfg: EvaluationConfig) -> tuple[RecognizerKey, ...]:
    """The (condition, seed) recognizers the scenarios need, plus the first seed's original one
    when the utility phase needs it (GVD and the one-voice test)."""
    needed = {(SCENARIO_PLAN[s][0], seed) for s in cfg.scenarios for seed in cfg.seeds}
    if cfg.utility is not None:
        needed.add((ORIGINAL, cfg.seeds[0]))
    return tuple(sorted(needed))


def _scores(cfg: EvaluationConfig, acfg: EvaluationConfig) -> tuple[ScoreStep, ...]:
    steps = []
    for scenario in cfg.scenarios:
        model_cond, enrollment, trial = SCENARIO_PLAN[scenario]
        for seed in cfg.seeds:
            for backend in acfg.backends:
                # PLDA trains on, and AS-norm takes its cohort from, attacker-train data.
                uses_train = backend == "plda" or acfg.scoring.normalization != "none"
                plda = model_cond if uses_train else None
                steps.append(ScoreStep(scenario, backend, seed, enrollment, trial, plda))
    return tuple(steps)


def utility_embedding_plan(cfg: EvaluationConfig) -> list[EmbeddingKey]:
    """The embeddings the utility phase reads: original and anonymized trials by the first seed's
    recognizer trained on original speech (GVD, the usable-speech guard's one-voice test)."""
    if cfg.utility is None:
        return []
    seed = cfg.seeds[0]
    return [(ORIGINAL, seed, ORIGINAL, "trial"), (ORIGINAL, seed, ANONYMIZED, "trial")]


def enrollment_leak_plan(
    cfg: EvaluationConfig, needed: tuple[RecognizerKey, ...] | list[RecognizerKey]
) -> list[EmbeddingKey]:
    """The embeddings the enrollment-leak check (pre-anonymized audio: an archive) needs:
    original and anonymized enrollment and trials, all by the first recognizer trained on
    original speech."""
    if not kind_of(cfg.anonymizer).pre_anonymized:
        return []
    seeds = sorted(seed for condition, seed in needed if condition == ORIGINAL)
    if not seeds:
        return []
    return [
        (ORIGINAL, seeds[0], data, set_name)
        for set_name in ("enrollment", "trial")
        for data in (ORIGINAL, ANONYMIZED)
    ]


def _attacker_plan(
    cfg: EvaluationConfig,
    name: str,
    acfg: EvaluationConfig,
    recognizers: tuple[RecognizerKey, ...],
    extra: list[EmbeddingKey],
) -> AttackerPlan:
    scores = _scores(cfg, acfg)
    wanted: list[EmbeddingKey] = []
    for step in scores:
        wanted += [step.embedding("enrollment"), step.embedding("trial")]
        if step.plda is not None:
            wanted.append(step.embedding("train"))
    # The target probe (services/attacker/probe.py) reads the anonymized recognizers' embeddings
    # of their own training data, whenever a target classifier was asked for.
    probes = tuple(
        (ANONYMIZED, seed, ANONYMIZED, "train")
        for condition, seed in recognizers
        if condition == ANONYMIZED and acfg.training.target_classifier != "off"
    )
    embeddings = tuple(dict.fromkeys([*wanted, *probes, *extra]))
    return AttackerPlan(name, acfg, recognizers, embeddings, scores, probes)


def plan_evaluation(cfg: EvaluationConfig) -> EvaluationPlan:
    """The plan of ``cfg`` (see the module docstring); no stage runs, no torch is imported."""
    recognizers = _recognizers(cfg)
    utility = utility_embedding_plan(cfg)
    leak = enrollment_leak_plan(cfg, recognizers)
    attackers = []
    specs = zoo_specs(cfg.attackers)
    pretrained = tuple(
        (s.name, s.pretrained, None if s.pretrained_path is None else str(s.pretrained_path))
        for s in specs
        if s.pretrained is not None and s.scored_as_is
    )
    for i, spec in enumerate(s for s in specs if not s.scored_as_is):
        # The first attacker's original recognizer serves the leak check and the utility phase.
        extra = leak + utility if i == 0 else []
        acfg = attacker_config(cfg, spec)
        # Transfer: an attacker whose anonymized-speech recognizers start from the same seed's
        # original-speech ones trains those too (first), even when no scenario needs them.
        trained = tuple(with_transfer_sources(acfg, recognizers))
        attackers.append(_attacker_plan(cfg, spec.name, acfg, trained, extra))
    return EvaluationPlan(
        config=cfg,
        attackers=tuple(attackers),
        anonymize=any(s != ORIGINAL for s in cfg.scenarios),
        utility_embeddings=tuple(utility),
        leak_embeddings=tuple(leak),
        pretrained=pretrained,
    )
