"""HTML fragments of the challenge features on the leaderboard page: the protocol's phases and
each row's evaluator (marked when an older scorer produced it). Built in Python like the rows
(``api/pages/leaderboard_html.py``), escaped here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from markupsafe import Markup

from services.pipeline.stage_versions import current_scorer, evaluator_label, is_outdated
from services.platform import phases as phase_rules
from services.platform.badges import badge_markdown
from services.storage.models import Job, Phase, PhaseVisibility, RunState, Submission, Visibility


def _when(value: dt.datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "no end"


def phase_visibility_text(phase: Phase, now: dt.datetime) -> str:
    """Who sees a phase's results at ``now``: ``public``, ``hidden until <reveal>`` (or ``hidden,
    no reveal date``) or, once the reveal has passed, ``revealed at <reveal>``."""
    if phase.visibility != PhaseVisibility.HIDDEN.value:
        return "public"
    if phase.reveal_at is None:
        return "hidden, no reveal date"
    if phase_rules.is_hidden(phase, now):
        return f"hidden until {_when(phase.reveal_at)}"
    return f"revealed at {_when(phase.reveal_at)}"


def hidden_phase_names(phases: Sequence[Phase], now: dt.datetime) -> dict[int, str]:
    """``{phase id: name}`` of the phases whose results are hidden at ``now`` (their rows are
    shown only to their team and administrators, marked as such)."""
    return {phase.id: phase.name for phase in phases if phase_rules.is_hidden(phase, now)}


def phases_html(phases: Sequence[Phase], now: dt.datetime) -> Markup | None:
    """The protocol's phases (window, limit, visibility, whether open now); None when it has
    none."""
    if not phases:
        return None
    rows = []
    for phase in phases:
        if phase.visibility == PhaseVisibility.HIDDEN.value:
            visibility = phase_visibility_text(phase, now)
        else:
            visibility = "public"
        status = (
            "open"
            if phase_rules.is_open(phase, now)
            else ("upcoming" if now < phase.starts_at else "closed")
        )
        limit = str(phase.submission_limit) if phase.submission_limit else "none"
        rows.append(
            f'<tr data-phase="{escape(phase.name)}"><td>{escape(phase.name)}</td>'
            f"<td>{_when(phase.starts_at)}</td><td>{_when(phase.ends_at)}</td>"
            f'<td class="num">{limit}</td><td>{escape(visibility)}</td>'
            f'<td class="phase-{status}">{status}</td></tr>'
        )
    return Markup(
        '<table class="phases" id="phases"><caption>Phases</caption><thead><tr><th>phase</th>'
        "<th>starts</th><th>ends</th><th>jobs per team</th><th>results</th><th>now</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def evaluator_html(evaluator: Mapping[str, Any] | None, current: str | None = None) -> str:
    """A row's evaluator (Unmask version and scorer id; the git commit and stage versions in the
    tooltip), marked ``older scorer`` when it is not the current one."""
    current = current or current_scorer()
    detail = "evaluated before evaluators were recorded"
    if evaluator:
        versions = ", ".join(
            f"{k} v{v}" for k, v in sorted((evaluator.get("stage_versions") or {}).items())
        )
        detail = f"git {evaluator.get('git_commit') or 'unknown'}; stages: {versions}"
    text = escape(evaluator_label(evaluator))
    label = f' <span class="evaluator" title="{escape(detail)}">{text}</span>'
    if is_outdated(evaluator, current):
        label += (
            ' <span class="badge outdated" title="scored by an older scorer than the current '
            f'one ({escape(current)}); a re-run is due">older scorer</span>'
        )
    return label


def submission_badge(
    public_url: str, submission: Submission, job: Job | None
) -> dict[str, str] | None:
    """The README badge of a public submission whose shown job succeeded under a protocol: its
    image URL and Markdown snippet (None otherwise: private submissions have no badge).

    The snippet's links start with ``public_url`` (``UNMASK_PUBLIC_URL``; empty: paths alone),
    never with the request's ``Host``."""
    if (
        job is None
        or job.protocol_id is None
        or job.state != RunState.SUCCEEDED.value
        or submission.visibility != Visibility.PUBLIC.value
    ):
        return None
    base = public_url.rstrip("/")
    return {
        "image": f"/protocols/{job.protocol_id}/submissions/{submission.id}/badge.svg",
        "markdown": badge_markdown(
            base_url=base, protocol_id=job.protocol_id, submission_id=submission.id
        ),
    }
