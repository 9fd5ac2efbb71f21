"""What an evaluation will train and roughly how long it takes (torch-free: the plan and the API).

:func:`recognizer_plan` lists the distinct recognizers (train stages) a config trains: per zoo
attacker and seed, the original- and anonymized-speech recognizers its scenarios need (and the
transfer sources of ``training.init: original``), recognizers with equal training shared as the
stage store shares them, each with its epochs cap. :func:`training_seconds` turns that into time
from the training audio (one crop per training utterance and epoch, plus a validation pass over
the held-out utterances) and the measured throughput of the preset
(:data:`TRAIN_AUDIO_SECONDS_PER_SECOND`). Epochs are caps: patience usually stops earlier, so
training estimates are upper bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.attacker.training_config import TrainingConfig
from services.pipeline.config import EvaluationConfig, attacker_config
from services.pipeline.plan import SCENARIO_PLAN, resolved_init, with_transfer_sources
from services.pipeline.zoo import zoo_specs

TRAIN_AUDIO_SECONDS_PER_SECOND: dict[str, float] = {
    # Audio seconds of training crops per wall second on the 2-core CPU machine. tiny: the quick
    # example (17 steps x 32 crops x 3 s = 1,584 audio s per epoch, 49-61 s for 6 epochs of
    # training and validation, load average ~2; benchmarks/attacker_throughput.py measured 108
    # s/s on one thread at load ~10). vpc: benchmarks/attacker_throughput.py, one thread, load ~10
    # (docs/attacker.md), so on an idle machine this is pessimistic.
    "tiny": 174.0,
    "vpc": 14.7,
}
"""Measured training throughput per preset (CPU); presets without a measurement get no estimate
(``standard``, ``xvector``; every GPU: not measured)."""

VALIDATION_AUDIO_SECONDS_PER_SECOND = 270.0
"""Embedding throughput of the validation pass, tiny preset (quick example: 128 utterances of
~4 s in 2.1 s); scaled by the preset's training throughput ratio for other presets."""


@dataclass(frozen=True)
class RecognizerPlan:
    """One train stage: which attackers use it, its data condition, seed, preset and cap."""

    attackers: tuple[str, ...]
    condition: str
    seed: int
    preset: str
    epochs: int
    init: str


def _stage_training(training: TrainingConfig, condition: str, init: str) -> str:
    """What distinguishes train stages (as ``stages.train`` keys them): the training without
    the fields that do not apply to the condition."""
    if condition == "original":
        dump = training.model_dump(
            mode="json", exclude={"init", "finetune_lr", "finetune_warmup_epochs"}
        )
        dump["target_classifier"] = "off"
    else:
        dump = training.model_dump(mode="json") | {"init": init}
    return repr(sorted(dump.items()))


def recognizer_plan(cfg: EvaluationConfig) -> list[RecognizerPlan]:
    """The distinct recognizers ``cfg`` trains, in training order, shared ones listed once."""
    needed = sorted({(SCENARIO_PLAN[s][0], seed) for s in cfg.scenarios for seed in cfg.seeds})
    if cfg.utility is not None and ("original", cfg.seeds[0]) not in needed:
        needed.append(("original", cfg.seeds[0]))
    plans: dict[tuple[str, int, str], RecognizerPlan] = {}
    for spec in zoo_specs(cfg.attackers):
        acfg = attacker_config(cfg, spec)
        keys = with_transfer_sources(acfg, needed)
        init = resolved_init(acfg)
        for condition, seed in keys:
            stage_init = "scratch" if condition == "original" else init
            key = (condition, seed, _stage_training(acfg.training, condition, stage_init))
            known = plans.get(key)
            plans[key] = RecognizerPlan(
                attackers=(*known.attackers, spec.name) if known else (spec.name,),
                condition=condition,
                seed=seed,
                preset=acfg.training.preset,
                epochs=acfg.training.epochs,
                init=stage_init,
            )
    return list(plans.values())


def plan_summary(plan: Sequence[RecognizerPlan]) -> str:
    """``6 recognizers (2 on original speech, 4 on anonymized speech, 2 of them fine-tuned);
    epochs cap 6 x2, 18 x4``."""
    n_orig = sum(p.condition == "original" for p in plan)
    tuned = sum(p.init == "original" for p in plan)
    caps: dict[int, int] = {}
    for p in plan:
        caps[p.epochs] = caps.get(p.epochs, 0) + 1
    cap_text = ", ".join(f"{e} x{n}" for e, n in sorted(caps.items()))
    presets = ", ".join(sorted({p.preset for p in plan}))
    return (
        f"{len(plan)} recognizer(s) ({n_orig} on original speech, {len(plan) - n_orig} on "
        f"anonymized speech, {tuned} of them fine-tuned from the original-speech one); "
        f"{presets} preset; epochs cap {cap_text}"
    )


@dataclass(frozen=True)
class TrainingAudio:
    """The sizes an estimate needs: the attacker's training data and the other sets."""

    n_train: int
    """Training utterances (one crop each per epoch)."""
    validation_audio_s: float
    """Seconds of held-out validation audio (embedded whole after every epoch)."""
    n_eval: int
    """Enrollment and trial utterances."""
    n_corpus: int
    """Utterances of the corpus (generated, for the synthetic one)."""


def synthetic_training_audio(cfg: EvaluationConfig) -> TrainingAudio:
    """The training data of the synthetic corpus (mean utterance length between the bounds)."""
    s = cfg.synthetic
    n = s.n_attacker_train_speakers * s.utts_per_speaker
    mean_s = (s.min_duration_s + s.max_duration_s) / 2
    # The protocol holds out about a tenth for validation (at least one per speaker).
    n_val = max(s.n_attacker_train_speakers, round(n * 0.1))
    return TrainingAudio(
        n_train=n - n_val,
        validation_audio_s=n_val * mean_s,
        n_eval=s.n_eval_speakers * (s.enrollments_per_speaker + s.trials_per_speaker),
        n_corpus=s.n_speakers * s.utts_per_speaker,
    )


def protocol_training_audio(protocol_path: Path) -> TrainingAudio:
    """The training data of a protocol file (its manifest's durations, no audio read)."""
    from services.corpus.protocol import load_protocol_and_manifest

    protocol, manifest = load_protocol_and_manifest(protocol_path)
    durations = {u.utt_id: u.duration_s for u in manifest.utterances}
    return TrainingAudio(
        n_train=len(protocol.attacker_train),
        validation_audio_s=sum(durations.get(u, 0.0) for u in protocol.attacker_validation),
        n_eval=len(protocol.enrollment) + len(protocol.trial),
        n_corpus=len(manifest.utterances),
    )


def training_seconds(
    plan: Sequence[RecognizerPlan], audio: TrainingAudio, crop_seconds: float
) -> float | None:
    """Upper bound (s) of the training time of ``plan`` (every recognizer to its cap); None when a
    preset has no measured throughput."""
    total = 0.0
    tiny = TRAIN_AUDIO_SECONDS_PER_SECOND["tiny"]
    for p in plan:
        speed = TRAIN_AUDIO_SECONDS_PER_SECOND.get(p.preset)
        if speed is None:
            return None
        validation_speed = VALIDATION_AUDIO_SECONDS_PER_SECOND * speed / tiny
        per_epoch = audio.n_train * crop_seconds / speed
        per_epoch += audio.validation_audio_s / validation_speed
        total += p.epochs * per_epoch
    return total
