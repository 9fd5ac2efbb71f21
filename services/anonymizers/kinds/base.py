"""The interface every anonymizer kind implements (``registry.py`` lists the kinds).

A kind is how a maker hands in an anonymizer: a built-in by name, pre-anonymized audio, an OCI
image, ... One :class:`AnonymizerKind` subclass per kind declares, in one module:

- ``name``: the value of ``kind`` everywhere (job config, API bodies, the ``submissions.kind``
  column, the CLI);
- ``config_model``: the job config's ``anonymizer`` section for this kind (a :class:`KindConfig`
  with ``kind: Literal[name]``); the config's anonymizer union is built from these;
- the submission: ``submission_field`` and ``submission_model`` (the body field of
  ``POST /v1/submissions`` and its model; None for a kind submitted another way, e.g. archive
  uploads), ``submission_columns`` (checks a submitted spec and returns the ``submissions``
  columns it stores), ``columns`` / ``normalize_columns`` / ``content_fields`` (its columns,
  their check, and those the content hash covers), ``config_section`` (a stored submission ->
  its ``anonymizer`` section) and ``public_fields`` (what the API shows of it);
- ``check`` (problems found before any work, for ``unmask evaluate --check`` and the worker),
  ``describe`` (its words in the printed plan), ``anonymize_s_per_utt`` (its cost in the time
  estimate), and ``build`` (the runner: the :class:`~services.anonymizers.base.Anonymizer` the
  anonymize stage calls).

Nothing here imports torch or the pipeline: the job config imports the registry at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from services.anonymizers.base import Anonymizer
    from services.corpus.manifest import Manifest
    from services.corpus.protocol import Protocol
    from services.settings import Settings

StageFn = Callable[[Path], dict[str, Any]]
"""A content-addressed stage's work: fills the folder, returns its outputs (``StageRunner``)."""


class KindConfig(BaseModel):
    """Base of every kind's config model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")

    kind: str


@dataclass(frozen=True)
class RunnerContext:
    """What a kind's runner may use on the host that runs the anonymize stage."""

    protocol: Protocol
    manifest: Manifest
    protocol_key: str
    """Content key of the corpus stage (stage inputs name it)."""
    gpu: bool
    """Whether this host computes on a GPU (a container gets one exactly then)."""
    sandbox_options: Mapping[str, Any]
    """``ContainerSandbox.anonymizer_options()`` of this host (engine, limits, pulling)."""
    settings: Settings
    run_stage: Callable[[str, dict[str, Any], StageFn], Path]
    """Runs a content-addressed stage ``(name, inputs, work)`` once; returns its folder."""
    progress: Callable[[float, str], None]
    """``(fraction done of the anonymize stage, message)``."""


class AnonymizerKind:
    """One kind of anonymizer submission (module docstring). Subclasses set the class variables
    and override the methods that apply; the defaults suit a kind with no extra rules."""

    name: ClassVar[str]
    title: ClassVar[str]
    """Capitalized label; the API's create body is ``<title>SubmissionCreate``."""
    description: ClassVar[str]
    """One line for docs and help texts."""
    config_model: ClassVar[type[KindConfig]]
    submission_field: ClassVar[str | None] = None
    submission_model: ClassVar[type[BaseModel] | None] = None
    submission_doc: ClassVar[str] = ""
    """The create body's description in the API document."""
    columns: ClassVar[tuple[str, ...]] = ()
    """The ``submissions`` columns this kind stores (kept None for other kinds)."""
    content_fields: ClassVar[tuple[str, ...]] = ()
    """The columns the submission's content hash covers (besides ``kind``): equal content,
    equal hash."""
    made_for_protocol: ClassVar[bool] = False
    """Submissions are made for one protocol (``protocol_id``; pre-anonymized audio)."""
    pre_anonymized: ClassVar[bool] = False
    """The maker hands in anonymized audio: the enrollment-leak check runs on it."""
    baseline: ClassVar[bool] = False
    """The platform's own anonymizers: shown as baselines on the leaderboard."""

    def submission_columns(self, spec: BaseModel, settings: Settings) -> dict[str, Any]:
        """The ``submissions`` columns of a submitted ``submission_model`` instance; raises
        :class:`~services.errors.InvalidInputError` (``body.<field>...: message``)."""
        raise NotImplementedError(f"kind {self.name} is not submitted as a JSON body")

    def normalize_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        """Check the columns of a new submission (``ValueError`` naming what is missing or
        malformed) and return them as stored."""
        return {c: columns.get(c) for c in self.columns}

    def columns_of(self, row: Any) -> dict[str, Any]:
        """This kind's columns of a stored ``submissions`` row (what the methods below read)."""
        return {c: getattr(row, c) for c in self.columns}

    def config_section(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        """The job config's ``anonymizer`` section of a stored submission (its columns)."""
        raise NotImplementedError

    def public_fields(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        """What the API's submission view shows of the stored columns (field -> value)."""
        return {}

    def created_fields(self, columns: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
        """What only the creation answer shows, once (a secret the maker needs)."""
        return {}

    def check(self, config: Any, *, engine_url: str | None = None) -> list[str]:
        """Problems with ``config`` found before any work (``anonymizer.<field>: message``)."""
        return []

    def describe(self, config: Any) -> str:
        """Words for the printed plan: ``builtin anonymizer pitch``."""
        return f"{self.name} anonymizer"

    def anonymize_s_per_utt(self, measured_builtin_s: float) -> float | None:
        """Seconds per utterance the anonymize stage takes, for the printed time estimate, given
        the measured built-in speed; None = not estimated (the maker's code)."""
        return None

    def calls_note(self, n_utterances: int) -> str | None:
        """Words for the plan's cost line when the kind calls out per utterance (``N HTTPS calls
        to ...``); None = no outside calls."""
        return None

    def build(self, config: Any, ctx: RunnerContext) -> Anonymizer:
        """The runner: the anonymizer the anonymize stage calls for ``config``."""
        raise NotImplementedError
