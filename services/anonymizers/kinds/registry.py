"""The anonymizer kinds: the one list every layer reads.

``KINDS`` holds one :class:`~services.anonymizers.kinds.base.AnonymizerKind` per kind, in the
order documents list them. What is built from it:

- ``AnonymizerConfig``: the job config's ``anonymizer`` section, a union of the kinds'
  ``config_model`` told apart by ``kind`` (``EvaluationConfig.anonymizer``; a section without
  ``kind`` is a built-in, and fields of the old single-model section left at their defaults are
  dropped, so stored configs still load);
- the API's ``SubmissionCreate`` union (``api/schemas/submissions.py``, from the kinds with a
  ``submission_model``), the ``kind`` enum of submissions, and each submission's shown fields;
- the platform's submission rules (``services.platform.submissions``: ``columns``,
  ``normalize_columns``, ``content_fields``) and a job's config (``config_section``);
- the config checks (``check``), the printed plan (``describe``, ``anonymize_s_per_utt``) and the
  anonymize stage (``build``, through :func:`build_runner`);
- the CLI's ``--kind`` words (``KIND_NAMES``).

Adding a kind (docs/architecture.md, "Adding an anonymizer kind"): write
``services/anonymizers/kinds/<kind>.py`` with its config model and an ``AnonymizerKind``
subclass, add an instance to ``KINDS`` below, and test it (``tests/unit/test_anonymizer_kinds.py``
walks every kind). A kind that stores new ``submissions`` columns also needs an Alembic revision
that adds them and widens the table's ``kind`` checks (``services/storage/models.py``).

Import cost: this module and the kinds import neither torch nor the pipeline; each kind imports
its runner inside ``build``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import BeforeValidator, Field

from services.anonymizers.kinds.archive import ArchiveKind
from services.anonymizers.kinds.base import AnonymizerKind, KindConfig, RunnerContext
from services.anonymizers.kinds.builtin import BuiltinAnonymizerConfig, BuiltinKind
from services.anonymizers.kinds.container import ContainerKind
from services.anonymizers.kinds.service import ServiceKind
from services.errors import ConfigError

if TYPE_CHECKING:
    from services.anonymizers.base import Anonymizer

KINDS: tuple[AnonymizerKind, ...] = (BuiltinKind(), ArchiveKind(), ContainerKind(), ServiceKind())
"""Every kind, in the order documents and enums list them."""

KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
"""The values of ``kind``: ``builtin``, ``archive``, ``container``, ``service``."""

DEFAULT_KIND = BuiltinKind.name
"""The kind of an ``anonymizer`` section that names none."""

_BY_NAME: dict[str, AnonymizerKind] = {k.name: k for k in KINDS}

# The anonymizer section was once one model with every kind's fields; stored job configs carry
# them at these defaults (dropped when the kind has no such field).
_LEGACY_FLAT_DEFAULTS: dict[str, Any] = {
    "name": "pitch",
    "params": {},
    "archive": None,
    "image": None,
}


def kind_of(kind: str | KindConfig) -> AnonymizerKind:
    """The kind named ``kind`` (or of a config section); :class:`ConfigError` for an unknown
    name."""
    name = kind.kind if isinstance(kind, KindConfig) else kind
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ConfigError(
            f"unknown anonymizer kind {name!r}; kinds are {', '.join(KIND_NAMES)}"
        ) from None


def submitted_kinds() -> tuple[AnonymizerKind, ...]:
    """The kinds submitted as a JSON body (``POST /v1/submissions``), in registry order."""
    return tuple(k for k in KINDS if k.submission_model is not None)


def _normalized_section(value: Any) -> Any:
    """Default ``kind``; drop the old single model's fields left at their defaults."""
    if not isinstance(value, Mapping):
        return value
    data = dict(value)
    data.setdefault("kind", DEFAULT_KIND)
    kind = _BY_NAME.get(data["kind"]) if isinstance(data["kind"], str) else None
    if kind is None:
        return data  # the union's error names the known kinds
    fields = kind.config_model.model_fields
    for key, default in _LEGACY_FLAT_DEFAULTS.items():
        if key not in fields and key in data and data[key] == default:
            del data[key]
    return data


if TYPE_CHECKING:
    AnonymizerConfig = KindConfig
else:
    AnonymizerConfig = Annotated[
        Union[tuple(k.config_model for k in KINDS)],  # noqa: UP007 (built from the registry)
        Field(discriminator="kind"),
        BeforeValidator(_normalized_section),
    ]
"""The job config's ``anonymizer`` section: one of the kinds' config models, by ``kind``."""


def default_anonymizer_config() -> KindConfig:
    """The anonymizer of a config that names none: the built-in ``pitch``."""
    return BuiltinAnonymizerConfig()


def build_runner(config: KindConfig, ctx: RunnerContext) -> Anonymizer:
    """The anonymizer the anonymize stage calls for ``config`` (its kind's ``build``)."""
    return kind_of(config).build(config, ctx)


__all__ = [
    "DEFAULT_KIND",
    "KINDS",
    "KIND_NAMES",
    "AnonymizerConfig",
    "build_runner",
    "default_anonymizer_config",
    "kind_of",
    "submitted_kinds",
]
