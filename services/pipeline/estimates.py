"""What an evaluation will train and roughly how long it takes (torch-free: the plan and the API).

:func:`recognizer_plan` lists the distinct recognizers (train stages) a config trains: per zoo
attacker and seed, the original- and anonymized-speech recognizers its scenarios need (and the
transfer sources of ``training.start: original``), recognizers with equal training shared as the
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

from services.attacker.recipes import zoo_specs
from services.pipeline.config import EvaluationConfig
from services.pipeline.plan import SCENARIO_PLAN, plan_evaluation

TRAIN_AUDIO_SECONDS_PER_SECOND: dict[str, float] = {
    # Audio seconds of training crops (and validation passes) per wall second on an idle 2-core
    # CPU machine, 2 torch threads with the passive OpenMP wait. tiny: the quick example from an
    # empty store (2 x 12 epochs of 16 steps x 32 crops x 3 s in 84 s, load ~1; the eSpeak NG
    # protocol then ran at 467: docs/performance.md, "Estimates"). vpc:
    # benchmarks/attacker_throughput.py, one thread, load ~10 (docs/attacker.md), so on an idle
    # machine this is pessimistic.
    "tiny": 480.0,
    "vpc": 14.7,
    # ge2e: tiny's times the ratio benchmarks/attacker_throughput.py measured in one run, one
    # thread, load 7-9 (ge2e on its 1.6 s crops 43.5 s/s, tiny on 3 s crops 121.3 s/s: 0.36).
    "ge2e": 172.0,
}
"""Measured training throughput per preset (CPU); presets without a measurement get no estimate
(``standard``, ``xvector``; every GPU: not measured). An estimate counts crops of the config's
``crop_seconds``; the fine-tuned GE2E's are 1.6 s, so its time is over-estimated (an upper
bound)."""

VALIDATION_AUDIO_SECONDS_PER_SECOND = 745.0
"""Embedding throughput of the validation pass, tiny preset, idle (the earlier loaded
measurement, 128 utterances of ~4 s in 2.1 s, scaled as the training throughput); scaled by the
preset's training throughput ratio for other presets."""


@dataclass(frozen=True)
class RecognizerPlan:
    """One train stage: which attackers use it, its data condition, seed, preset and cap."""

    attackers: tuple[str, ...]
    condition: str
    seed: int
    preset: str
    epochs: int
    start: str


def recognizer_plan(cfg: EvaluationConfig) -> list[RecognizerPlan]:
    """The distinct recognizers ``cfg`` trains (its :class:`EvaluationPlan`'s, shared ones once,
    with every attacker that uses each), in training order."""
    plans: dict[tuple[str, int, str], RecognizerPlan] = {}
    for attacker in plan_evaluation(cfg).attackers:
        for condition, seed in attacker.recognizers:
            key = (condition, seed, attacker.stage_identity(condition))
            known = plans.get(key)
            plans[key] = RecognizerPlan(
                attackers=(*known.attackers, attacker.name) if known else (attacker.name,),
                condition=condition,
                seed=seed,
                preset=attacker.config.training.preset,
                epochs=attacker.epochs,
                start=attacker.stage_start(condition),
            )
    return list(plans.values())


def plan_summary(plan: Sequence[RecognizerPlan]) -> str:
    """``6 recognizers (2 on original speech, 4 on anonymized speech, 2 of them fine-tuned);
    epochs cap 6 x2, 18 x4``."""
    n_orig = sum(p.condition == "original" for p in plan)
    tuned = sum(p.start == "original" for p in plan)
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


@dataclass(frozen=True)
class AudioSizes:
    """Seconds of audio per set: what the per-phase estimate multiplies throughputs with."""

    train_s: float
    """Attacker-train audio (also the utility ASR's training data)."""
    validation_s: float
    enrollment_s: float
    trial_s: float
    corpus_s: float
    """Audio of the whole corpus (generated, for the synthetic one)."""


def synthetic_audio_sizes(cfg: EvaluationConfig) -> AudioSizes:
    """The synthetic corpus's sizes (mean utterance length between the duration bounds)."""
    s = cfg.synthetic
    sizes = synthetic_training_audio(cfg)
    mean_s = (s.min_duration_s + s.max_duration_s) / 2
    per_role = s.n_eval_speakers * mean_s
    return AudioSizes(
        train_s=sizes.n_train * mean_s,
        validation_s=sizes.validation_audio_s,
        enrollment_s=per_role * s.enrollments_per_speaker,
        trial_s=per_role * s.trials_per_speaker,
        corpus_s=sizes.n_corpus * mean_s,
    )


def protocol_audio_sizes(protocol_path: Path) -> AudioSizes:
    """A protocol's sizes from its manifest's durations (no audio read)."""
    from services.corpus.protocol import load_protocol_and_manifest

    protocol, manifest = load_protocol_and_manifest(protocol_path)
    durations = {u.utt_id: u.duration_s for u in manifest.utterances}

    def total(ids: Sequence[str]) -> float:
        return float(sum(durations.get(u, 0.0) for u in ids))

    return AudioSizes(
        train_s=total(protocol.attacker_train),
        validation_s=total(protocol.attacker_validation),
        enrollment_s=total(protocol.enrollment),
        trial_s=total(protocol.trial),
        corpus_s=float(sum(durations.values())),
    )


@dataclass(frozen=True)
class PhaseThroughputs:
    """Measured speeds of the phases other than attacker training, in audio seconds per wall
    second on the 2-core CPU machine (2 torch threads; docs/performance.md, "Estimates")."""

    corpus: float = 418.0
    """Synthetic corpus generation with WAV writing (quick example, idle: ~4,600 s in 11.0 s)."""
    anonymize: float = 154.0
    """Built-in pitch (quick example, idle: ~3,330 s of audio in 21.6 s)."""
    embed_tiny: float = 300.0
    """Whole-utterance embedding, ``tiny`` preset, idle (enrollment, trial and, for PLDA, the
    training set); other presets scale by their training throughput ratio."""
    challenger: float = 179.0
    """The challenger's pretrained GE2E verifier, one utterance at a time, idle 2 threads (118
    eSpeak NG utterances, 640 s, in 3.6 s)."""
    pretrained_ecapa: float = 90.0
    """An operator's SpeechBrain ECAPA folder scored as it is (``pretrained: ecapa``, the
    ``standard`` preset's size), one utterance at a time: 2.0x GE2E's time in
    benchmarks/pretrained_verifiers.py (2 threads, 72 s of audio), applied to ``challenger``."""
    pretrained_hf_xvector: float = 23.0
    """An operator's Hugging Face speaker-verification folder (``pretrained: hf-xvector``) at
    WavLM Base+ size, one utterance at a time: 7.9x GE2E's time in the same run, applied to
    ``challenger``."""
    asr_train: float = 105.0
    """Utility ASR training, audio seconds per second per epoch (quick example, idle: 3 epochs of
    2,078 s in 59 s with its validation passes)."""
    utility_metrics: float = 70.0
    """Transcription, pYIN F0 and the guard over original + anonymized trial audio (quick
    example, idle: 2 x ~513 s in 14.6 s)."""
    startup_s: float = 11.0
    """Imports, scoring, plots and the report."""


PHASE_SPEEDS = PhaseThroughputs()


def _scenario_sets(scenario: str) -> list[tuple[str, str]]:
    """(condition, set) pairs a scenario embeds: its enrollment and its trials."""
    _, enrollment, trial = SCENARIO_PLAN[scenario]
    return [(enrollment, "enrollment"), (trial, "trial")]


def _sets_seconds(sets: set[tuple[str, str]], sizes: AudioSizes) -> float:
    """Seconds of audio in the (condition, set) pairs ``sets``."""
    return sum(sizes.enrollment_s if name == "enrollment" else sizes.trial_s for _, name in sets)


def _pretrained_seconds(
    cfg: EvaluationConfig,
    sizes: AudioSizes,
    speed: PhaseThroughputs,
    challenged: set[tuple[str, str]],
) -> float:
    """Wall seconds the zoo's pretrained verifiers scored as they are take to embed every
    scenario's sets (GE2E's sets the challenger embeds are shared with it)."""
    speeds = {
        "ge2e": speed.challenger,
        "ecapa": speed.pretrained_ecapa,
        "hf-xvector": speed.pretrained_hf_xvector,
    }
    sets = {(c, n) for s in cfg.scenarios for c, n in _scenario_sets(s)}
    # Members with the same verifier and folder share their embed stages: counted once.
    verifiers = {
        (spec.pretrained, spec.pretrained_path)
        for spec in zoo_specs(cfg.attackers)
        if spec.scored_as_is and spec.pretrained is not None
    }
    seconds = 0.0
    for verifier, _ in verifiers:
        assert verifier is not None  # filtered above
        own = sets - challenged if verifier == "ge2e" else sets
        rate = speeds[verifier]
        seconds += _sets_seconds(own, sizes) / rate if rate > 0 else 0.0
    return seconds


def phase_seconds(
    cfg: EvaluationConfig,
    recognizers: Sequence[RecognizerPlan],
    training: TrainingAudio,
    sizes: AudioSizes,
    speed: PhaseThroughputs = PHASE_SPEEDS,
    *,
    anonymize_scale: float | None = 1.0,
    challenger: bool | None = None,
) -> dict[str, float] | None:
    """Estimated wall seconds per phase without reuse (attacker training to its epochs caps, the
    utility ASR to its cap): ``corpus``, ``anonymize``, ``train``, ``embed``, ``utility`` (which
    includes ``utility-asr``, trained once per protocol) and ``report``. ``anonymize_scale``:
    the anonymizer kind's cost relative to a built-in's (None = not estimated: 0 here). None when
    a preset has no measured throughput. ``challenger``: whether the challenger is scored (its
    GE2E embeddings count under ``embed``; None: the ``UNMASK_CHALLENGER`` setting)."""
    train = training_seconds(recognizers, training, cfg.training.crop_seconds)
    if train is None:
        return None
    tiny = TRAIN_AUDIO_SECONDS_PER_SECOND["tiny"]
    eval_s = sizes.enrollment_s + sizes.trial_s
    anonymizes_training = any(s != "original" for s in cfg.scenarios)
    anonymized_s = eval_s + (sizes.train_s + sizes.validation_s if anonymizes_training else 0.0)
    # A trained back-end (PLDA) also embeds each recognizer's training set.
    per_recognizer_s = 2 * eval_s + (sizes.train_s if "plda" in cfg.backends else 0.0)
    embed = 0.0
    for p in recognizers:
        embed_speed = speed.embed_tiny * TRAIN_AUDIO_SECONDS_PER_SECOND[p.preset] / tiny
        embed += per_recognizer_s / embed_speed
    if challenger is None:
        from services.settings import get_settings

        challenger = get_settings().challenger
    attacks = [s for s in cfg.scenarios if s != "original"]
    challenged: set[tuple[str, str]] = set()
    if challenger and attacks:
        # Anonymized enrollment and trials, and the original enrollment for the ignorant attack.
        challenged = {(c, n) for s in attacks for c, n in _scenario_sets(s)}
        embed += _sets_seconds(challenged, sizes) / speed.challenger
    embed += _pretrained_seconds(cfg, sizes, speed, challenged)
    out = {
        "corpus": sizes.corpus_s / speed.corpus if cfg.protocol_file is None else 0.0,
        "anonymize": anonymized_s / speed.anonymize * (anonymize_scale or 0.0),
        "train": train,
        "embed": embed,
        "utility": 0.0,
        "utility-asr": 0.0,
        "report": speed.startup_s,
    }
    if cfg.utility is not None:
        asr = cfg.utility.asr
        asr_s = asr.epochs * sizes.train_s / speed.asr_train if asr.source == "train" else 0.0
        out["utility-asr"] = asr_s
        out["utility"] = asr_s + 2 * sizes.trial_s / speed.utility_metrics
    return out
