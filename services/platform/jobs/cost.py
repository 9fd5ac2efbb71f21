"""The one place that bounds what a job may cost: every config value that scales work or memory.

Each :class:`CostKnob` measures one value of a job's evaluation config (a count, a length, a list
length, or the product that sets the total training work) and is bounded by the setting
``UNMASK_MAX_JOB_<NAME>`` or, per protocol, by the protocol body's ``limits.<name>``.
:func:`check_job_cost` runs when a job is created (``build_job_config``) and again when a job is
re-run (``check_stored_config_cost``, against the protocol's current bounds). The list of knobs
and their defaults is docs/deploy.md's "Request and cost limits" table.

Every knob is measured on the job's evaluation plan (``services.pipeline.plan``), so attackers
of a zoo count with their own training: the largest ``epochs`` and ``crop_seconds`` of any
attacker are bounded, and so is the total training work

    training_work = sum over the recognizers the plan trains (epochs x crop_seconds)

(the recognizers counted once each: seeds x trained conditions x distinct attacker trainings),
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
from services.pipeline.plan import EvaluationPlan, plan_evaluation
from services.settings import Settings
from services.storage.models import ProtocolRecord

# A job's `name` is free text shown on every poll and page; the default one is
# "<submission name> on <protocol name> v<version>" (at most 200 + 128 + a few characters).
JOB_NAME_MAX_CHARS = 400


@dataclass(frozen=True)
class CostKnob:
    """One config value that drives a job's cost; bounded by ``UNMASK_MAX_JOB_<NAME>`` or the
    protocol body's ``limits.<name>``."""

    name: str
    field: str  # where it lives in the evaluation config (for the error message)
    measure: Callable[[EvaluationPlan], float]
    """The knob's value in a job's evaluation plan."""

    @property
    def setting(self) -> str:
        return f"max_job_{self.name}"


def _srd_resamples(config: EvaluationConfig) -> int:
    srd = config.analyses.srd_representations
    return max(config.metrics.bootstrap_resamples, srd.bootstrap_resamples if srd else 0)


def training_work(plan: EvaluationPlan) -> float:
    """Total training work of a job, crop-seconds per training utterance (module docstring)."""
    return float(
        sum(
            attacker.epochs * attacker.config.training.crop_seconds
            for attacker, _ in plan.distinct_recognizers()
        )
    )


def _size_study_counts(config: EvaluationConfig) -> int:
    study = config.analyses.size_study
    if study is None:
        return 0
    return max(len(study.speaker_counts), len(study.enrollment_counts), len(study.trial_counts))


COST_KNOBS: tuple[CostKnob, ...] = (
    # The longest schedule any attacker of the plan trains (a zoo's `epochs_scale` counts).
    CostKnob("epochs", "training.epochs", lambda p: p.max_epochs),
    CostKnob(
        "crop_seconds",
        "training.crop_seconds",
        lambda p: max(a.config.training.crop_seconds for a in p.attackers),
    ),
    CostKnob("attackers", "attackers", lambda p: len(p.attackers)),
    CostKnob("seeds", "seeds", lambda p: len(p.config.seeds)),
    CostKnob(
        "training_work", "seeds x scenarios x attackers' epochs x crop_seconds", training_work
    ),
    CostKnob("batch_size", "training.batch_size", lambda p: p.config.training.batch_size),
    CostKnob(
        "bootstrap_resamples", "metrics.bootstrap_resamples", lambda p: _srd_resamples(p.config)
    ),
    CostKnob(
        "size_study_samples",
        "analyses.size_study.samples",
        lambda p: p.config.analyses.size_study.samples if p.config.analyses.size_study else 0,
    ),
    CostKnob(
        "size_study_target_seeds",
        "analyses.size_study.target_seeds",
        lambda p: (
            len(p.config.analyses.size_study.target_seeds) if p.config.analyses.size_study else 0
        ),
    ),
    CostKnob(
        "size_study_counts",
        "analyses.size_study.(speaker|enrollment|trial)_counts",
        lambda p: _size_study_counts(p.config),
    ),
    CostKnob(
        "phone_units",
        "analyses.srd_representations.phone_units",
        lambda p: (
            p.config.analyses.srd_representations.phone_units
            if p.config.analyses.srd_representations
            else 0
        ),
    ),
    CostKnob("synthetic_speakers", "synthetic.n_speakers", lambda p: p.config.synthetic.n_speakers),
    CostKnob(
        "synthetic_utts_per_speaker",
        "synthetic.utts_per_speaker",
        lambda p: p.config.synthetic.utts_per_speaker,
    ),
)
COST_KNOB_NAMES = tuple(knob.name for knob in COST_KNOBS)


class CostLimitError(ConfigError):
    """A job's config asks for more work than its protocol allows (422)."""


def cost_limits(protocol: ProtocolRecord, settings: Settings) -> dict[str, float]:
    """Upper bound of every cost knob for jobs of ``protocol``: the protocol body's ``limits``
    where set, else the ``UNMASK_MAX_JOB_*`` setting."""
    overrides = dict((protocol.body or {}).get("limits") or {})
    return {
        knob.name: float(overrides.get(knob.name, getattr(settings, knob.setting)))
        for knob in COST_KNOBS
    }


def check_job_cost(
    config: EvaluationConfig,
    protocol: ProtocolRecord,
    settings: Settings,
    *,
    source: str = "config",
) -> None:
    """Raise :class:`CostLimitError` naming the first knob of ``config``'s evaluation plan above
    its bound, or a ``name`` longer than :data:`JOB_NAME_MAX_CHARS`."""
    if len(config.name) > JOB_NAME_MAX_CHARS:
        raise ConfigError(
            f"{source}.name: {len(config.name)} characters; at most {JOB_NAME_MAX_CHARS}"
        )
    limits = cost_limits(protocol, settings)
    plan = plan_evaluation(config)
    for knob in COST_KNOBS:
        value, limit = knob.measure(plan), limits[knob.name]
        if value > limit:
            raise CostLimitError(
                f"{source}.{knob.field}: {value:g} is above the limit of {limit:g} for protocol "
                f"{protocol.name} v{protocol.version} (protocol limits.{knob.name}, default "
                f"UNMASK_{knob.setting.upper()})"
            )
