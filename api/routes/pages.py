"""Server-rendered pages (HTML, Jinja2): protocols, leaderboards, submissions, jobs, login.

Not under ``/v1`` and not in the OpenAPI document. Pages read the same stored rows as the JSON
API (no recomputation); plots and other artifacts are streamed from the blob store after the same
visibility check as ``/v1/jobs/{id}/artifacts``. Anonymous visitors see public submissions only;
a team signs in with an API token (``api/page_session.py``) to see its private ones too.
docs/pages.md describes every page.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import (
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload

from api.auth import Principal
from api.auth_limits import client_address
from api.challenge_html import evaluator_html, phases_html, submission_badge
from api.context import ApiContext, get_context
from api.page_session import (
    clear_session_cookie,
    login,
    login_csrf_ok,
    login_csrf_secret,
    login_csrf_token,
    logout_csrf_ok,
    logout_csrf_token,
    set_login_csrf_cookie,
    set_session_cookie,
    viewer_of,
)
from api.schemas import DbId
from services.errors import InvalidInputError
from services.metrics import catalogue
from services.pipeline.config import parse_config
from services.pipeline.zoo import headline
from services.platform import access, protocols, results
from services.platform.jobs.config import leaderboard_defaults, utility_rule
from services.platform.leaderboard import (
    N_SEEDS_KEY,
    USABLE_KEY,
    UTILITY_TIERS,
    WER_INCREASE_KEY,
    LeaderboardTableRow,
    MetricKey,
    det_curves_of,
    det_key,
    leaderboard_table,
    rank_rows,
    sort_rows,
    utility_tier,
)
from services.platform.phases import list_phases, revealed_jobs_clause
from services.storage.errors import AuthenticationError, NotFoundError, PermissionDeniedError
from services.storage.models import (
    AGGREGATE_SEED,
    TERMINAL_STATES,
    Artifact,
    Job,
    Protocol,
    Result,
    RunState,
    Submission,
    Visibility,
)

logger = logging.getLogger("unmask.pages")

TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
templates = Jinja2Templates(directory=str(TEMPLATE_DIR))

router = APIRouter(include_in_schema=False)

# Blobs up to this size are read whole and verified against their sha256; larger ones stream.
INLINE_ARTIFACT_BYTES = 16 * 1024 * 1024
POLL_INTERVAL_MS = 2000
LOG_CHARS = 4000


# --- formatting ----------------------------------------------------------------------------------


def fmt_number(value: Any, digits: int = 2) -> str:
    """A number with ``digits`` decimals; '—' for missing or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if isinstance(value, int | float):
        return f"{value:.{digits}f}"
    return str(value)


def fmt_datetime(value: dt.datetime | str | None, with_time: bool = True) -> str:
    """``YYYY-MM-DD HH:MM UTC`` (or the date only)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return str(value)
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    return value.strftime("%Y-%m-%d %H:%M UTC" if with_time else "%Y-%m-%d")


def fmt_bytes(size: int | None) -> str:
    """A byte count for people (B, KiB, MiB, GiB)."""
    if size is None:
        return "—"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


templates.env.filters["num"] = fmt_number
templates.env.filters["when"] = fmt_datetime
templates.env.filters["bytes"] = fmt_bytes


# --- helpers -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A leaderboard column: a metric of one scenario, or a submission attribute."""

    key: str
    label: str
    title: str
    higher_is_better: bool
    metric: str | None = None
    scenario: str | None = None  # None with a metric = the protocol's leaderboard scenario
    attribute: str | None = None
    digits: int = 2
    interval: tuple[str, str] | None = None  # metrics of the 95 % interval's bounds
    std: bool = False  # the aggregate row has ``<metric>_std`` (standard deviation over seeds)
    definition: str | None = None  # anchor on the /metrics page

    def metric_key(self, default_scenario: str) -> MetricKey | None:
        if self.metric is None:
            return None
        return (self.scenario or default_scenario, self.metric)


_NAME_COLUMN = Column("name", "Submission", "Submission name.", False, attribute="submission_name")
_TEAM_COLUMN = Column("team", "Team", "The submitting team.", False, attribute="team_slug")
_DATE_COLUMN = Column(
    "date", "Submitted", "Submission date (UTC).", False, attribute="submitted_at"
)
_SEEDS_COLUMN = Column(
    "seeds",
    "Seeds",
    "Training seeds the values are averaged over.",
    True,
    metric=N_SEEDS_KEY,
    digits=0,
    definition="seeds",
)
_TRUST_COLUMN = Column(
    "trust",
    "Trust",
    "Whether the report's trust checks passed (✓), failed (⚠, with the reason) or were not"
    " run (?).",
    True,
    attribute="trustworthy",
    definition="trust",
)


def leaderboard_columns() -> tuple[Column, ...]:
    """The page's columns: submission, team, one per (catalogue leaderboard metric, scenario),
    seeds, trust mark, date. A metric column's key is the metric's key, suffixed ``.<scenario>``
    when it shows a fixed scenario rather than the protocol's."""
    metric_columns = []
    for m in catalogue.leaderboard_metrics():
        for scenario in m.leaderboard_scenarios:
            fixed = scenario is not catalogue.PROTOCOL_SCENARIO
            several = len(m.leaderboard_scenarios) > 1
            label = f"{str(scenario).capitalize()} {m.label}" if fixed and several else m.label
            title = m.description + (f" Scenario: {scenario}." if fixed else "")
            metric_columns.append(
                Column(
                    f"{m.key}.{scenario}" if fixed else m.key,
                    label,
                    title,
                    m.higher_is_better,
                    metric=m.key,
                    scenario=scenario,
                    digits=m.digits,
                    interval=m.interval,
                    std=m.seed_summary,
                    definition=m.key,
                )
            )
    return (
        _NAME_COLUMN,
        _TEAM_COLUMN,
        *metric_columns,
        _SEEDS_COLUMN,
        _TRUST_COLUMN,
        _DATE_COLUMN,
    )


PLOT_GROUPS: tuple[tuple[str, str, str], ...] = (
    ("det-", "DET curves", "False acceptance vs false rejection (probit axes), one per seed."),
    ("scores-", "Score distributions", "Target vs non-target scores."),
    ("ranks-", "Rank histograms (SRD)", "Rank of the true speaker among the references."),
    ("srd-", "SRD per representation", "Rank histograms of embeddings, F0 and phone units."),
    ("training-", "VER_S / VER_T per epoch", "Validation error rates of the recognizers."),
    ("size-", "Dataset-size study", "EER against the number of speakers / utterances."),
    ("prerestore", "Pre-restoration attacks", "EER per transform parameter."),
)


def _viewer(request: Request, context: ApiContext, session: Session) -> Principal | None:
    return viewer_of(request, session, context.settings)


def _render(
    request: Request,
    name: str,
    viewer: Principal | None,
    status_code: int = 200,
    **values: Any,
) -> HTMLResponse:
    logout_token = (
        logout_csrf_token(request, request.app.state.context.settings) if viewer else None
    )
    response = templates.TemplateResponse(
        request,
        name,
        {"viewer": viewer, "logout_token": logout_token, **values},
        status_code=status_code,
    )
    # Pages differ per viewer (login cookie): never shared by caches.
    response.headers["Cache-Control"] = "private, no-store"
    return response


def _not_found(request: Request, viewer: Principal | None, message: str) -> HTMLResponse:
    return _render(request, "error.html", viewer, 404, title="Not found", message=message)


def _safe_next(target: str | None) -> str:
    """Only same-site relative paths (no //host, no scheme) may be redirected to."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def _plot_group(name: str) -> str:
    for prefix, title, _ in PLOT_GROUPS:
        if name.startswith(prefix):
            return title
    return "Other plots"


# --- protocol list -------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def protocols_page(request: Request, context: ApiContext = Depends(get_context)) -> Response:
    """Every protocol (latest version first per name) with its number of ranked submissions."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        count_query = (
            select(Job.protocol_id, func.count(func.distinct(Job.submission_id)))
            .join(Submission, Submission.id == Job.submission_id)
            .where(
                Job.state == RunState.SUCCEEDED.value,
                access.visible_submissions_clause(
                    viewer_team_id=viewer.team_id if viewer else None,
                    include_all_private=bool(viewer and viewer.is_admin),
                ),
            )
            .group_by(Job.protocol_id)
        )
        counts: dict[int | None, int] = {pid: n for pid, n in session.execute(count_query)}
        groups: dict[str, list[Protocol]] = {}
        for protocol in protocols.list_protocols(session):
            groups.setdefault(protocol.name, []).append(protocol)
        items = [
            {
                "name": name,
                "versions": [
                    {
                        "id": p.id,
                        "version": p.version,
                        "description": p.description,
                        "created_at": p.created_at,
                        "content_hash": p.content_hash,
                        "submissions": counts.get(p.id, 0),
                    }
                    for p in sorted(versions, key=lambda p: -p.version)
                ],
            }
            for name, versions in sorted(groups.items())
        ]
        return _render(request, "protocols.html", viewer, protocols=items)


# --- leaderboard ---------------------------------------------------------------------------------

REFERENCE_SCENARIO = "original"
"""The unprotected reference: the attacker scored on original (not anonymized) speech."""

DET_TOP = 5
"""Submissions (by rank) the leaderboard's overlaid DET plot compares."""

DESCRIPTION_PREVIEW_CHARS = 160


def _best_first_desc(column: Column) -> bool:
    """The first-click direction of a column: best privacy first; newest first for dates,
    trustworthy first for the trust mark."""
    return column.higher_is_better if column.metric else column.key in ("date", "trust")


def _sort_link(request: Request, column: Column, active: str | None, descending: bool) -> str:
    if column.key == active:
        order = "asc" if descending else "desc"
    else:
        order = "desc" if _best_first_desc(column) else "asc"
    params = {**request.query_params, "sort": column.key, "order": order}
    return f"{request.url.path}?{urlencode(params)}"


def _std_of(
    row_values: dict[MetricKey, float | None], column: Column, key: MetricKey
) -> float | None:
    """The standard deviation over seeds; None with a single seed (it is 0 by definition)."""
    if not column.std:
        return None
    seeds = row_values.get((key[0], N_SEEDS_KEY))
    if seeds is not None and seeds <= 1:
        return None
    return row_values.get((key[0], f"{column.metric}_std"))


def _interval_of(
    row_values: dict[MetricKey, float | None], column: Column, key: MetricKey
) -> tuple[float, float] | None:
    if not column.interval:
        return None
    low = row_values.get((key[0], column.interval[0]))
    high = row_values.get((key[0], column.interval[1]))
    return None if low is None or high is None else (low, high)


def _metric_cell(values: dict[MetricKey, float | None], column: Column, key: MetricKey) -> str:
    value = values.get(key)
    text = fmt_number(value, column.digits)
    d = column.digits
    if value is not None:
        std = _std_of(values, column, key)
        if std is not None:
            text += f'<span class="std"> ± {std:.{d}f}</span>'
        interval = _interval_of(values, column, key)
        if interval is not None:
            text += f'<span class="ci"> [{interval[0]:.{d}f}, {interval[1]:.{d}f}]</span>'
    missing = " missing" if value is None else ""
    return f'<td class="num{missing}">{text}</td>'


def _trust_cell(row: LeaderboardTableRow) -> str:
    if row.trustworthy is None:
        mark = '<span class="trust unknown" title="the report has no trust check">?</span>'
        return f'<td class="trust">{mark}</td>'
    if row.trustworthy:
        mark = '<span class="trust ok" title="every trust check passed">✓</span>'
        return f'<td class="trust">{mark}</td>'
    messages = "; ".join(str(r.get("message") or r.get("code")) for r in row.trust_reasons)
    return (
        f'<td class="trust"><span class="trust warn" title="{escape(messages)}">⚠ '
        f"{escape(messages or 'not trustworthy')}</span></td>"
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


def _name_cell(row: LeaderboardTableRow, scenario: str = "") -> str:
    badges = ' <span class="badge baseline">baseline</span>' if row.is_baseline else ""
    badges += _zoo_badge(row, scenario)
    if row.visibility == Visibility.PRIVATE.value:
        badges += ' <span class="badge private">private</span>'
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


def _row_html(
    row: LeaderboardTableRow,
    rank: int,
    columns: Sequence[Column],
    scenario: str,
    tier: int = 0,
) -> Markup:
    """One leaderboard ``<tr>`` (one cell per column of ``columns``); ``tier`` indexes
    ``UTILITY_TIERS`` (rows below the first are marked with the reason they rank lower).

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
            cells.append(_name_cell(row, scenario))
    classes = (["private"] if row.visibility == Visibility.PRIVATE.value else []) + (
        [f"tier-{tier}"] if tier else []
    )
    attr = f' class="{" ".join(classes)}"' if classes else ""
    return Markup(
        f'<tr data-submission="{row.submission_id}" data-tier="{tier}"{attr}>{"".join(cells)}</tr>'
    )


def _reference_html(
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


@dataclass
class LeaderboardView:
    """Everything the leaderboard page, its CSV and its DET plot show, for one viewer."""

    protocol: Protocol
    metric: str
    scenario: str
    backend: str
    backends: list[str]
    higher: bool
    columns: tuple[Column, ...]
    display: list[LeaderboardTableRow]
    ranks: dict[int, int]
    ranked: list[LeaderboardTableRow]
    reference: dict[MetricKey, float | None]
    active: str | None
    descending: bool
    primary: Column | None
    utility_measured: bool = False
    wer_bound: float | None = None
    tiers: dict[int, int] = field(default_factory=dict)
    """Submission id -> index into ``UTILITY_TIERS``."""


def _protocol_backends(protocol: Protocol, default: str) -> list[str]:
    """The back-ends the protocol's evaluations score with (its config), default first."""
    try:
        config = parse_config(
            dict((protocol.body or {}).get("config", {})), source=f"protocol {protocol.id}"
        )
        backends = [str(b) for b in config.backends]
    except InvalidInputError:
        backends = []
    return list(dict.fromkeys([default, *backends]))


def _leaderboard_view(
    session: Session,
    viewer: Principal | None,
    protocol: Protocol,
    *,
    backend: str | None,
    sort: str | None,
    order: str | None,
) -> LeaderboardView:
    try:
        metric, scenario, default_backend, higher = leaderboard_defaults(protocol)
    except InvalidInputError:
        metric = catalogue.HEADLINE.key
        scenario, default_backend, higher = (
            "semi-informed",
            "cosine",
            catalogue.HEADLINE.higher_is_better,
        )
    backends = _protocol_backends(protocol, default_backend)
    if backend is None:
        backend = default_backend
    elif backend not in backends:
        raise InvalidInputError(
            f"backend {backend!r} is not scored on this protocol; known: {', '.join(backends)}"
        )
    try:
        utility_measured, wer_bound = utility_rule(protocol)
    except InvalidInputError:
        utility_measured, wer_bound = False, None
    all_columns = leaderboard_columns()
    keys: list[MetricKey] = [(scenario, metric), USABLE_KEY, WER_INCREASE_KEY]
    for column in all_columns:
        key = column.metric_key(scenario)
        if key is None:
            continue
        keys.append(key)
        keys.append((REFERENCE_SCENARIO, key[1]))
        for scen in (key[0], REFERENCE_SCENARIO):
            if column.std:
                keys += [(scen, f"{key[1]}_std"), (scen, N_SEEDS_KEY)]
            if column.interval:
                keys += [(scen, bound) for bound in column.interval]
    rows = leaderboard_table(
        session,
        protocol.id,
        backend=backend,
        metrics=list(dict.fromkeys(keys)),
        viewer_team_id=viewer.team_id if viewer else None,
        include_all_private=bool(viewer and viewer.is_admin),
    )
    # The rank is the protocol's ranking (utility tier, then primary metric, then submission
    # time), whatever the display order.
    ranked = rank_rows(
        rows,
        key=(scenario, metric),
        descending=higher,
        utility_measured=utility_measured,
        wer_bound=wer_bound,
    )
    ranks = {row.submission_id: position for position, row in enumerate(ranked, start=1)}
    tiers = {row.submission_id: utility_tier(row, utility_measured, wer_bound) for row in rows}
    by_key = {column.key: column for column in all_columns}
    current = by_key.get(sort or "")
    primary = by_key.get(metric)  # the column of the ranking metric, when it has one
    if current is None:  # the protocol's ranking (optionally reversed)
        descending = higher if order is None else order == "desc"
        display = ranked if descending == higher else ranked[::-1]
        active = primary.key if primary is not None else None
    else:
        descending = order == "desc" if order is not None else _best_first_desc(current)
        display = sort_rows(
            rows,
            key=current.metric_key(scenario),
            attribute=current.attribute,
            descending=descending,
        )
        active = current.key
    # A fixed-scenario column (e.g. lazy-informed) that no row has is left out: the protocol
    # does not run that scenario.
    shown = tuple(
        c
        for c in all_columns
        if c.scenario is None
        or c.metric is None
        or any(r.values.get((c.scenario, c.metric)) is not None for r in rows)
    )
    # The reference: the latest evaluated job (submission order) that scored original speech.
    reference: dict[MetricKey, float | None] = {}
    for row in reversed(rows):
        if any(v is not None for k, v in row.values.items() if k[0] == REFERENCE_SCENARIO):
            reference = {k: v for k, v in row.values.items() if k[0] == REFERENCE_SCENARIO}
            break
    return LeaderboardView(
        protocol=protocol,
        metric=metric,
        scenario=scenario,
        backend=backend,
        backends=backends,
        higher=higher,
        columns=shown,
        display=display,
        ranks=ranks,
        ranked=ranked,
        reference=reference,
        active=active,
        descending=descending,
        primary=primary,
        utility_measured=utility_measured,
        wer_bound=wer_bound,
        tiers=tiers,
    )


def _lookup_view(
    request: Request,
    context: ApiContext,
    protocol_id: int,
    backend: str | None,
    sort: str | None,
    order: str | None,
) -> tuple[Principal | None, LeaderboardView | HTMLResponse]:
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        try:
            protocol = protocols.get_protocol_by_id(session, protocol_id)
        except NotFoundError:
            return viewer, _not_found(request, viewer, f"protocol {protocol_id} not found")
        try:
            view = _leaderboard_view(
                session, viewer, protocol, backend=backend, sort=sort, order=order
            )
        except InvalidInputError as exc:
            page = _render(request, "error.html", viewer, 422, title="Bad request",
                           message=str(exc))  # fmt: skip
            return viewer, page
        session.expunge(protocol)
        return viewer, view


@router.get("/protocols/{protocol_id}", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    protocol_id: DbId,
    backend: str | None = Query(None, max_length=32),
    sort: str | None = Query(None, max_length=80),
    order: str | None = Query(None, pattern="^(asc|desc)$"),
    context: ApiContext = Depends(get_context),
) -> Response:
    """One row per visible submission (its latest succeeded job), sortable by every column."""
    viewer, view = _lookup_view(request, context, protocol_id, backend, sort, order)
    if not isinstance(view, LeaderboardView):
        return view
    with context.database.session_scope() as session:
        top = [row.job_id for row in view.ranked[:DET_TOP]]
        n_curves = len(det_curves_of(session, top, det_key(view.scenario, view.backend)))
        phases = phases_html(list_phases(session, protocol_id), dt.datetime.now(dt.UTC))
    columns = [
        {
            "column": column,
            "key": column.metric_key(view.scenario),
            "link": _sort_link(request, column, view.active, view.descending),
            "active": column.key == view.active,
            "label": f"{column.label} ({view.scenario})"
            if column is view.primary
            else column.label,
            "definition": column.definition,
        }
        for column in view.columns
    ]
    query = {k: v for k, v in request.query_params.items() if k in ("backend", "sort", "order")}
    backend_links = [
        {
            "name": name,
            "active": name == view.backend,
            "link": f"{request.url.path}?{urlencode({**query, 'backend': name})}",
        }
        for name in view.backends
    ]
    suffix = f"?{urlencode(query)}" if query else ""
    return _render(
        request,
        "leaderboard.html",
        viewer,
        row_html=[
            _row_html(
                row,
                view.ranks[row.submission_id],
                view.columns,
                view.scenario,
                view.tiers.get(row.submission_id, 0),
            )
            for row in view.display
        ],
        utility_measured=view.utility_measured,
        wer_bound=view.wer_bound,
        utility_tiers=UTILITY_TIERS,
        utility_plot_link=(
            f"/protocols/{view.protocol.id}/utility.png?{urlencode({'backend': view.backend})}"
            if view.utility_measured
            and any(r.values.get(WER_INCREASE_KEY) is not None for r in view.display)
            else None
        ),
        reference_html=_reference_html(view.reference, view.columns),
        phases_html=phases,
        protocol=view.protocol,
        scenario=view.scenario,
        backend=view.backend,
        backend_links=backend_links,
        primary_metric=catalogue.metric(view.metric).label
        if catalogue.is_catalogued(view.metric)
        else view.metric,
        primary_key=view.metric,
        higher_is_better=view.higher,
        columns=columns,
        descending=view.descending,
        rows=view.display,
        ranks=view.ranks,
        csv_link=f"/protocols/{view.protocol.id}/leaderboard.csv{suffix}",
        det_link=(
            f"/protocols/{view.protocol.id}/det.png?{urlencode({'backend': view.backend})}"
            if n_curves
            else None
        ),
        det_top=n_curves,
    )


def _csv_text(value: str) -> str:
    """Free text in a CSV cell: a leading ``= + - @`` would be a formula in a spreadsheet."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def leaderboard_csv(view: LeaderboardView) -> str:
    """The rows the page shows (same back-end, same order) as CSV: every column, with each
    metric's standard deviation over seeds and 95 % interval bounds where it has them."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["rank", "submission_id", "submission", "team", "baseline", "backend"]
    metric_columns = [c for c in view.columns if c.metric is not None]
    for column in metric_columns:
        header.append(column.label)
        if column.std:
            header.append(f"{column.label} std")
        if column.interval:
            header += [f"{column.label} ci95 low", f"{column.label} ci95 high"]
    header += ["trustworthy", "trust reasons", "description", "paper_url", "code_url", "submitted"]
    writer.writerow(header)
    for row in view.display:
        cells: list[str] = [
            str(view.ranks[row.submission_id]),
            str(row.submission_id),
            _csv_text(row.submission_name),
            row.team_slug,
            "yes" if row.is_baseline else "no",
            view.backend,
        ]
        for column in metric_columns:
            key = column.metric_key(view.scenario)
            assert key is not None
            value = row.values.get(key)
            cells.append("" if value is None else repr(float(value)))
            if column.std:
                std = _std_of(row.values, column, key)
                cells.append("" if std is None or value is None else repr(float(std)))
            if column.interval:
                interval = _interval_of(row.values, column, key)
                cells += ["", ""] if interval is None else [repr(interval[0]), repr(interval[1])]
        trust = {None: "unknown", True: "yes", False: "no"}[row.trustworthy]
        cells += [
            trust,
            "; ".join(str(r.get("code")) for r in row.trust_reasons),
            _csv_text(row.description or ""),
            row.paper_url or "",
            row.code_url or "",
            row.submitted_at.isoformat(),
        ]
        writer.writerow(cells)
    return out.getvalue()


@router.get("/protocols/{protocol_id}/leaderboard.csv")
def leaderboard_csv_file(
    request: Request,
    protocol_id: DbId,
    backend: str | None = Query(None, max_length=32),
    sort: str | None = Query(None, max_length=80),
    order: str | None = Query(None, pattern="^(asc|desc)$"),
    context: ApiContext = Depends(get_context),
) -> Response:
    """The leaderboard page's rows as CSV (same query parameters, same visibility)."""
    _, view = _lookup_view(request, context, protocol_id, backend, sort, order)
    if not isinstance(view, LeaderboardView):
        return view
    name = f"leaderboard-{view.protocol.name}-v{view.protocol.version}-{view.backend}.csv"
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in name)
    return Response(
        leaderboard_csv(view),
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{safe}"',
            "Cache-Control": "private, no-store",
        },
    )


@router.get("/protocols/{protocol_id}/det.{fmt}")
def leaderboard_det_plot(
    request: Request,
    protocol_id: DbId,
    fmt: str,
    backend: str | None = Query(None, max_length=32),
    context: ApiContext = Depends(get_context),
) -> Response:
    """One DET plot of the top-ranked submissions (protocol scenario, ``backend``), each curve's
    EER marked; drawn from the DET points kept in the job summaries. PNG or SVG."""
    if fmt not in ("png", "svg"):
        return Response("format must be png or svg", status_code=404, media_type="text/plain")
    viewer, view = _lookup_view(request, context, protocol_id, backend, None, None)
    if not isinstance(view, LeaderboardView):
        return view
    top = view.ranked[:DET_TOP]
    with context.database.session_scope() as session:
        curves = det_curves_of(
            session, [r.job_id for r in top], det_key(view.scenario, view.backend)
        )
    drawn = {}
    for row in top:
        curve = curves.get(row.job_id)
        if curve is None:
            continue
        eer = curve.get("eer")
        label = f"#{view.ranks[row.submission_id]} {row.submission_name}"
        if isinstance(eer, int | float):
            label += f" (EER {eer:.1f} %, seed {curve.get('seed')})"
        drawn[label[:80]] = (
            curve["pfa"],
            curve["pmiss"],
            eer if isinstance(eer, int | float) else None,
        )
    if not drawn:
        return _not_found(request, viewer, "no DET points stored for these submissions")
    from services.plotting import render_det_overlay

    title = f"DET: top {len(drawn)}, {view.scenario}, {view.backend}"
    body = render_det_overlay(drawn, title, fmt=fmt)
    return Response(
        body,
        media_type="image/png" if fmt == "png" else "image/svg+xml",
        headers={"Cache-Control": "private, no-store"},
    )


@router.get("/protocols/{protocol_id}/utility.{fmt}")
def leaderboard_utility_plot(
    request: Request,
    protocol_id: DbId,
    fmt: str,
    backend: str | None = Query(None, max_length=32),
    context: ApiContext = Depends(get_context),
) -> Response:
    """Privacy (the protocol's ranking metric and scenario, ``backend``) against the WER increase
    of every visible submission with both, the Pareto front marked. PNG or SVG."""
    if fmt not in ("png", "svg"):
        return Response("format must be png or svg", status_code=404, media_type="text/plain")
    viewer, view = _lookup_view(request, context, protocol_id, backend, None, None)
    if not isinstance(view, LeaderboardView):
        return view
    from services.plotting import render_privacy_utility
    from services.utility.pareto import pareto_front

    rows = [
        r
        for r in view.ranked
        if r.values.get(WER_INCREASE_KEY) is not None
        and r.values.get((view.scenario, view.metric)) is not None
    ]
    if not rows:
        return _not_found(request, viewer, "no submission has both privacy and utility values")
    cost = [float(r.values[WER_INCREASE_KEY] or 0.0) for r in rows]
    sign = 1.0 if view.higher else -1.0  # the front wants higher-is-better privacy
    privacy = [float(r.values[(view.scenario, view.metric)] or 0.0) for r in rows]
    usable = [view.tiers.get(r.submission_id, 0) != 3 for r in rows]
    # Unusable speech is never on the front: its "privacy" is the absence of speech.
    front = pareto_front(
        [sign * p if u else math.nan for p, u in zip(privacy, usable, strict=True)], cost
    )
    label = (
        catalogue.metric(view.metric).label if catalogue.is_catalogued(view.metric) else view.metric
    )
    points = [
        (f"#{view.ranks[r.submission_id]} {r.submission_name}", c, p, bool(f), u)
        for r, c, p, f, u in zip(rows, cost, privacy, front, usable, strict=True)
    ]
    body = render_privacy_utility(
        points,
        f"Privacy vs utility: {view.protocol.name} v{view.protocol.version} ({view.backend})",
        privacy_label=f"{label} ({view.scenario})",
        utility_bound=view.wer_bound,
        fmt=fmt,
    )
    return Response(
        body,
        media_type="image/png" if fmt == "png" else "image/svg+xml",
        headers={"Cache-Control": "private, no-store"},
    )


# --- metric definitions --------------------------------------------------------------------------


@router.get("/metrics", response_class=HTMLResponse)
def metrics_page(request: Request, context: ApiContext = Depends(get_context)) -> Response:
    """Every catalogued metric (anchors by key) and the leaderboard's other marks."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
    return _render(
        request,
        "metrics.html",
        viewer,
        metrics=catalogue.all_metrics(),
        reference_scenario=REFERENCE_SCENARIO,
        det_top=DET_TOP,
    )


# --- submission ----------------------------------------------------------------------------------


def _load_results_document(context: ApiContext, artifacts: list[Artifact]) -> dict[str, Any]:
    """The report's results.json (provenance, training, analyses), or {} when unreadable."""
    for artifact in artifacts:
        if artifact.key.endswith("/results.json"):
            try:
                document: dict[str, Any] = json.loads(context.blob_store.get_bytes(artifact.key))
                return document
            except Exception as exc:  # a page must render without it
                logger.warning("cannot read %s: %s", artifact.key, exc)
    return {}


def _trust_of(document: dict[str, Any]) -> dict[str, Any]:
    """The report's trust block read defensively: trustworthy True / False / None (unknown)."""
    trustworthy, reasons = results.read_trust(document)
    return {"trustworthy": trustworthy, "reasons": reasons}


def _worst_case_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """An attacker zoo's worst case per scenario (reference order), read defensively; [] for a
    report of one attacker."""
    worst = document.get("worst_case")
    if not isinstance(worst, Mapping):
        return []
    order = ("original", "ignorant", "lazy-informed", "semi-informed")
    out = []
    for scenario in sorted(worst, key=lambda s: (order.index(s) if s in order else 9, s)):
        entry = worst[scenario]
        if isinstance(entry, Mapping):
            out.append(
                {
                    "scenario": scenario,
                    "attacker": str(entry.get("attacker")),
                    "backend": str(entry.get("backend")),
                    "eer": entry.get(catalogue.EER.key),
                    "attackers": [str(a) for a in entry.get("attackers") or []],
                }
            )
    return out


def _result_tables(result_rows: list[Result]) -> dict[str, Any]:
    """Aggregate and per-seed tables; with an attacker zoo the back-end column reads
    ``<attacker> / <backend>`` (one row per attacker)."""
    aggregate: dict[tuple[str, str], dict[str, float | None]] = {}
    per_seed: dict[tuple[str, str, int], dict[str, float | None]] = {}
    utility = catalogue.UTILITY_SCENARIO
    several = len({row.attacker for row in result_rows if row.scenario != utility}) > 1
    for row in result_rows:
        if row.scenario == utility:
            continue  # the utility section shows these (one value per job, no back-end)
        backend = f"{row.attacker} / {row.backend}" if several else row.backend
        if row.seed == AGGREGATE_SEED:
            aggregate.setdefault((row.scenario, backend), {})[row.metric] = row.value
        else:
            per_seed.setdefault((row.scenario, backend, row.seed), {})[row.metric] = row.value
    metric_names = sorted({m for values in per_seed.values() for m in values})
    return {
        "aggregate": sorted(aggregate.items()),
        "per_seed": sorted(per_seed.items()),
        "metric_names": metric_names,
    }


def _plots(job_id: int, artifacts: list[Artifact]) -> list[dict[str, Any]]:
    by_stem: dict[str, dict[str, Artifact]] = {}
    for artifact in artifacts:
        path = PurePosixPath(artifact.key)
        if path.suffix in (".png", ".svg"):
            by_stem.setdefault(path.stem, {})[path.suffix] = artifact
    groups: dict[str, list[dict[str, Any]]] = {}
    for stem in sorted(by_stem):
        files = by_stem[stem]
        png = files.get(".png")
        svg = files.get(".svg")
        image = png or svg
        assert image is not None
        groups.setdefault(_plot_group(stem), []).append(
            {
                "name": stem,
                "src": f"/jobs/{job_id}/artifacts/{image.id}",
                "svg": f"/jobs/{job_id}/artifacts/{svg.id}" if svg else None,
            }
        )
    order = [title for _, title, _ in PLOT_GROUPS] + ["Other plots"]
    notes = {title: note for _, title, note in PLOT_GROUPS}
    return [
        {"title": title, "note": notes.get(title, ""), "plots": groups[title]}
        for title in order
        if title in groups
    ]


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(
    request: Request,
    submission_id: DbId,
    job: DbId | None = Query(None, description="Show this job instead of the latest succeeded."),
    context: ApiContext = Depends(get_context),
) -> Response:
    """Every result and plot of a submission's evaluation, its provenance and artifacts."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        try:
            submission = access.visible_submission(session, viewer, submission_id)
        except NotFoundError as exc:
            return _not_found(request, viewer, str(exc))
        jobs = list(
            session.scalars(
                select(Job)
                .options(joinedload(Job.protocol))
                .where(Job.submission_id == submission.id)
                .where(
                    revealed_jobs_clause(
                        viewer_team_id=viewer.team_id if viewer else None,
                        include_all=bool(viewer and viewer.is_admin),
                    )
                )
                .order_by(Job.id.desc())
                .limit(50)
            )
        )
        selected = None
        if job is not None:
            selected = next((j for j in jobs if j.id == job), None)
        if selected is None:
            selected = next((j for j in jobs if j.state == RunState.SUCCEEDED.value), None)
        if selected is None and jobs:
            selected = jobs[0]
        artifacts = results.list_artifacts(session, selected.id) if selected else []
        rows = results.list_results(session, selected.id) if selected else []
        document = _load_results_document(context, artifacts) if artifacts else {}
        tables = _result_tables(rows)
        return _render(
            request,
            "submission.html",
            viewer,
            submission=submission,
            jobs=jobs,
            job=selected,
            tables=tables,
            plot_groups=_plots(selected.id, artifacts) if selected else [],
            artifacts=artifacts,
            document=document,
            provenance=document.get("provenance") or {},
            training=document.get("training") or {},
            trust=_trust_of(document),
            worst_case=_worst_case_of(document),
            stages=document.get("stages") or [],
            config_json=json.dumps(selected.config, indent=2, sort_keys=True) if selected else "",
            badge=submission_badge(request, submission, selected),
        )


# --- job -----------------------------------------------------------------------------------------


def _visible_job(session: Session, viewer: Principal | None, job_id: int) -> Job | None:
    """The job if ``viewer`` (None: anonymous) may see it, else None (the page answers 404)."""
    try:
        return access.visible_job(session, viewer, job_id)
    except NotFoundError:
        return None


def job_status(job: Job, log_chars: int = LOG_CHARS) -> dict[str, Any]:
    """The JSON the job page polls: state, progress, per-stage progress and log tails."""
    stages = [
        {
            "name": s.name,
            "state": s.state,
            "progress": round(float(s.progress or 0.0), 4),
            "attempts": s.attempts,
            "worker_host": s.worker_host,
            "started_at": s.started_at.isoformat() if s.started_at else None,
            "finished_at": s.finished_at.isoformat() if s.finished_at else None,
            "heartbeat_at": s.heartbeat_at.isoformat() if s.heartbeat_at else None,
            "error": s.error,
            "log_tail": (s.log_tail or "")[-log_chars:] if log_chars else "",
        }
        for s in job.stages
    ]
    fractions = [float(s.progress or 0.0) for s in job.stages]
    progress = sum(fractions) / len(fractions) if fractions else 0.0
    return {
        "id": job.id,
        "state": job.state,
        "finished": RunState(job.state) in TERMINAL_STATES,
        "progress": round(progress, 4),
        "error_message": job.error_message,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "stages": stages,
    }


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(
    request: Request, job_id: DbId, context: ApiContext = Depends(get_context)
) -> Response:
    """Live stage progress and log tail (the page polls ``/jobs/{id}/status.json``)."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        job = _visible_job(session, viewer, job_id)
        if job is None:
            return _not_found(request, viewer, f"job {job_id} not found")
        return _render(
            request,
            "job.html",
            viewer,
            job=job,
            status=job_status(job),
            poll_interval_ms=POLL_INTERVAL_MS,
        )


@router.get("/jobs/{job_id}/status.json")
def job_status_json(
    request: Request, job_id: DbId, context: ApiContext = Depends(get_context)
) -> Response:
    """State and stages of a visible job (same visibility as the page)."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        job = _visible_job(session, viewer, job_id)
        if job is None:
            return JSONResponse({"detail": f"job {job_id} not found"}, status_code=404)
        return JSONResponse(job_status(job), headers={"Cache-Control": "no-store"})


def _stream(context: ApiContext, key: str) -> Iterator[bytes]:
    with context.blob_store.open_read(key) as source:
        while chunk := source.read(1024 * 1024):
            yield chunk


@router.get("/jobs/{job_id}/artifacts/{artifact_id}")
def artifact_file(
    request: Request,
    job_id: DbId,
    artifact_id: DbId,
    download: bool = Query(False),
    context: ApiContext = Depends(get_context),
) -> Response:
    """An artifact's bytes (plots inline, anything with ``?download=1`` as an attachment)."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
        job = _visible_job(session, viewer, job_id)
        try:
            artifact = results.get_artifact(session, job.id, artifact_id) if job else None
        except NotFoundError:
            artifact = None
        if artifact is None:
            return JSONResponse({"detail": "artifact not found"}, status_code=404)
        key, size, media_type = artifact.key, artifact.size_bytes, artifact.media_type
    name = PurePosixPath(key).name
    headers = {"Cache-Control": "private, max-age=300"}
    if download:
        headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(name)}"
    if size <= INLINE_ARTIFACT_BYTES:
        data = context.blob_store.get_bytes(key)  # checked against the recorded sha256
        return Response(data, media_type=media_type, headers=headers)
    return StreamingResponse(_stream(context, key), media_type=media_type, headers=headers)


# --- login ---------------------------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
def login_form(
    request: Request, next: str | None = Query(None), context: ApiContext = Depends(get_context)
) -> Response:
    """The sign-in form: paste an API token with the ``read`` scope."""
    with context.database.session_scope() as session:
        viewer = _viewer(request, context, session)
    return _login_page(request, context, viewer, 200, next, None)


def _login_page(
    request: Request,
    context: ApiContext,
    viewer: Principal | None,
    status_code: int,
    next: str | None,
    error: str | None,
) -> HTMLResponse:
    """The form with a CSRF token bound to the browser's login cookie (api/page_session.py)."""
    secret = login_csrf_secret(request)
    response = _render(
        request,
        "login.html",
        viewer,
        status_code,
        next=_safe_next(next),
        error=error,
        csrf_token=login_csrf_token(context.settings, secret),
    )
    set_login_csrf_cookie(response, request, secret)
    return response


@router.post("/login", response_class=HTMLResponse)
def login_submit(
    request: Request,
    token: str = Form(..., max_length=200),
    next: str = Form("/"),
    csrf_token: str = Form("", max_length=200),
    context: ApiContext = Depends(get_context),
) -> Response:
    """Verify the token, set the session cookie, go back to ``next``.

    403 without the form's CSRF token; 429 after too many failed sign-ins from this address.
    """
    if not login_csrf_ok(request, context.settings, csrf_token):
        error = "the sign-in form expired or came from another site; sign in again"
        return _login_page(request, context, None, 403, next, error)
    client = client_address(request)
    retry_after = context.auth_limiter.retry_after_s(client)
    if retry_after is not None:
        error = f"too many failed sign-ins from this address; retry in {retry_after} s"
        page = _login_page(request, context, None, 429, next, error)
        page.headers["Retry-After"] = str(retry_after)
        return page
    try:
        with context.database.session_scope() as session:
            principal = login(session, context.settings, token)
    except (AuthenticationError, PermissionDeniedError) as exc:
        if isinstance(exc, AuthenticationError):
            context.auth_limiter.record_failure(client)
        return _login_page(request, context, None, 401, next, str(exc))
    response = RedirectResponse(_safe_next(next), status_code=303)
    set_session_cookie(response, request, context.settings, principal.token_id)
    return response


@router.post("/logout")
def logout(
    request: Request,
    csrf_token: str = Form("", max_length=200),
    context: ApiContext = Depends(get_context),
) -> Response:
    """Forget the session cookie; 403 (nothing cleared) without the form's CSRF token."""
    if not logout_csrf_ok(request, context.settings, csrf_token):
        return _render(
            request,
            "error.html",
            None,
            403,
            title="Not signed out",
            message="the sign-out form expired or came from another site; use Sign out again",
        )
    response = RedirectResponse("/", status_code=303)
    clear_session_cookie(response)
    return response
