"""Renamed config fields: a field whose name changed keeps accepting its former name.

A renamed field of a pydantic model declares ``validation_alias=AliasChoices(current, former)``;
this module reads those declarations, so the former names are spelled once, at the field. Configs
merged key by key (a protocol's config with a job's overrides, a zoo attacker's ``training`` with
the config's) first bring their keys to the current names (:func:`with_current_names`), and a
content hash computed before a rename keeps its value by reading the former names
(:func:`with_former_names`).

A leaf module: it imports nothing of the project.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import AliasChoices, BaseModel


def former_names(model: type[BaseModel]) -> dict[str, str]:
    """``{current name: former name}`` of ``model``'s renamed fields."""
    out: dict[str, str] = {}
    for name, field in model.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            for choice in alias.choices:
                if isinstance(choice, str) and choice != name:
                    out[name] = choice
    return out


def with_former_names(dump: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """``dump`` (a ``model_dump`` of ``model``) with renamed fields under their former names."""
    renamed = former_names(model)
    return {renamed.get(key, key): value for key, value in dump.items()}


def with_current_names(
    data: Mapping[str, Any], model: type[BaseModel], where: str = ""
) -> dict[str, Any]:
    """``data`` (fields of ``model``) with every former name replaced by the current one;
    ``ValueError`` naming both (prefixed by ``where``) when a field is given under both."""
    out = dict(data)
    for name, former in former_names(model).items():
        if former in out:
            if name in out:
                raise ValueError(f"{where}{former}: give {name} or its former name, not both")
            out[name] = out.pop(former)
    return out
