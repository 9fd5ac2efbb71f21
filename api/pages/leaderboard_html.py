"""The leaderboard table's HTML: one ``<tr>`` per row, built in Python.

Built in Python rather than by a template loop: for 1,000 rows x 11 cells the loop costs several
times more than the query (docs/performance.md, "Leaderboard page"). What the cells show (columns,
spread, interval, reference values) is decided by the leaderboard view
(``services.platform.leaderboard.view``); this module only writes it as HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

from fastapi import Request
from markupsafe import Markup, escape

from api.pages.challenge_html import evaluator_html
from api.pages.rendering import fmt_datetime, fmt_number
from services.pipeline.zoo import headline
from services.platform.leaderboard import (
    UTILITY_TIERS,
    Column,
    LeaderboardTableRow,
    MetricKey,
    interval_of,
    std_of,
)
from services.storage.models import Visibility
from services.vocab import REFERENCE_SCENARIO, trust_mark

DESCRIPTION_PREVIEW_CHARS = 160


def sort_link(request: Request, column: Column, active: str | None, descending: bool) -> str:
    """The link a column header sorts by (toggles the direction of the active column)."""
    if column.key == active:
        order = "asc" if descending else "desc"
    else:
        order = "desc" if column.best_first_descending else "asc"
    params = {**request.query_params, "sort": column.key, "order": order}
    return f"{request.url.path}?{urlencode(params)}"


def _metric_cell(values: dict[MetricKey, float | None], column: Column, key: MetricKey) -> str:
    value = values.get(key)
    text = fmt_number(value, column.digits)
    d = column.digits
    if value is not None:
        std = std_of(values, column, key)
        if std is not None:
            text += f'<span class="std"> ± {std:.{d}f}</span>'
        interval = interval_of(values, column, key)
        if interval is not None:
            text += f'<span class="ci"> [{interval[0]:.{d}f}, {interval[1]:.{d}f}]</span>'
    missing = " missing" if value is None else ""
    return f'<td class="num{missing}">{text}</td>'


TRUST_SHORT_CHARS = 32
"""The longest short line a leaderboard trust cell shows (the reasons are on the submission
page)."""


def trust_summary(reasons: Sequence[Mapping[str, object]]) -> str:
    """One short line for a failed trust check: the first reason's gist (its message up to the
    first colon, e.g. ``attacker under-trained``) and how many more there are."""
    if not reasons:
        return "not trustworthy"
    first = str(reasons[0].get("message") or reasons[0].get("code") or "not trustworthy")
    gist = first.split(":", 1)[0].strip() or first
    if len(gist) > TRUST_SHORT_CHARS:
        gist = gist[: TRUST_SHORT_CHARS - 1].rstrip() + "…"
    more = len(reasons) - 1
    return f"{gist} (+{more} more)" if more else gist


def _trust_cell(row: LeaderboardTableRow) -> str:
    """A mark and at most one short line; every reason is in the tooltip and, with its value
    and threshold, in the submission page's trust box (the mark links there). The marks and
    their meanings are the vocabulary's (``services.vocab.TRUST``)."""
    trust = trust_mark(row.trustworthy)
    if row.trustworthy is not False:
        mark = (
            f'<span class="trust {trust.state}" title="{escape(trust.meaning)}">'
            f"{escape(trust.symbol)}</span>"
        )
        return f'<td class="trust">{mark}</td>'
    link = f"/submissions/{row.submission_id}?job={row.job_id}#trust"
    messages = "; ".join(str(r.get("message") or r.get("code")) for r in row.trust_reasons)
    title = f"{trust.meaning}: {messages or 'no reason recorded'} (details on the submission page)"
    return (
        f'<td class="trust"><a class="trust {trust.state}" href="{link}" '
        f'title="{escape(title)}"><span class="mark">{escape(trust.symbol)}</span> '
        f"{escape(trust_summary(row.trust_reasons))}</a></td>"
    )


def _zoo_badge(row: LeaderboardTableRow, scenario: str) -> str:
    """An attacker zoo's job: which attacker the row's values are the worst case of, linking to
    the per-attacker table of its result page."""
    worst = row.worst_case
    if not worst:
        return ""
    entry = worst.get(scenario)
    if not isinstance(entry, Mapping):
        entry = worst.get(headline(worst)[0] or "")
    if not isinstance(entry, Mapping):
        return ""
    attackers = entry.get("attackers") or []
    title = f"worst case over {len(attackers)} attackers: {', '.join(map(str, attackers))}"
    return (
        f' <a class="badge zoo" href="/submissions/{row.submission_id}?job={row.job_id}'
        f'#attackers" title="{escape(title)}">worst case: {escape(str(entry.get("attacker")))}</a>'
    )


def _hidden_badge(phase: str) -> str:
    """The marker of a row from a phase whose results are still hidden: only its team and
    administrators see it, so they know the public does not."""
    title = (
        f"results of the hidden phase {phase}: only this team and administrators see this row "
        "until the phase's reveal; the public leaderboard leaves it out"
    )
    return (
        f' <span class="badge hidden-phase" title="{escape(title)}">hidden · {escape(phase)}</span>'
    )


def _name_cell(
    row: LeaderboardTableRow, scenario: str = "", hidden_phase: str | None = None
) -> str:
    badges = ' <span class="badge baseline">baseline</span>' if row.is_baseline else ""
    badges += _zoo_badge(row, scenario)
    if row.visibility == Visibility.PRIVATE.value:
        badges += ' <span class="badge private">private</span>'
    if hidden_phase is not None:
        badges += _hidden_badge(hidden_phase)
    links = []
    for label, url in (("paper", row.paper_url), ("code", row.code_url)):
        if url:
            links.append(
                f'<a class="ext {label}" href="{escape(url)}" rel="noopener noreferrer nofollow">'
                f"{label}</a>"
            )
    extra = f' <span class="links">{" · ".join(links)}</span>' if links else ""
    extra += evaluator_html(row.evaluator)
    description = ""
    if row.description:
        preview = row.description
        if len(preview) > DESCRIPTION_PREVIEW_CHARS:
            preview = preview[: DESCRIPTION_PREVIEW_CHARS - 1] + "…"
        description = (
            f'<div class="description" title="{escape(row.description)}">{escape(preview)}</div>'
        )
    return (
        f'<td class="name"><a href="/submissions/{row.submission_id}?job={row.job_id}">'
        f"{escape(row.submission_name)}</a>{badges}{extra}{description}</td>"
    )


def row_html(
    row: LeaderboardTableRow,
    rank: int,
    columns: Sequence[Column],
    scenario: str,
    tier: int = 0,
    hidden_phase: str | None = None,
) -> Markup:
    """One leaderboard ``<tr>`` (one cell per column of ``columns``); ``tier`` indexes
    ``UTILITY_TIERS`` (rows below the first are marked with the reason they rank lower);
    ``hidden_phase``: the name of the still-hidden phase the row's job ran in (marked).

    Built in Python rather than by a template loop: for 1,000 rows x 11 cells the loop costs
    several times more than the query (docs/performance.md, "Leaderboard page").
    """
    mark = ""
    if tier:
        reason = UTILITY_TIERS[tier]
        mark = f' <span class="tier tier-{tier}" title="ranked lower: {reason}">▽</span>'
    cells = [f'<td class="num rank">{rank}{mark}</td>']
    for column in columns:
        key = column.metric_key(scenario)
        if key is not None:
            cells.append(_metric_cell(row.values, column, key))
        elif column.key == "date":
            cells.append(f'<td class="date">{fmt_datetime(row.submitted_at, False)}</td>')
        elif column.key == "team":
            cells.append(f"<td>{escape(row.team_slug)}</td>")
        elif column.key == "trust":
            cells.append(_trust_cell(row))
        else:
            cells.append(_name_cell(row, scenario, hidden_phase))
    classes = (
        (["private"] if row.visibility == Visibility.PRIVATE.value else [])
        + ([f"tier-{tier}"] if tier else [])
        + (["hidden-phase"] if hidden_phase is not None else [])
    )
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return Markup(
        f'<tr data-submission="{row.submission_id}" data-tier="{tier}"{attr}>{"".join(cells)}</tr>'
    )


def reference_html(
    reference: dict[MetricKey, float | None], columns: Sequence[Column]
) -> Markup | None:
    """The original-speech row (same columns; the reference scenario's values of each metric),
    or None when no visible job scored original speech."""
    if not any(v is not None for v in reference.values()):
        return None
    cells = ['<td class="num rank"></td>']
    for column in columns:
        if column.metric is not None and column.key != "seeds":
            cells.append(_metric_cell(reference, column, (REFERENCE_SCENARIO, column.metric)))
        elif column.key == "name":
            cells.append(
                '<td class="name"><strong>Original speech</strong> <span class="badge">reference'
                '</span><div class="description">No anonymization: what the attacker achieves on '
                "unprotected speech.</div></td>"
            )
        else:
            cells.append("<td></td>")
    return Markup(f'<tr class="reference" id="reference-row">{"".join(cells)}</tr>')
