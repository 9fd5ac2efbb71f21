"""The attacker zoo: several attackers per evaluation, and the worst-case verdict over them.

A privacy verdict is only as strong as the strongest attacker it was measured against. An
evaluation config's ``attackers`` names the attackers a job trains and scores (each an
:class:`AttackerSpec`: training overrides on the config's ``training``, back-ends, score
normalization); every result row carries the name of its ``attacker``, and :func:`worst_case`
picks, per scenario, the result that is worst for the anonymizer's maker (lowest EER, highest
disclosure), naming the attacker and back-end that achieved it.

``attackers: null`` (the default) is one attacker, ``baseline``, that is the config itself: the
same stages, stage keys and ``results.json`` as an evaluation without a zoo. Named zoos
(:data:`NAMED_ZOOS`): ``vpc2024``, ``vpc2026`` and ``voiceprivacy`` (the VoicePrivacy
Challenge attackers, ``zoo_voiceprivacy``), ``baseline`` (that attacker alone) and ``strongest``
(the baseline plus
``finetuned``, the anonymized-speech recognizer started from the same seed's original-speech
recognizer (``training.init: original``) and fine-tuned within 3x the config's epochs, and
``augmented``, trained from scratch within 3x the epochs with augmentation (the
``AugmentationConfig`` defaults); both scored with cosine and PLDA, and again with AS-norm as
``finetuned-asnorm`` and ``augmented-asnorm``, which share their recognizers), and ``ge2e``, a
pretrained verifier scored as it is (``AttackerSpec.pretrained``: no training, cosine).

Attackers whose resolved training configs are equal share their train and embed stages (stages
are keyed by their inputs), so adding a back-end-only variant costs scoring only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from services.attacker.training_config import AugmentationConfig, TrainingConfig
from services.metrics import catalogue
from services.pipeline import zoo_voiceprivacy
from services.vocab import HEADLINE_SCENARIOS

BASELINE = "baseline"
"""Name of the attacker that is the config's own training and back-ends (today's attacker)."""

ATTACKER_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,31}$")
"""Attacker names: lowercase, digits, ``_ . -``, at most 32 characters (a column and a path)."""

NOT_OVERRIDABLE = frozenset({"seed", "device", "dataloader_workers"})
"""Training fields an attacker may not set: seeds come from the config's ``seeds``; the device
and loader workers are the host's, not the attacker's."""


class AttackerSpec(BaseModel):
    """One attacker of the zoo: how it trains (overrides on the config's ``training``) and scores.

    Unset fields are the config's: ``training: {}``, ``backends: null``, ``normalization: null``
    and ``cohort_top_k: null`` give the config's own attacker.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(
        description="The attacker's name in result rows and tables (lowercase letters, digits, "
        "`_ . -`; at most 32 characters)."
    )
    training: dict[str, Any] = Field(
        default_factory=dict,
        description="Overrides applied onto the config's `training` (e.g. `preset`, `epochs`, "
        "`augmentation: {}` for the augmentation defaults, front-end fields); not `seed`, "
        "`device`, `dataloader_workers`.",
    )
    backends: list[Literal["cosine", "plda"]] | None = Field(
        None, min_length=1, description="Scoring back-ends; null = the config's `backends`."
    )
    normalization: Literal["none", "as-norm"] | None = Field(
        None, description="Score normalization; null = the config's `scoring.normalization`."
    )
    cohort_top_k: int | None = Field(
        None, ge=2, description="AS-norm cohort top K; null = the config's `scoring.cohort_top_k`."
    )
    pretrained: Literal["ge2e", "ecapa"] | None = Field(
        None,
        description="A pretrained verifier scored as it is, never trained on the evaluation's "
        "data: `ge2e` (Resemblyzer's GE2E encoder, weights in its wheel) or `ecapa` (a "
        "SpeechBrain ECAPA checkpoint folder on local disk, `pretrained_path`); cosine scoring. "
        "Its embeddings of the scenario's enrollment and trials are the same whatever the "
        "scenario trains on, so it is the ignorant, lazy-informed and semi-informed attacker at "
        "once. Not with `training`, `epochs_scale`, `normalization` or a back-end other than "
        "cosine.",
    )
    pretrained_path: Path | None = Field(
        None,
        description="`pretrained: ecapa`: the SpeechBrain checkpoint folder (hyperparams.yaml + "
        "embedding_model.ckpt, the speechbrain/spkrec-ecapa-voxceleb layout; its preset is the "
        "one its shapes fit). Relative to the config file.",
    )
    epochs_scale: float | None = Field(
        None,
        ge=1,
        le=10,
        description="Train this many times the config's epochs (rounded; the adversarial start "
        "epoch and a set LR half-cycle scale with it), so that a zoo names a longer schedule "
        "relative to any protocol's; null = the config's `epochs`. Not with `training.epochs`.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not ATTACKER_NAME_RE.match(value):
            raise ValueError(
                f"attacker name {value!r}: use lowercase letters, digits and _ . - "
                "(at most 32 characters, starting with a letter or digit)"
            )
        return value

    @field_validator("training")
    @classmethod
    def _training_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        fixed = sorted(NOT_OVERRIDABLE & set(value))
        if fixed:
            raise ValueError(
                f"training may not set {', '.join(fixed)} (seeds come from the config's `seeds`; "
                "device and loader workers are the host's)"
            )
        unknown = sorted(set(value) - set(TrainingConfig.model_fields))
        if unknown:
            raise ValueError(
                f"training has unknown fields {', '.join(unknown)}; known: "
                f"{', '.join(sorted(TrainingConfig.model_fields))}"
            )
        return value

    @model_validator(mode="after")
    def _one_schedule(self) -> AttackerSpec:
        if self.epochs_scale is not None and "epochs" in self.training:
            raise ValueError("set either epochs_scale or training.epochs, not both")
        if self.pretrained is not None:
            trained = self.training or self.epochs_scale is not None
            if trained or self.normalization not in (None, "none"):
                raise ValueError(
                    f"pretrained {self.pretrained!r} is not trained here: leave out training, "
                    "epochs_scale and normalization"
                )
            if self.backends not in (None, ["cosine"]):
                raise ValueError(f"pretrained {self.pretrained!r} scores with cosine only")
        if (self.pretrained == "ecapa") != (self.pretrained_path is not None):
            raise ValueError("pretrained_path names the folder of pretrained: ecapa (and only it)")
        return self

    @field_validator("backends")
    @classmethod
    def _unique_backends(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"backends has duplicate entries: {value}")
        return value


STRONGEST_EPOCHS_SCALE = 3.0
"""How much longer than the config's schedule the ``strongest`` zoo's extra attackers train.
Measured (benchmarks/attacker_ablation.py, docs/results-synthetic.md): the 8-epoch schedule of
the demo-size synthetic protocol leaves the recognizers short of convergence, and augmented ones
far short (VER_S 40-54 %, pitch); 3x the epochs is the lever that lowered the pitch built-in's
EER beyond the seeds' spread."""


def _strongest_zoo() -> list[AttackerSpec]:
    augmentation = {"augmentation": AugmentationConfig().model_dump(mode="json")}
    # `finetuned` starts from the original-speech recognizer and replaces the former `long`
    # (scratch, 3x): as strong at a third of its training. `augmented` stays from scratch: from
    # the original-speech recognizer it was weaker for VTLN (benchmarks/strongest_zoo.py).
    return [
        AttackerSpec(name=BASELINE),
        *long_attacker_pair(FINETUNED, {"init": "original"}),
        *long_attacker_pair("augmented", {"init": "scratch"} | augmentation),
        AttackerSpec(name=GE2E_ATTACKER, pretrained="ge2e"),
    ]


GE2E_ATTACKER = "ge2e"
"""The ``strongest`` zoo's pretrained verifier (Resemblyzer's GE2E, not trained here): the
attacker anyone can ``pip install``, which beat the trained lazy-informed attacker on an eSpeak NG
corpus (docs/attacker.md)."""


def long_attacker_pair(name: str, training: dict[str, Any]) -> list[AttackerSpec]:
    """``name`` and ``name-asnorm``: one recognizer (``training`` overrides, 3x the config's
    epochs) scored with cosine and PLDA, without and with AS-norm. Both, because AS-norm helped
    some protocols and hurt PLDA on others (docs/results-synthetic.md), and a scoring-only
    variant shares the recognizer."""
    return [
        AttackerSpec(
            name=name + suffix,
            training=training,
            epochs_scale=STRONGEST_EPOCHS_SCALE,
            backends=["cosine", "plda"],
            normalization=normalization,
        )
        for suffix, normalization in (("", "none"), ("-asnorm", "as-norm"))
    ]


FINETUNED = "finetuned"
"""The zoo member whose anonymized-speech recognizers start from the original-speech ones."""


NAMED_ZOOS: dict[str, Callable[[], list[AttackerSpec]]] = {
    BASELINE: lambda: [AttackerSpec(name=BASELINE)],
    "strongest": _strongest_zoo,
}
"""The zoos a config may name with ``attackers: <name>``."""


# The VoicePrivacy Challenge attackers (services/pipeline/zoo_voiceprivacy.py): each alone, and
# ``voiceprivacy`` = both where their weights exist.
NAMED_ZOOS.update(
    {
        "vpc2024": lambda: [AttackerSpec(**zoo_voiceprivacy.vpc2024_attacker())],
        "vpc2026": lambda: [AttackerSpec(**zoo_voiceprivacy.vpc2026_attacker())],
        "voiceprivacy": lambda: [AttackerSpec(**m) for m in zoo_voiceprivacy.voiceprivacy_zoo()],
    }
)


def resolve_training(base: TrainingConfig, spec: AttackerSpec) -> TrainingConfig:
    """``base`` with ``spec.training`` applied (top-level fields replaced, then validated).

    No overrides returns ``base`` itself, so the baseline attacker's train stage key is the one
    an evaluation without a zoo computes. Raises ``pydantic.ValidationError`` for a bad value.
    """
    if not spec.training and spec.epochs_scale is None:
        return base
    data = base.model_dump(mode="json")
    if spec.epochs_scale is not None:
        # The whole schedule stretches, so the adversary and the LR cycle keep their place in it.
        scale = spec.epochs_scale
        data["epochs"] = max(1, round(base.epochs * scale))
        data["adversarial_start_epoch"] = round(base.adversarial_start_epoch * scale)
        if base.lr_half_cycle_epochs is not None:
            data["lr_half_cycle_epochs"] = base.lr_half_cycle_epochs * scale
    data.update(spec.training)
    return TrainingConfig.model_validate(data)


def zoo_specs(attackers: Sequence[AttackerSpec] | str | None) -> list[AttackerSpec]:
    """The attackers of a config's ``attackers`` field (None = the baseline alone)."""
    if attackers is None:
        return [AttackerSpec(name=BASELINE)]
    if isinstance(attackers, str):
        if attackers not in NAMED_ZOOS:
            raise ValueError(
                f"attackers: unknown zoo {attackers!r}; one of {', '.join(sorted(NAMED_ZOOS))} "
                "or a list of attackers"
            )
        return NAMED_ZOOS[attackers]()
    return list(attackers)


def parse_attackers(value: Any) -> Any:
    """The ``attackers`` field before validation: each list entry validated here, so that an
    error names the attacker (``attackers[1] (augmented): training: ...``)."""
    if value is None or isinstance(value, AttackerSpec):
        return value
    if isinstance(value, str):
        if value not in NAMED_ZOOS:
            raise ValueError(
                f"unknown zoo {value!r}; one of {', '.join(sorted(NAMED_ZOOS))} or a list of "
                "attackers"
            )
        return value
    if not isinstance(value, list | tuple):
        raise ValueError("expected a list of attackers or the name of a zoo")
    if not value:
        raise ValueError("an empty zoo has no attacker; leave `attackers` out for the baseline")
    specs, problems = [], []
    for i, item in enumerate(value):
        name = item.get("name", "?") if isinstance(item, Mapping) else "?"
        try:
            specs.append(AttackerSpec.model_validate(item))
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"]) or "(attacker)"
                problems.append(f"attackers[{i}] ({name}): {loc}: {err['msg']}")
    if problems:
        raise ValueError("; ".join(problems))
    return specs


RECIPE_ZOOS = frozenset({"vpc2024", "vpc2026", "voiceprivacy"})
"""Named zoos whose attackers are published recipes: they set their own training fields."""


def recipe_overrides(base: TrainingConfig, specs: Sequence[AttackerSpec]) -> list[str]:
    """The ``training`` fields the config sets to other than their defaults that the recipes
    ``specs`` set themselves (so the config's values would be ignored), sorted. (A stored
    config, dumped with every default, sets none.)"""
    recipe_keys = {key for spec in specs for key in spec.training}
    fields = TrainingConfig.model_fields
    return sorted(
        key
        for key in base.model_fields_set & recipe_keys
        if getattr(base, key) != fields[key].get_default(call_default_factory=True)
    )


def validate_zoo(base: TrainingConfig, attackers: Sequence[AttackerSpec] | str | None) -> None:
    """Check a zoo against the config's training; ``ValueError`` names each bad attacker, and
    each ``training`` field a recipe zoo (``RECIPE_ZOOS``) would ignore."""
    specs = zoo_specs(attackers)
    if all(s.pretrained is not None for s in specs):
        raise ValueError(
            "attackers: a zoo needs at least one trained attacker (its recognizers serve the "
            "utility phase and the analyses); add baseline"
        )
    if isinstance(attackers, str) and attackers in RECIPE_ZOOS:
        ignored = recipe_overrides(base, specs)
        if ignored:
            fields = ", ".join(f"training.{k}" for k in ignored)
            raise ValueError(
                f"attackers: {attackers} trains with its published recipe, which sets {fields}"
                " itself: the config's values would be ignored; remove them (a recipe keeps the"
                " config's other training fields, e.g. device, seed, patience: docs/attacker.md)"
            )
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"attackers: duplicate names {', '.join(duplicates)}")
    problems = []
    for i, spec in enumerate(specs):
        try:
            resolve_training(base, spec)
        except ValidationError as exc:
            for err in exc.errors():
                loc = ".".join(str(p) for p in err["loc"])
                problems.append(f"attackers[{i}] ({spec.name}): training.{loc}: {err['msg']}")
    if problems:
        raise ValueError("; ".join(problems))


def headline(worst: Mapping[str, Mapping[str, Any]]) -> tuple[str | None, str]:
    """(headline scenario, its worst-case attacker) of a ``worst_case`` block; (None,
    ``baseline``) when it is empty."""
    for scenario in (*HEADLINE_SCENARIOS, "original"):
        entry = worst.get(scenario)
        if isinstance(entry, Mapping) and entry.get("attacker"):
            return scenario, str(entry["attacker"])
    return None, BASELINE


# -- the worst case ------------------------------------------------------------------------------


def row_attacker(row: Mapping[str, Any]) -> str:
    """The attacker of a result row (rows of evaluations without a zoo are the baseline's)."""
    return str(row.get("attacker") or BASELINE)


def worst_case(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scenario, the result worst for the anonymizer's maker over attackers and back-ends.

    Each (attacker, back-end) is first averaged over its seeds (``summarize_seed_values``); the
    headline is the (attacker, back-end) with the lowest mean EER (%), ties broken by attacker
    then back-end name. ``metrics`` holds, for every seed-summary metric of the catalogue, its
    worst value (lowest for higher-is-better metrics such as EER and min Cllr, highest for
    disclosure: SRD, linkability, detection rates) and the attacker and back-end that achieved
    it; a metric no row carries is left out. Returns ``{scenario: {"attacker", "backend",
    <the EER key>, "n_seeds", "attackers", "metrics": {key: {"value", "attacker", "backend"}}}}``.
    """
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault((str(r["scenario"]), row_attacker(r), str(r["backend"])), []).append(r)
    means: dict[tuple[str, str, str], dict[str, float]] = {}
    for key, sel in groups.items():
        summary = catalogue.summarize_seed_values(list(sel))
        means[key] = {
            k: v["mean"] for k, v in summary.items() if v is not None and math.isfinite(v["mean"])
        }
    out: dict[str, dict[str, Any]] = {}
    eer = catalogue.EER
    for scenario in dict.fromkeys(k[0] for k in groups):
        keys = sorted(k for k in means if k[0] == scenario)
        metrics: dict[str, dict[str, Any]] = {}
        for m in catalogue.seed_summary_metrics():
            candidates = {(a, b): means[(scenario, a, b)].get(m.key) for _, a, b in keys}
            pick = catalogue.worst_for_maker(m.key, candidates)
            if pick is not None:
                value = candidates[pick]
                metrics[m.key] = {"value": value, "attacker": pick[0], "backend": pick[1]}
        headline = metrics.get(eer.key)
        attacker = headline["attacker"] if headline else keys[0][1]
        backend = headline["backend"] if headline else keys[0][2]
        out[scenario] = {
            "attacker": attacker,
            "backend": backend,
            eer.key: headline["value"] if headline else None,
            "n_seeds": len(groups[(scenario, attacker, backend)]),
            "attackers": sorted({k[1] for k in keys}),
            "metrics": metrics,
        }
    return out
