"""Checks of an evaluation config's references before any work starts, and the run's plan.

`parse_config` checks each field's form; `config_problems` checks what the fields point at
(the anonymizer's name and parameters, the archive folder, the container engine and image
reference, the protocol file, sizes against the corpus, the attacker's local weight folders)
and returns EVERY problem, each naming its field, so that ``unmask evaluate`` fails in a
second instead of after a minute of work.

`plan_lines` describes the work the run's plan (``services.pipeline.plan``) holds: stages, the
recognizers and epochs per attacker, how many finished stage folders the store already holds
(stages with equal inputs are reused), and a rough time estimate from measured throughputs.
Torch-free, like the config itself.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from services.anonymizers.kinds.registry import kind_of
from services.attacker.local_weights import local_weights_problems
from services.errors import ConfigError, InvalidInputError
from services.pipeline.config import (
    EvaluationConfig,
    _error_lines,
    join_problems,
    read_config_data,
    resolve_paths,
)
from services.pipeline.estimates import PhaseThroughputs
from services.pipeline.plan import EvaluationPlan, plan_evaluation


def load_checked_config(path: str | Path, *, engine_url: str | None = None) -> EvaluationConfig:
    """Read ``path``, validate every field AND its references, report every problem at once.

    When some fields are malformed, the sections that are well-formed on their own (anonymizer,
    synthetic corpus, protocol) still have their references checked, so one run lists all.
    Raises ``ConfigError`` with one line naming the file and each field.
    """
    data = read_config_data(path)
    source = str(path)
    try:
        cfg = resolve_paths(EvaluationConfig.model_validate(data), path)
    except ValidationError as exc:
        problems = _error_lines(exc)
        bad_sections = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
        partial = _partial_config(data, bad_sections)
        if partial is not None:
            problems += config_problems(resolve_paths(partial, path), engine_url=engine_url)
        raise ConfigError(join_problems(source, problems)) from None
    problems = config_problems(cfg, engine_url=engine_url)
    if problems:
        raise ConfigError(join_problems(source, problems))
    return cfg


def _partial_config(data: dict[str, Any], bad_sections: set[str]) -> EvaluationConfig | None:
    """The config with its malformed top-level sections dropped, for the reference checks."""
    kept = {k: v for k, v in data.items() if k not in bad_sections}
    if "anonymizer" in bad_sections:
        kept["anonymizer"] = {"name": "pitch"}  # checked already: do not report it twice
    try:
        return EvaluationConfig.model_validate(kept)
    except ValidationError:
        return None


def config_problems(cfg: EvaluationConfig, *, engine_url: str | None = None) -> list[str]:
    """Every problem of ``cfg``'s references, as ``field: message`` (empty = none).

    ``engine_url``: the container engine to ping for ``anonymizer.kind: container``
    (None or empty: ``DOCKER_HOST``, then Docker's default socket).
    """
    problems: list[str] = []
    problems += _anonymizer_problems(cfg, engine_url)
    problems += _corpus_problems(cfg)
    # Local pretrained / SSL weight folders: torch-free, reads only their configs.
    problems += [f"training.{p}" for p in local_weights_problems(cfg.training)]
    problems += _zoo_weight_problems(cfg)
    problems += _utility_problems(cfg)
    problems += _legal_problems(cfg)
    return problems


def protocol_problems(cfg: EvaluationConfig) -> list[str]:
    """The problems of a platform protocol's config that ``unmask evaluate`` would refuse and
    that can be judged where the protocol is registered (the API host): the synthetic corpus's
    role sizes and per-speaker counts. A protocol file's path names a file on the worker hosts,
    and the anonymizer comes with each submission: neither is checked here."""
    if cfg.protocol_file is not None:
        return []
    return _corpus_problems(cfg)


def _legal_problems(cfg: EvaluationConfig) -> list[str]:
    """Legal-metrics requests a protocol file's evaluation set cannot serve (the synthetic
    corpus's are checked with the config itself)."""
    spec = cfg.metrics.legal
    if spec is None or spec.adapts or cfg.protocol_file is None or not cfg.protocol_file.is_file():
        return []
    from services.corpus.protocol import load_protocol_and_manifest
    from services.metrics.legal import population_of
    from services.pipeline.config import legal_spec_problems

    try:
        protocol, manifest = load_protocol_and_manifest(cfg.protocol_file)
    except (InvalidInputError, OSError, ValueError):
        return []  # reported by the corpus check
    speaker = {u.utt_id: u.speaker_id for u in manifest.utterances}
    population = population_of(
        [speaker[i] for i in protocol.trial if i in speaker],
        [speaker[i] for i in protocol.enrollment if i in speaker],
    )
    return legal_spec_problems(spec, population)


def _zoo_weight_problems(cfg: EvaluationConfig) -> list[str]:
    """The local weight folders of each zoo attacker's resolved training (vpc2026's WavLM and
    verifier, an attacker with its own ``pretrained_ecapa_path``), beyond the config's own."""
    if cfg.attackers is None:
        return []
    from services.attacker.recipes import resolve_training, zoo_specs

    own = set(local_weights_problems(cfg.training))
    problems: list[str] = []
    for spec in zoo_specs(cfg.attackers):
        if spec.pretrained_path is not None:
            problem = pretrained_folder_problem(spec.pretrained, spec.pretrained_path)
            if problem:
                problems.append(f"attackers ({spec.name}): {problem}")
            continue
        for p in local_weights_problems(resolve_training(cfg.training, spec)):
            if p not in own:
                problems.append(f"attackers ({spec.name}): training.{p}")
    return problems


def pretrained_folder_problem(verifier: str | None, folder: Path) -> str | None:
    """What is wrong with the local folder of a pretrained verifier (``ecapa``: a SpeechBrain
    checkpoint folder; ``hf-xvector``: a Hugging Face speaker-verification folder), read without
    loading it; None when it looks usable."""
    from services.attacker.hf_xvector import HF_XVECTOR, check_hf_xvector_folder
    from services.attacker.local_weights import check_ecapa_folder

    try:
        if verifier == HF_XVECTOR:
            check_hf_xvector_folder(folder)
        else:
            check_ecapa_folder(folder)
    except ConfigError as exc:
        # The ECAPA check names the training field of the same layout; here it is the attacker's.
        return str(exc).replace("pretrained_ecapa_path:", "pretrained_path:", 1)
    return None


def _utility_problems(cfg: EvaluationConfig) -> list[str]:
    """A pretrained ASR folder that cannot be loaded; a protocol without the transcripts the WER
    needs (the synthetic corpus has them)."""
    utility = cfg.utility
    if utility is None or not utility.wer:
        return []
    problems: list[str] = []
    if utility.asr.source == "pretrained" and utility.asr.pretrained_path is not None:
        from services.utility.asr import check_asr_folder

        try:
            check_asr_folder(utility.asr.pretrained_path)
        except (InvalidInputError, OSError) as exc:
            problems.append(f"utility.asr.pretrained_path: {exc}")
    if cfg.protocol_file is not None and cfg.protocol_file.is_file():
        from services.corpus.protocol import load_protocol_and_manifest

        try:
            protocol, manifest = load_protocol_and_manifest(cfg.protocol_file)
        except (InvalidInputError, OSError, ValueError):
            return problems  # reported by the corpus check
        by_id = {u.utt_id: u for u in manifest.utterances}
        needed = [*protocol.attacker_train, *protocol.trial]
        missing = sum(1 for i in needed if i in by_id and not (by_id[i].text or "").strip())
        if missing:
            problems.append(
                f"utility.wer: {missing} of {len(needed)} attacker-train and trial utterances "
                "have no transcript (`text` in the manifest); import the corpus with its "
                "transcripts (LibriSpeech/LibriTTS importers read them) or set utility.wer: false"
            )
    return problems


def _anonymizer_problems(cfg: EvaluationConfig, engine_url: str | None) -> list[str]:

    return kind_of(cfg.anonymizer).check(cfg.anonymizer, engine_url=engine_url)


def _corpus_problems(cfg: EvaluationConfig) -> list[str]:
    if cfg.protocol_file is not None:
        from services.corpus.protocol import load_protocol_and_manifest

        if cfg.protocol_file.is_dir():
            return [f"protocol_file: {cfg.protocol_file} is a directory, not a protocol JSON"]
        try:
            load_protocol_and_manifest(cfg.protocol_file)
        except (InvalidInputError, OSError, ValueError) as exc:
            return [f"protocol_file: {exc}"]
        return []
    s = cfg.synthetic
    problems: list[str] = []
    roles = s.n_attacker_train_speakers + s.n_eval_speakers + s.n_target_speakers
    if roles > s.n_speakers:
        problems.append(
            f"synthetic: n_attacker_train_speakers + n_eval_speakers + n_target_speakers = "
            f"{roles} exceeds n_speakers = {s.n_speakers}"
        )
    per_speaker = s.enrollments_per_speaker + s.trials_per_speaker
    if per_speaker > s.utts_per_speaker:
        problems.append(
            f"synthetic: enrollments_per_speaker + trials_per_speaker = {per_speaker} exceeds "
            f"utts_per_speaker = {s.utts_per_speaker}"
        )
    if s.min_duration_s > s.max_duration_s:
        problems.append(
            f"synthetic: min_duration_s {s.min_duration_s} > max_duration_s {s.max_duration_s}"
        )
    return problems


# --- the plan -----------------------------------------------------------------------------------


def plan_lines(
    cfg: EvaluationConfig, stages_dir: Path, speed: PhaseThroughputs | None = None
) -> list[str]:
    """A few lines: the stages, what the stage store already holds, a rough duration, and with an
    attacker zoo one line per attacker (its recognizers and epochs), read from the
    :class:`~services.pipeline.plan.EvaluationPlan` the run will follow and the recognizer
    estimates of ``services.pipeline.estimates``."""
    from services.pipeline import estimates

    plan = plan_evaluation(cfg)
    recognizers = estimates.recognizer_plan(cfg)
    lines = [
        f"plan: {cfg.name}: {kind_of(cfg.anonymizer).describe(cfg.anonymizer)}"
        + f"; scenarios {', '.join(cfg.scenarios)}; seeds {cfg.seeds}; back-ends "
        f"{', '.join(cfg.backends)}",
        f"plan: stages corpus -> {'anonymize -> ' if plan.anonymize else ''}train "
        f"({estimates.plan_summary(recognizers)}) -> embed -> score ({plan.n_score_rows} rows)"
        + (" -> utility" if cfg.utility is not None else "")
        + (" -> analyses" if any(cfg.analyses.model_dump().values()) else "")
        + " -> report",
    ]
    done = _finished_stages(stages_dir)
    if done:
        held = ", ".join(f"{n} {stage}" for stage, n in sorted(done.items()))
        lines.append(f"plan: stage store {stages_dir} holds {held}; equal inputs are reused")
    else:
        lines.append(f"plan: stage store {stages_dir} is empty; every stage is computed")
    lines.append(_estimate_line(cfg, recognizers, speed, stages_dir))
    calls = _calls_line(cfg)
    if calls is not None:
        lines.append(calls)
    if plan.zoo:
        lines += _attacker_lines(plan)
    return lines


def _estimate_line(
    cfg: EvaluationConfig,
    recognizers: list[Any],
    speed: PhaseThroughputs | None = None,
    stages_dir: Path | None = None,
) -> str:
    """The plan's time line: measured throughputs of every phase applied to the corpus or
    protocol's audio durations (services/pipeline/estimates.py), utility included; its ASR only
    when the stage store ``stages_dir`` does not hold it already."""
    from services.pipeline import estimates
    from services.pipeline.stages.utility import asr_in_store

    try:
        if cfg.protocol_file is None:
            training = estimates.synthetic_training_audio(cfg)
            sizes = estimates.synthetic_audio_sizes(cfg)
        else:
            training = estimates.protocol_training_audio(cfg.protocol_file)
            sizes = estimates.protocol_audio_sizes(cfg.protocol_file)
    except Exception as exc:  # an unreadable protocol is reported by the config checks
        return f"plan: no time estimate ({type(exc).__name__} reading the protocol)"
    kind = kind_of(cfg.anonymizer)
    anonymize_scale = kind.anonymize_s_per_utt(1.0)  # the kind's cost relative to a built-in's
    phases = estimates.phase_seconds(
        cfg,
        recognizers,
        training,
        sizes,
        speed or estimates.PHASE_SPEEDS,
        anonymize_scale=anonymize_scale,
    )
    if phases is None:
        measured = set(estimates.TRAIN_AUDIO_SECONDS_PER_SECOND)
        presets = sorted({r.preset for r in recognizers} - measured)
        return (
            f"plan: no time estimate for preset {', '.join(presets)} (no measured CPU throughput; "
            "docs/performance.md)"
        )
    asr_note = ""
    if phases["utility-asr"] > 0:
        asr_note = f" (its ASR {_minutes(phases['utility-asr'])}, trained once per protocol)"
        if stages_dir is not None and asr_in_store(cfg, stages_dir):
            phases["utility"] -= phases["utility-asr"]
            asr_note = " (its ASR reused from the stage store)"
    seconds = sum(v for k, v in phases.items() if k != "utility-asr")
    parts = [
        f"{name} {_minutes(phases[name])}" + (asr_note if name == "utility" else "")
        for name in ("corpus", "anonymize", "train", "embed", "utility", "report")
        if phases[name] > 0
    ]
    left_out = [
        name
        for name, present in (
            (f"{kind.name} anonymization", anonymize_scale is None),
            ("analyses", any(cfg.analyses.model_dump().values())),
        )
        if present
    ]
    return (
        f"plan: at most about {_minutes(seconds)} on a 2-core CPU without reuse: "
        + ", ".join(parts)
        + " (training to the epochs caps, patience usually stops earlier; audio durations times "
        "measured throughputs, services/pipeline/estimates.py"
        + (f"; {', '.join(left_out)} not included)" if left_out else ")")
    )


def _calls_line(cfg: EvaluationConfig) -> str | None:
    """The plan's line for a kind that calls out per utterance (a service): how many calls."""
    from services.pipeline import estimates

    kind = kind_of(cfg.anonymizer)
    if kind.calls_note(0) is None:
        return None
    try:
        audio = (
            estimates.synthetic_training_audio(cfg)
            if cfg.protocol_file is None
            else estimates.protocol_training_audio(cfg.protocol_file)
        )
    except Exception:  # an unreadable protocol is reported by the config checks
        return None
    anonymizes_training = any(s != "original" for s in cfg.scenarios)
    anonymized = audio.n_eval + (audio.n_train if anonymizes_training else 0)
    return f"plan: cost: {kind.calls_note(anonymized)}"


def _attacker_lines(plan: EvaluationPlan) -> list[str]:
    """One line per attacker of a zoo: what it trains (or shares) and how it scores."""
    trained: dict[str, list[str]] = {}
    for attacker, _ in plan.distinct_recognizers():
        trained.setdefault(attacker.training_identity, []).append(attacker.name)
    lines = []
    for attacker in plan.attackers:
        owner = trained.get(attacker.training_identity, [attacker.name])[0]
        n = len(attacker.recognizers)
        training = (
            f"{n} recognizer(s) x {attacker.epochs} epochs"
            if owner == attacker.name
            else f"shares the {n} recognizer(s) of {owner}"
        )
        scoring = attacker.config.scoring.normalization
        lines.append(
            f"plan: attacker {attacker.name}: {training}; back-ends "
            f"{', '.join(attacker.config.backends)}"
            + ("" if scoring == "none" else f", {scoring}")
            + f"; {len(attacker.scores)} score rows"
        )
    return lines


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{max(10, int(math.ceil(seconds / 10) * 10))} s"
    return f"{round(seconds / 60)} min"


def _finished_stages(stages_dir: Path) -> dict[str, int]:
    """Finished stage folders (those with ``DONE.json``) per stage name."""
    if not stages_dir.is_dir():
        return {}
    counts: dict[str, int] = {}
    for stage in sorted(p for p in stages_dir.iterdir() if p.is_dir() and p.name[0] != "."):
        n = sum(1 for key in stage.iterdir() if (key / "DONE.json").is_file())
        if n:
            counts[stage.name] = n
    return counts
