"""The named zoos a config may give as ``attackers: <name>`` (``NAMED_ZOOS``), and the checks of
a config's ``attackers`` field against its training (``parse_attackers``, ``validate_zoo``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from services.attacker.recipes import voiceprivacy
from services.attacker.recipes.spec import BASELINE, AttackerSpec, resolve_training
from services.attacker.recipes.strongest import strongest_zoo
from services.attacker.training_config import TrainingConfig

NAMED_ZOOS: dict[str, Callable[[], list[AttackerSpec]]] = {
    BASELINE: lambda: [AttackerSpec(name=BASELINE)],
    "strongest": strongest_zoo,
}
"""The zoos a config may name with ``attackers: <name>``."""


# The VoicePrivacy Challenge attackers (``voiceprivacy.py``): each alone, and
# ``voiceprivacy`` = both where their weights exist.
NAMED_ZOOS.update(
    {
        "vpc2024": lambda: [AttackerSpec(**voiceprivacy.vpc2024_attacker())],
        "vpc2026": lambda: [AttackerSpec(**voiceprivacy.vpc2026_attacker())],
        "voiceprivacy": lambda: [AttackerSpec(**m) for m in voiceprivacy.voiceprivacy_zoo()],
    }
)


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
    if all(s.scored_as_is for s in specs):
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
