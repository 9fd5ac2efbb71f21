"""Each vocabulary is defined once (services/vocab.py); the API's enums, the CLI, the generated
client and the job page read it. A test here fails when one of them disagrees."""

from __future__ import annotations

import re
import typing
from pathlib import Path

from services import vocab
from services.vocab import (
    HEADLINE_SCENARIOS,
    JOB_STATE_VALUES,
    SCENARIO_ORDER,
    TERMINAL_STATE_VALUES,
    WEBHOOK_EVENT_TYPES,
    RunState,
)

ROOT = Path(__file__).resolve().parents[2]
STATE_LITERAL = re.compile(r"""["'](queued|running|succeeded|failed|cancelled)["']""")
# A state compared or listed: job["state"] == "succeeded", s.state in ("running", ...).
STATE_TEST = re.compile(
    r"""state\)?(?:["']\])?\s*(?:==|!=|===|!==|in\s*[(\[{])\s*["'](queued|running|succeeded|failed|cancelled|ready)["']"""
)


def test_job_states_and_events_are_one_list() -> None:
    assert JOB_STATE_VALUES == ("queued", "running", "succeeded", "failed", "cancelled")
    assert TERMINAL_STATE_VALUES == ("succeeded", "failed", "cancelled")
    assert WEBHOOK_EVENT_TYPES == ("job.succeeded", "job.failed", "job.cancelled")
    assert [vocab.job_event_type(s) for s in TERMINAL_STATE_VALUES] == list(WEBHOOK_EVENT_TYPES)
    from services.storage import models

    # Storage reads the states from the vocabulary; it does not spell its own.
    assert models.RunState is RunState and models.ProtocolAsrState is vocab.ProtocolAsrState


def test_the_api_enums_are_the_vocabularies() -> None:
    from api.schemas.common import EventType, JobState
    from services.platform.webhooks import EVENT_TYPE_ORDER, JOB_EVENT_TYPES

    assert typing.get_args(JobState) == JOB_STATE_VALUES
    assert typing.get_args(EventType) == WEBHOOK_EVENT_TYPES
    assert JOB_EVENT_TYPES == EVENT_TYPE_ORDER == WEBHOOK_EVENT_TYPES


def test_the_openapi_document_lists_the_vocabularies() -> None:
    from api.app import create_app
    from services.settings import Settings

    schemas = create_app(Settings(), senders={}).openapi()["components"]["schemas"]
    assert schemas["JobOut"]["properties"]["state"]["enum"] == list(JOB_STATE_VALUES)
    events = schemas["WebhookCreate"]["properties"]["events"]["items"]["enum"]
    assert events == list(WEBHOOK_EVENT_TYPES)


def test_the_cli_and_its_generated_client_agree() -> None:
    from cli.client import TERMINAL_JOB_STATES
    from unmask_client import FINISHED_JOB_STATES
    from unmask_client.api_client.models.job_out_state import JobOutState
    from unmask_client.api_client.models.webhook_create_events_item import WebhookCreateEventsItem
    from unmask_client.submit import SCENARIO_ORDER as client_scenario_order

    assert TERMINAL_JOB_STATES == frozenset(TERMINAL_STATE_VALUES) == FINISHED_JOB_STATES
    import inspect

    from cli.client import check_thresholds as cli_check
    from unmask_client.submit import check_thresholds as client_check

    # The installable client cannot import the domain: its scenario order and default are tied here.
    assert client_scenario_order == SCENARIO_ORDER
    for check in (cli_check, client_check):
        assert inspect.signature(check).parameters["scenario"].default == HEADLINE_SCENARIOS[0]
    assert {s.value for s in JobOutState} == set(JOB_STATE_VALUES)
    assert {e.value for e in WebhookCreateEventsItem} == set(WEBHOOK_EVENT_TYPES)
    # The hand-written CLI and client and the page templates compare no state with a spelled
    # value: they read services.vocab or the generated client's enums.
    sources = [
        *sorted((ROOT / "cli").glob("*.py")),
        *sorted((ROOT / "unmask_client").glob("*.py")),
        *sorted((ROOT / "api" / "templates").glob("*.html")),
    ]
    offenders = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in sources
        for m in STATE_TEST.finditer(p.read_text())
    ]
    assert offenders == []


def test_the_job_page_reads_the_states_from_the_vocabulary() -> None:
    page = (ROOT / "api" / "templates" / "job.html").read_text()
    assert STATE_LITERAL.findall(page) == []
    assert "{{ vocabulary | tojson }}" in page
    handed = vocab.job_page_vocabulary()
    assert handed["states"] == list(JOB_STATE_VALUES)
    assert handed["succeeded"] == RunState.SUCCEEDED
    assert set(handed["open_log_states"]) <= set(JOB_STATE_VALUES)


def test_scenarios_one_order_everywhere() -> None:
    from cli.result_table import scenario_rank as cli_rank
    from services.pipeline.config import Scenario
    from services.pipeline.plan import SCENARIO_PLAN
    from services.pipeline.zoo import HEADLINE_SCENARIOS as zoo_headline

    assert typing.get_args(Scenario) == SCENARIO_ORDER == tuple(SCENARIO_PLAN)
    assert set(HEADLINE_SCENARIOS) < set(SCENARIO_ORDER) and zoo_headline is HEADLINE_SCENARIOS
    shuffled = ["semi-informed", "zeta", "original", "lazy-informed", "ignorant"]
    assert sorted(shuffled, key=cli_rank) == [*SCENARIO_ORDER, "zeta"]
    assert set(vocab.SCENARIO_LABELS) == set(SCENARIO_ORDER)


def test_the_submission_page_tables_follow_the_scenario_order() -> None:
    from types import SimpleNamespace

    from api.pages.submissions import _result_tables
    from services.metrics.catalogue import AGGREGATE_SEED, EER

    rows = [
        SimpleNamespace(
            scenario=s, backend="cosine", attacker="a", seed=AGGREGATE_SEED, metric=EER.key, value=1
        )
        for s in ("semi-informed", "ignorant", "original", "lazy-informed")
    ]
    tables = _result_tables(rows, SCENARIO_ORDER, {})  # type: ignore[arg-type]
    assert [key[0] for key, _ in tables["aggregate"]] == list(SCENARIO_ORDER)


TRUST_SYMBOLS = {m.symbol for m in vocab.TRUST.values()} - {"?"}  # "?" is everywhere in code
# Where a trust mark could be spelled: every page template and the hand-written Python of the
# API, the CLI, the client wrapper and the domain (the generated client is not hand-written).
TRUST_SURFACES = (
    ("api/templates", "*.html"),
    ("api", "**/*.py"),
    ("cli", "**/*.py"),
    ("unmask_client", "*.py"),
    ("services", "**/*.py"),
)


def test_trust_marks_are_one_vocabulary() -> None:
    assert vocab.TRUST_MARKS == {True: "✓", False: "⚠", None: "?"}
    assert {m.state for m in vocab.TRUST.values()} == {"ok", "warn", "unknown"}
    assert len({m.word for m in vocab.TRUST.values()}) == len(vocab.TRUST)
    assert all(vocab.trust_mark(k) is m for k, m in vocab.TRUST.items())


def test_no_page_spells_its_own_trust_mark() -> None:
    vocabulary = ROOT / "services" / "vocab.py"
    offenders = [
        f"{path.relative_to(ROOT)}: {symbol}"
        for folder, pattern in TRUST_SURFACES
        for path in sorted((ROOT / folder).glob(pattern))
        if path != vocabulary and "api_client" not in path.parts
        for symbol in sorted(TRUST_SYMBOLS)
        if symbol in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
    # The templates that show a mark read it from the vocabulary (a global of the templates).
    for name in ("leaderboard.html", "metrics.html", "submission.html"):
        assert "trust_mark(" in (ROOT / "api" / "templates" / name).read_text(), name


def test_the_surfaces_write_the_vocabularys_trust_marks() -> None:
    import datetime as dt

    from api.pages.leaderboard_html import _trust_cell
    from api.pages.rendering import templates
    from services.platform.badges.service import BadgeData, badge_svg
    from services.platform.leaderboard import LeaderboardTableRow
    from services.platform.leaderboard.view import TRUST_COLUMN

    assert templates.env.globals["trust_mark"] is vocab.trust_mark
    for outcome, mark in vocab.TRUST.items():
        row = LeaderboardTableRow(
            submission_id=1,
            submission_name="s",
            kind="builtin",
            visibility="public",
            team_slug="t",
            job_id=2,
            submitted_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
            evaluated_at=None,
            trustworthy=outcome,
            trust_reasons=[{"code": "weak", "message": "too weak"}] if outcome is False else [],
        )
        cell = _trust_cell(row)
        assert f'class="trust {mark.state}"' in cell and mark.symbol in cell, cell
        assert mark.meaning in cell
        assert mark.symbol in TRUST_COLUMN.title
        badge = badge_svg(BadgeData(1, 2, eer_percent=40.0, trustworthy=outcome, colour="green"))
        assert f"{mark.symbol}{mark.badge_words}" in badge


def test_the_cli_and_the_page_name_the_attackers_state_from_the_vocabulary() -> None:
    from api.pages.submissions import verdict_line
    from cli.verdict import verdict_lines
    from services.metrics.catalogue import AGGREGATE_SEED, EER

    rows = [
        {
            "scenario": "semi-informed",
            "backend": "cosine",
            "seed": s,
            "metric": EER.key,
            "value": 30.0,
        }
        for s in (0, AGGREGATE_SEED)
    ]
    tables = {"aggregate": [(("semi-informed", "cosine"), {EER.key: 30.0})], "per_seed": []}
    for outcome, mark in vocab.TRUST.items():
        trust = {"trustworthy": outcome, "reasons": []}
        cli = "\n".join(verdict_lines(rows, trust))
        assert f"attacker:  {mark.verdict}" in cli, cli
        page = verdict_line(tables, trust)
        assert page is not None and page["attacker"].startswith(mark.verdict)
        assert page["state"] == mark.state


def test_the_protocol_asr_states_are_one_list() -> None:
    from api.app import create_app
    from api.schemas.common import ProtocolAsrState
    from services.settings import Settings
    from services.storage import models

    assert vocab.PROTOCOL_ASR_STATE_VALUES == ("queued", "running", "ready", "failed")
    assert typing.get_args(ProtocolAsrState) == vocab.PROTOCOL_ASR_STATE_VALUES
    assert models.ProtocolAsrState is vocab.ProtocolAsrState
    schemas = create_app(Settings(), senders={}).openapi()["components"]["schemas"]
    states = schemas["ProtocolAsrOut"]["properties"]["state"]["enum"]
    assert states == list(vocab.PROTOCOL_ASR_STATE_VALUES)


def test_templates_compare_the_asr_state_with_the_enum() -> None:
    from api.pages.rendering import templates

    check = templates.env.from_string("{{ state == ProtocolAsrState.FAILED }}")
    assert check.render(state="failed") == "True" and check.render(state="ready") == "False"
