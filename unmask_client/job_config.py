"""A typed view of a job's evaluation config (``JobOut.config``, an open mapping in the API).

The API returns the job's whole stored config (every field of the evaluation config, defaults
filled in). :class:`JobConfigView` reads the fields an integrator usually wants: what anonymizer
was evaluated, against which attack scenarios, seeds and back-ends, with which attacker training.
Unknown keys are ignored and a missing or ill-typed field reads as ``None``, so a view of a config
written by an older or newer server never raises.

    view = unmask.job_config(job)            # or JobConfigView.from_config(job.config)
    print(view.anonymizer_kind, view.anonymizer_ref, view.scenarios, view.training_epochs)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The field naming what was submitted, per anonymizer kind (its ``anonymizer`` section).
_REF_FIELD = {"builtin": "name", "archive": "archive", "container": "image", "service": "url"}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _texts(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return tuple(value)


def _ints(value: Any) -> tuple[int, ...] | None:
    if not isinstance(value, list) or not all(_int(v) is not None for v in value):
        return None
    return tuple(value)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class JobConfigView:
    """The commonly read fields of a job's config; ``None`` where the config has no such field.

    - ``name``: the evaluation's label;
    - ``anonymizer_kind``: ``builtin``, ``archive``, ``container`` or ``service``;
    - ``anonymizer_ref``: what identifies the submitted anonymizer: the built-in's name, the
      archive's blob key, the container image reference (``name@sha256:...``) or the service's
      base URL;
    - ``anonymizer_params``: a built-in's parameters (``None`` for the other kinds);
    - ``scenarios``: the attack scenarios in the evaluation's order (``ignorant``,
      ``semi-informed``, ...); ``seeds``: the attacker training seeds; ``backends``: the scoring
      back-ends (``cosine``, ``plda``, ...);
    - ``training_preset``, ``training_epochs``: the attacker recognizer's model preset and its
      cap on training epochs;
    - ``attackers_recipe``: the attacker recipe named instead of an attacker list, if any.
    """

    name: str | None = None
    anonymizer_kind: str | None = None
    anonymizer_ref: str | None = None
    anonymizer_params: Mapping[str, Any] | None = None
    scenarios: tuple[str, ...] | None = None
    seeds: tuple[int, ...] | None = None
    backends: tuple[str, ...] | None = None
    training_preset: str | None = None
    training_epochs: int | None = None
    attackers_recipe: str | None = None

    @classmethod
    def from_config(cls, config: object) -> JobConfigView:
        """The view of a config mapping, or of the generated ``JobOutConfig`` (its
        ``to_dict()``); unknown keys are ignored."""
        to_dict = getattr(config, "to_dict", None)
        data = _mapping(config if isinstance(config, Mapping) else to_dict() if to_dict else None)
        section = _mapping(data.get("anonymizer"))
        # A stored section that names no kind is a built-in (as the server reads it).
        kind = _text(section.get("kind")) or ("builtin" if section else None)
        ref_field = _REF_FIELD.get(kind or "")
        params = section.get("params") if kind == "builtin" else None
        training = _mapping(data.get("training"))
        return cls(
            name=_text(data.get("name")),
            anonymizer_kind=kind,
            anonymizer_ref=_text(section.get(ref_field)) if ref_field else None,
            anonymizer_params=dict(params) if isinstance(params, Mapping) else None,
            scenarios=_texts(data.get("scenarios")),
            seeds=_ints(data.get("seeds")),
            backends=_texts(data.get("backends")),
            training_preset=_text(training.get("preset")),
            training_epochs=_int(training.get("epochs")),
            attackers_recipe=_text(data.get("attackers")),
        )
