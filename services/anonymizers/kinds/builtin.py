"""Kind ``builtin``: one of the platform's own anonymizers, by name with parameters.

The names and their parameters are ``services.anonymizers.registry`` (``build_anonymizer``); the
platform offers ``BUILTIN_NAMES`` to makers, evaluation configs may also name the test-only ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from services.anonymizers.kinds.base import AnonymizerKind, KindConfig, RunnerContext
from services.anonymizers.registry import ALL_BUILTIN_NAMES, BUILTIN_NAMES, build_anonymizer
from services.errors import InvalidFieldError, InvalidInputError
from services.json_values import JsonObject

if TYPE_CHECKING:
    from services.anonymizers.base import Anonymizer
    from services.settings import Settings

KIND = "builtin"

BuiltinName = Literal[BUILTIN_NAMES]  # type: ignore[valid-type]
"""The built-ins a maker may submit (the test-only ones are for evaluation configs)."""


class BuiltinAnonymizerConfig(KindConfig):
    """``builtin``: a built-in by ``name`` with ``params`` (docs/anonymizers.md)."""

    kind: Literal["builtin"] = Field(
        "builtin", description="builtin (the default when `kind` is left out)."
    )
    name: str = Field(
        "pitch",
        description="Built-in name: pitch, vtln, mcadams (test only: silence, noise, the "
        "degenerate outputs the usable-speech guard must catch).",
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Built-in parameters.")


class BuiltinSpec(BaseModel):
    """A built-in anonymizer (docs/anonymizers.md)."""

    model_config = ConfigDict(extra="forbid")

    name: BuiltinName = Field(examples=["pitch"], description="A built-in anonymizer.")
    params: JsonObject = Field(default_factory=dict, examples=[{"semitones": 4}])


class BuiltinKind(AnonymizerKind):
    """The platform's own anonymizers: the leaderboard's baselines."""

    name = KIND
    title = "Builtin"
    description = "a built-in anonymizer by name and parameters"
    config_model = BuiltinAnonymizerConfig
    submission_field = "builtin"
    submission_model = BuiltinSpec
    submission_doc = "Submit a built-in anonymizer with parameters."
    columns = ("builtin_name", "builtin_params")
    content_fields = ("builtin_name", "builtin_params")
    baseline = True

    def submission_columns(self, spec: BaseModel, settings: Settings) -> dict[str, Any]:
        """Checked by constructing the anonymizer (``body.builtin.name`` / ``.params``)."""
        assert isinstance(spec, BuiltinSpec)
        field = "body.builtin.name" if spec.name not in BUILTIN_NAMES else "body.builtin.params"
        try:
            build_anonymizer(spec.name, spec.params)
        except (ValueError, TypeError) as exc:
            raise InvalidFieldError(field, str(exc)) from None
        return {"builtin_name": spec.name, "builtin_params": spec.params}

    def normalize_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        if not columns.get("builtin_name"):
            raise ValueError("kind builtin needs builtin_name")
        return {
            "builtin_name": columns["builtin_name"],
            "builtin_params": dict(columns.get("builtin_params") or {}),
        }

    def config_section(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "kind": KIND,
            "name": columns["builtin_name"],
            "params": dict(columns.get("builtin_params") or {}),
        }

    def public_fields(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        if not columns.get("builtin_name"):
            return {}
        params = dict(columns.get("builtin_params") or {})
        return {"builtin": BuiltinSpec(name=columns["builtin_name"], params=params)}

    def check(self, config: Any, *, engine_url: str | None = None) -> list[str]:
        # Test-only built-ins (silence, noise) are valid in evaluation configs: they exercise the
        # utility metrics; the platform's submission API offers BUILTIN_NAMES only.
        try:
            build_anonymizer(config.name, config.params)
        except (InvalidInputError, ValueError) as exc:
            field = "anonymizer.params" if config.name in ALL_BUILTIN_NAMES else "anonymizer.name"
            return [f"{field}: {exc}"]
        return []

    def describe(self, config: Any) -> str:
        return f"builtin anonymizer {config.name}"

    def anonymize_s_per_utt(self, measured_builtin_s: float) -> float | None:
        return measured_builtin_s

    def build(self, config: Any, ctx: RunnerContext) -> Anonymizer:
        return build_anonymizer(config.name, config.params)
