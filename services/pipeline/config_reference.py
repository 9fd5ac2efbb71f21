"""Markdown reference of the evaluation config, generated from the pydantic field descriptions.

``docs/evaluation.md`` embeds its output; a test keeps the two equal, so the docs cannot drift.
"""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from services.field_names import former_names
from services.pipeline.config import EvaluationConfig

BEGIN = "<!-- config-reference:begin -->"
END = "<!-- config-reference:end -->"


def _default(field: Any) -> str:
    if field.default_factory is not None:
        value = field.default_factory()
    elif field.default is PydanticUndefined:
        return "(required)"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(see below)"
    return f"`{json.dumps(value, default=str)}`"


def _union_models(annotation: Any) -> list[type[BaseModel]]:
    """The models of a union told apart by ``kind`` (the anonymizer kinds), else []."""
    candidates = getattr(annotation, "__args__", None) or ()
    models = [c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)]
    if len(models) > 1 and all("kind" in m.model_fields for m in models):
        return models
    return []


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    candidates = getattr(annotation, "__args__", None) or (annotation,)
    for c in candidates:
        if isinstance(c, type) and issubclass(c, BaseModel):
            return c
    for c in candidates:
        # A list of models (``attackers: list[AttackerSpec] | ...``): the entries' fields.
        if getattr(c, "__origin__", None) is list:
            inner = _nested_model(c)
            if inner is not None:
                return inner
    return None


def config_reference_markdown() -> str:
    """Tables of every config field (path, default, description), nested models expanded."""
    lines: list[str] = []

    def table(model: type[BaseModel], prefix: str, heading: str | None = None) -> None:
        nested: list[tuple[str, type[BaseModel], str | None]] = []
        title = heading or (f"### `{prefix}`" if prefix else "### top level")
        lines.append(title)
        lines.append("")
        lines.append("| field | default | description |")
        lines.append("|---|---|---|")
        for name, field in model.model_fields.items():
            path = f"{prefix}.{name}" if prefix else name
            desc = (field.description or "").replace("|", "\\|").replace("\n", " ")
            former = former_names(model).get(name)
            if former is not None:  # a renamed field: its former name is still read
                desc += f" Formerly `{former}` (still accepted)."
            lines.append(f"| `{path}` | {_default(field)} | {desc} |")
            kinds = _union_models(field.annotation)
            for variant in kinds:
                kind = typing.get_args(variant.model_fields["kind"].annotation)[0]
                nested.append((path, variant, f"### `{path}` (kind `{kind}`)"))
            sub = None if kinds else _nested_model(field.annotation)
            if sub is not None:
                nested.append((path, sub, None))
        lines.append("")
        for path, sub, heading in nested:
            table(sub, path, heading)

    table(EvaluationConfig, "")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(config_reference_markdown())
