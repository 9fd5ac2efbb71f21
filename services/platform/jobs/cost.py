"""The one place that bounds what a job may cost: every config value that scales work or memory.

Each :class:`CostKnob` measures one value of a job's evaluation config (a count, a length, a list
length, or the product that sets the total training work) and is bounded by the setting
``UNMASK_MAX_JOB_<NAME>`` or, per protocol, by the protocol body's ``limits.<name>``.
:func:`check_job_cost` runs when a job is created (``build_job_config``) and again when a job is
re-run (``check_stored_config_cost``, against the protocol's current bounds). The list of knobs
and their defaults is docs/deploy.md's "Request and cost limits" table.

Attackers of a zoo count with their own training: the largest ``epochs`` and ``crop_seconds`` of
any attacker are bounded, and so is the total training work

    training_work = len(seeds) x trained scenarios x sum over attackers (epochs x crop_seconds)

in crop-seconds per training utterance: one unit is one second of audio per training utterance
through the recognizer once. The data factor (training utterances) is the protocol's corpus,
which only its administrator chooses (a job cannot override ``protocol`` or ``synthetic``), and is
bounded by ``synthetic_speakers`` and ``synthetic_utts_per_speaker``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from services.errors import ConfigError
from services.pipeline.config import EvaluationConfig
from services.pipeline.zoo import resolve_training, zoo_specs
from services.settings import Settings
from services.storage.models import Protocol

# A job's `name` is free text shown on every poll and page; the default one is
# "<submission name> on <protocol name> v<version>" (at most 200 + 128 + a few characters).
JOB_NAME_MAX_CHARS = 400


@dataclass(frozen=True)
class CostKnob:
    """One config value that drives a job's cost; bounded by ``UNMASK_MAX_JOB_<NAME>`` or the
    protocol body's ``limits.<name>``."""

    name: str
    field: str  # where it lives in the evaluation config (for the error message)
    measure: Callable[[EvaluationConfig], float]

    @property
    def setting(self) -> str:
        return f"max_job_{self.name}"


def _srd_resamples(config: EvaluationConfig) -> int:
    srd = config.analyses.srd_representations
    return max(config.metrics.bootstrap_resamples, srd.bootstrap_resamples if srd else 0)


def _attacker_trainings(config: EvaluationConfig) -> list[tuple[int, float]]:
    """(epochs, crop_seconds) of every attacker of the config (its own attacker when no zoo)."""
    return [
        (training.epochs, training.crop_seconds)
        for training in (resolve_training(config.training, s) for s in zoo_specs(config.attackers))
    ]


def _trained_scenarios(config: EvaluationConfig) -> int:
    """Recognizers trained per attacker and seed: one per anonymized scenario (``original``
    reuses the ignorant recognizer), at least one."""
    return max(1, len([s for s in config.scenarios if s != "original"]))


def training_work(config: EvaluationConfig) -> float:
    """Total training work of a job, crop-seconds per training utterance (module docstring)."""
    per_seed = sum(epochs * crop for epochs, crop in _attacker_trainings(config))
    return len(config.seeds) * _trained_scenarios(config) * per_seed


def _size_study_counts(config: EvaluationConfig) -> int:
    study = config.analyses.size_study
    if study is None:
        return 0
    return max(len(study.speaker_counts), len(study.enrollment_counts), len(study.trial_counts))


COST_KNOBS: tuple[CostKnob, ...] = (
    CostKnob(
        "epochs",
        "training.epochs",
        lambda c: max(epochs for epochs, _ in _attacker_trainings(c)),
    ),
    CostKnob(
        "crop_seconds",
        "training.crop_seconds",
        lambda c: max(crop for _, crop in _attacker_trainings(c)),
    ),
    CostKnob("attackers", "attackers", lambda c: len(zoo_specs(c.attackers))),
    CostKnob("seeds", "seeds", lambda c: len(c.seeds)),
    CostKnob(
        "training_work", "seeds x scenarios x attackers' epochs x crop_seconds", training_work
    ),
    CostKnob("batch_size", "training.batch_size", lambda c: c.training.batch_size),
    CostKnob("bootstrap_resamples", "metrics.bootstrap_resamples", _srd_resamples),
    CostKnob(
        "size_study_samples",
        "analyses.size_study.samples",
        lambda c: c.analyses.size_study.samples if c.analyses.size_study else 0,
    ),
    CostKnob(
        "size_study_target_seeds",
        "analyses.size_study.target_seeds",
        lambda c: len(c.analyses.size_study.target_seeds) if c.analyses.size_study else 0,
    ),
    CostKnob(
        "size_study_counts",
        "analyses.size_study.(speaker|enrollment|trial)_counts",
        _size_study_counts,
    ),
    CostKnob(
        "phone_units",
        "analyses.srd_representations.phone_units",
        lambda c: (
            c.analyses.srd_representations.phone_units if c.analyses.srd_representations else 0
        ),
    ),
    CostKnob("synthetic_speakers", "synthetic.n_speakers", lambda c: c.synthetic.n_speakers),
    CostKnob(
        "synthetic_utts_per_speaker",
        "synthetic.utts_per_speaker",
        lambda c: c.synthetic.utts_per_speaker,
    ),
)
COST_KNOB_NAMES = tuple(knob.name for knob in COST_KNOBS)


class CostLimitError(ConfigError):
    """A job's config asks for more work than its protocol allows (422)."""


def cost_limits(protocol: Protocol, settings: Settings) -> dict[str, float]:
    """Upper bound of every cost knob for jobs of ``protocol``: the protocol body's ``limits``
    where set, else the ``UNMASK_MAX_JOB_*`` setting."""
    overrides = dict((protocol.body or {}).get("limits") or {})
    return {
        knob.name: float(overrides.get(knob.name, getattr(settings, knob.setting)))
        for knob in COST_KNOBS
    }


def check_job_cost(
    config: EvaluationConfig,
    protocol: Protocol,
    settings: Settings,
    *,
    source: str = "config",
) -> None:
    """Raise :class:`CostLimitError` naming the first knob of ``config`` above its bound, or a
    ``name`` longer than :data:`JOB_NAME_MAX_CHARS`."""
    if len(config.name) > JOB_NAME_MAX_CHARS:
        raise ConfigError(
            f"{source}.name: {len(config.name)} characters; at most {JOB_NAME_MAX_CHARS}"
        )
    limits = cost_limits(protocol, settings)
    for knob in COST_KNOBS:
        value, limit = knob.measure(config), limits[knob.name]
        if value > limit:
            raise CostLimitError(
                f"{source}.{knob.field}: {value:g} is above the limit of {limit:g} for protocol "
                f"{protocol.name} v{protocol.version} (protocol limits.{knob.name}, default "
                f"UNMASK_{knob.setting.upper()})"
            )
