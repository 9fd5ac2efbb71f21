"""The platform's vocabularies, each defined once: job states, webhook events, attack scenarios
(order, labels, headline), the aggregate's seed, trust marks.

Every other spelling reads these: the ``jobs`` table's check and the job state machines
(``services.storage.models``, ``services.platform.jobs.records``), the API's enums
(``api/schemas/common.py``: ``JobState``, ``EventType``, built from here so the OpenAPI document
lists these values), the CLI (``cli/client.py``, ``cli/result_table.py``, the platform demo), the
job page's script (the states come into the page from ``job_page_vocabulary``), the badge and the
leaderboard's trust column. ``tests/unit/test_vocabularies.py`` fails when one of them disagrees.

A leaf module: it imports nothing of the project.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal


class RunState(StrEnum):
    """State of a job or of one of its stages."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


TERMINAL_STATES: frozenset[RunState] = frozenset(
    {RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED}
)
"""States a job or stage never leaves."""

JOB_STATE_VALUES: tuple[str, ...] = tuple(s.value for s in RunState)
"""Every job state, in the order of a job's life (queued first)."""

TERMINAL_STATE_VALUES: tuple[str, ...] = tuple(s for s in JOB_STATE_VALUES if s in TERMINAL_STATES)
"""The terminal states in the same order: succeeded, failed, cancelled."""


class ProtocolAsrState(StrEnum):
    """Where a protocol's original-speech utility ASR is (``services/platform/protocols/asr``):
    trained once per protocol, at registration, and shared by every job on it."""

    QUEUED = "queued"
    RUNNING = "running"
    READY = "ready"
    FAILED = "failed"


PROTOCOL_ASR_STATE_VALUES: tuple[str, ...] = tuple(s.value for s in ProtocolAsrState)
"""Every state of a protocol's ASR training, in the order of its life."""

JOB_EVENT_PREFIX = "job."

WEBHOOK_EVENT_TYPES: tuple[str, ...] = tuple(JOB_EVENT_PREFIX + s for s in TERMINAL_STATE_VALUES)
"""Webhook event types: one per terminal job state (``job.succeeded``, ``job.failed``,
``job.cancelled``), in that order."""


def job_event_type(state: str) -> str:
    """The webhook event type of a job that reached ``state`` (a terminal state)."""
    event = JOB_EVENT_PREFIX + RunState(state).value
    if event not in WEBHOOK_EVENT_TYPES:
        raise ValueError(f"job state {state!r} is not terminal: no webhook event")
    return event


# --- attack scenarios -----------------------------------------------------------------------

Scenario = Literal["original", "ignorant", "lazy-informed", "semi-informed"]
"""An attack scenario (what the attacker's recognizer was trained on, and its enrollment)."""


@dataclass(frozen=True)
class ScenarioInfo:
    """One attack scenario: its key, a short label, and what it means."""

    key: str
    label: str
    meaning: str


SCENARIOS: tuple[ScenarioInfo, ...] = (
    ScenarioInfo("original", "Original", "no anonymization: the recognizer on original speech"),
    ScenarioInfo(
        "ignorant",
        "Ignorant",
        "the attacker does not know the anonymizer: original-speech recognizer and enrollment",
    ),
    ScenarioInfo(
        "lazy-informed",
        "Lazy-informed",
        "anonymized enrollment, recognizer trained on original speech",
    ),
    ScenarioInfo(
        "semi-informed",
        "Semi-informed",
        "anonymized enrollment, recognizer retrained on anonymized speech",
    ),
)
"""The scenarios in the evaluation's reference order (every table lists them so)."""

SCENARIO_ORDER: tuple[str, ...] = tuple(s.key for s in SCENARIOS)
"""The reference order of the scenarios; unknown ones follow alphabetically."""

SCENARIO_LABELS: dict[str, str] = {s.key: s.label for s in SCENARIOS}

REFERENCE_SCENARIO: str = SCENARIOS[0].key
"""The unprotected reference (``original``): the attacker scored on original speech."""

HEADLINE_SCENARIOS: tuple[str, ...] = ("semi-informed", "lazy-informed", "ignorant")
"""The verdict's headline scenario: the strongest attack scenario the evaluation ran, in this
order of strength (``original`` only when no attack scenario ran)."""


def scenario_rank(scenario: str) -> tuple[int, str]:
    """Sort key of a scenario: the reference order, then unknown ones alphabetically."""
    try:
        return (SCENARIO_ORDER.index(scenario), scenario)
    except ValueError:
        return (len(SCENARIO_ORDER), scenario)


# --- result rows ------------------------------------------------------------------------------

AGGREGATE_SEED = -1
"""The seed of a result row that holds a value aggregated over seeds (``<key>_std`` beside it):
the metric catalogue names the values, storage keeps the rows."""


# --- trust marks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrustMark:
    """How every surface writes one outcome of a check (the report's trust check; the
    usable-speech guard on the submission page reads the same marks)."""

    symbol: str
    """The mark itself (``✓``, ``⚠``, ``?``)."""
    state: str
    """A word for styles and data attributes: ``ok``, ``warn``, ``unknown``."""
    word: str
    """The CSV export's cell: ``yes``, ``no``, ``unknown``."""
    meaning: str
    """What the mark says, for tooltips and legends."""
    badge_words: str
    """What a README badge writes after the mark (a reader has no tooltip)."""
    verdict: str
    """How a verdict names the attacker's state (the CLI's verdict block, the page's verdict)."""


TRUST: dict[bool | None, TrustMark] = {
    True: TrustMark("✓", "ok", "yes", "every trust check passed", "", "trustworthy"),
    False: TrustMark(
        "⚠", "warn", "no", "a trust check failed", " weak attacker", "NOT TRUSTWORTHY"
    ),
    None: TrustMark(
        "?", "unknown", "unknown", "the report has no trust check", " unchecked", "not checked"
    ),
}
"""A report's trust check (``trustworthy``: True passed, False failed, None not checked) as
every surface writes it: the leaderboard's trust column and legend, its CSV export, the
submission page and its verdict, the metric definitions page, the README badge and the CLI's
verdict block."""

TRUST_MARKS: dict[bool | None, str] = {k: m.symbol for k, m in TRUST.items()}
"""The marks alone: every check passed, one failed, not checked."""


def trust_mark(trustworthy: bool | None) -> TrustMark:
    """How a check whose outcome is ``trustworthy`` (None: not checked) is written."""
    return TRUST[trustworthy]


def job_page_vocabulary() -> dict[str, Any]:
    """What the job page's script needs, handed to it as JSON (never spelled in the page)."""
    return {
        "states": list(JOB_STATE_VALUES),
        "terminal": list(TERMINAL_STATE_VALUES),
        "succeeded": RunState.SUCCEEDED.value,
        "open_log_states": [RunState.RUNNING.value, RunState.FAILED.value],
    }
