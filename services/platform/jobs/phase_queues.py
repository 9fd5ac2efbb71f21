"""How the platform runs the pipeline's phases: queues, time limits, order, task ids.

The phases themselves are defined once, in ``services/pipeline/phases.py``; each runs as one task
on the queue that suits it. Imports nothing heavy (the Celery app and its health checks read it).
"""

from __future__ import annotations

from services.pipeline.phases import PHASES, Phase
from services.settings import Settings

# Which worker pool runs each phase: "gpu" = model work (anonymize, train, embed, and the
# analyses, whose pre-restoration attack embeds transformed audio; utility, which trains and runs
# the ASR; the corpus stage goes with them because the anonymizer reads its audio), "cpu" =
# numbers (score, report).
PHASE_QUEUES: dict[Phase, str] = {
    "corpus": "gpu",
    "anonymize": "gpu",
    "train": "gpu",
    "embed": "gpu",
    "score": "cpu",
    "utility": "gpu",
    "analyze": "gpu",
    "report": "cpu",
}
QUEUES: tuple[str, ...] = ("gpu", "cpu")

# Soft time limits per phase (seconds) when Settings.stage_time_limits_s does not name the phase.
DEFAULT_STAGE_TIME_LIMITS_S: dict[Phase, float] = {
    "corpus": 2 * 3600.0,
    "anonymize": 12 * 3600.0,
    "train": 48 * 3600.0,
    "embed": 6 * 3600.0,
    "score": 6 * 3600.0,
    "utility": 12 * 3600.0,
    "analyze": 12 * 3600.0,
    "report": 3600.0,
}

# Stage-runner names that belong to a phase of another name (``analysis-srd`` -> analyze; the
# legal metrics' stage runs with the score rows).
_STAGE_PREFIX_PHASE: dict[str, Phase] = {
    "analysis-": "analyze",
    "utility-": "utility",
    "legal": "score",
}


def phase_of_stage(stage: str) -> str:
    """The phase a content-addressed stage belongs to (``analysis-*`` stages: ``analyze``)."""
    for prefix, phase in _STAGE_PREFIX_PHASE.items():
        if stage.startswith(prefix):
            return phase
    return stage


def job_stage_names() -> list[str]:
    """The stage names of every job, in order (one per pipeline phase)."""
    return list(PHASES)


def next_phase(phase: str) -> str | None:
    """The phase after ``phase``, or None after the last."""
    index = PHASES.index(phase)
    return PHASES[index + 1] if index + 1 < len(PHASES) else None


def stage_time_limit_s(settings: Settings, phase: str) -> float:
    """Soft time limit of ``phase`` in seconds (Settings override, else the default)."""
    default = DEFAULT_STAGE_TIME_LIMITS_S[phase]  # type: ignore[index]
    return float(settings.stage_time_limits_s.get(phase, default))


def stage_hard_time_limit_s(settings: Settings, phase: str) -> float:
    """Hard time limit of ``phase`` in seconds: soft limit plus ``stage_hard_limit_margin_s``."""
    return stage_time_limit_s(settings, phase) + settings.stage_hard_limit_margin_s


def task_id_for(job_id: int, phase: str) -> str:
    """The Celery task id of a job's phase: deterministic, so a cancel can revoke it."""
    return f"unmask-job-{job_id}-{phase}"


def task_ids_of_job(job_id: int) -> list[str]:
    """The task ids of every phase of a job."""
    return [task_id_for(job_id, phase) for phase in PHASES]
