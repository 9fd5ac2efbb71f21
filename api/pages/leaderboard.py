"""The leaderboard page (``/protocols/{id}``) and its CSV export.

Both render the one leaderboard view of ``services.platform.leaderboard.view`` (defaults, columns,
reference row, ranking), as do the JSON route and the plots (``api/pages/leaderboard_plots.py``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from api.context import ApiContext
from api.deps import ContextDep
from api.pages.challenge_html import hidden_phase_names, phases_html
from api.pages.leaderboard_html import reference_html, row_html, sort_link
from api.pages.rendering import bad_request, not_found, page_viewer, render
from api.schemas import DbId
from services.errors import InvalidInputError
from services.pipeline.stage_versions import current_scorer, is_outdated
from services.platform import protocols
from services.platform.identity import Principal
from services.platform.leaderboard import (
    UTILITY_TIERS,
    WER_INCREASE_KEY,
    LeaderboardView,
    build_view,
    det_curves_of,
    det_key,
    interval_of,
    std_of,
)
from services.platform.phases import list_phases
from services.storage.errors import NotFoundError
from services.vocab import trust_mark

router = APIRouter(include_in_schema=False)


def lookup_view(
    request: Request,
    context: ApiContext,
    protocol_id: int,
    backend: str | None,
    sort: str | None,
    order: str | None,
) -> tuple[Principal | None, LeaderboardView | HTMLResponse]:
    """(viewer, the protocol's leaderboard view), or the 404 / 422 page instead of the view."""
    with context.database.session_scope() as session:
        viewer = page_viewer(request, context, session)
        try:
            protocol = protocols.get_protocol_by_id(session, protocol_id)
        except NotFoundError:
            return viewer, not_found(request, viewer, f"protocol {protocol_id} not found")
        try:
            view = build_view(session, protocol, viewer, backend=backend, sort=sort, order=order)
        except InvalidInputError as exc:
            return viewer, bad_request(request, viewer, str(exc))
        session.expunge(protocol)
        return viewer, view


def _column_headers(request: Request, view: LeaderboardView) -> list[dict[str, Any]]:
    return [
        {
            "column": column,
            "key": column.metric_key(view.scenario),
            "link": sort_link(request, column, view.active, view.descending),
            "active": column.key == view.active,
            "label": f"{column.label} ({view.scenario})"
            if column is view.primary
            else column.label,
            "definition": column.definition,
        }
        for column in view.columns
    ]


def _backend_links(request: Request, view: LeaderboardView) -> list[dict[str, Any]]:
    query = {k: v for k, v in request.query_params.items() if k in ("backend", "sort", "order")}
    return [
        {
            "name": name,
            "active": name == view.backend,
            "link": f"{request.url.path}?{urlencode({**query, 'backend': name})}",
        }
        for name in view.backends
    ]


@router.get("/protocols/{protocol_id}", response_class=HTMLResponse)
def leaderboard_page(
    request: Request,
    protocol_id: DbId,
    context: ContextDep,
    backend: str | None = Query(None, max_length=32),
    sort: str | None = Query(None, max_length=80),
    order: str | None = Query(None, pattern="^(asc|desc)$"),
) -> Response:
    """One row per visible submission (its latest succeeded job), sortable by every column."""
    viewer, view = lookup_view(request, context, protocol_id, backend, sort, order)
    if not isinstance(view, LeaderboardView):
        return view
    with context.database.session_scope() as session:
        top = [row.job_id for row in view.det_rows()]
        n_curves = len(det_curves_of(session, top, det_key(view.scenario, view.backend)))
        now = dt.datetime.now(dt.UTC)
        phase_rows = list_phases(session, protocol_id)
        phases = phases_html(phase_rows, now)
        hidden = hidden_phase_names(phase_rows, now)
    query = {k: v for k, v in request.query_params.items() if k in ("backend", "sort", "order")}
    suffix = f"?{urlencode(query)}" if query else ""
    plot_query = urlencode({"backend": view.backend})
    has_utility = any(r.values.get(WER_INCREASE_KEY) is not None for r in view.display)
    return render(
        request,
        "leaderboard.html",
        viewer,
        row_html=[
            row_html(
                row,
                view.ranks[row.submission_id],
                view.columns,
                view.scenario,
                view.tiers.get(row.submission_id, 0),
                hidden.get(row.phase_id) if row.phase_id is not None else None,
            )
            for row in view.display
        ],
        has_hidden=any(row.phase_id in hidden for row in view.display),
        utility_measured=view.utility_measured,
        wer_bound=view.wer_bound,
        utility_tiers=UTILITY_TIERS,
        utility_plot_link=(
            f"/protocols/{view.protocol.id}/utility.png?{plot_query}"
            if view.utility_measured and has_utility
            else None
        ),
        reference_html=reference_html(view.reference, view.columns),
        phases_html=phases,
        protocol=view.protocol,
        scenario=view.scenario,
        backend=view.backend,
        backend_links=_backend_links(request, view),
        primary_metric=view.metric_label,
        primary_key=view.metric,
        higher_is_better=view.higher,
        columns=_column_headers(request, view),
        descending=view.descending,
        rows=view.display,
        ranks=view.ranks,
        csv_link=f"/protocols/{view.protocol.id}/leaderboard.csv{suffix}",
        det_link=f"/protocols/{view.protocol.id}/det.png?{plot_query}" if n_curves else None,
        det_top=n_curves,
    )


def _csv_text(value: str) -> str:
    """Free text in a CSV cell: a leading ``= + - @`` would be a formula in a spreadsheet."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def leaderboard_csv(view: LeaderboardView) -> str:
    """The rows the page shows (same back-end, same order) as CSV: every column, with each
    metric's standard deviation over seeds and 95 % interval bounds where it has them, and the
    evaluator of each row (marked when an older scorer produced it)."""
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
    header += ["unmask version", "git commit", "scorer", "evaluator outdated"]
    scorer = current_scorer()
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
                std = std_of(row.values, column, key)
                cells.append("" if std is None or value is None else repr(float(std)))
            if column.interval:
                interval = interval_of(row.values, column, key)
                cells += ["", ""] if interval is None else [repr(interval[0]), repr(interval[1])]
        cells += [
            trust_mark(row.trustworthy).word,
            "; ".join(str(r.get("code")) for r in row.trust_reasons),
            _csv_text(row.description or ""),
            row.paper_url or "",
            row.code_url or "",
            row.submitted_at.isoformat(),
        ]
        evaluator = row.evaluator or {}
        cells += [
            str(evaluator.get("unmask_version") or ""),
            str(evaluator.get("git_commit") or ""),
            str(evaluator.get("scorer") or ""),
            "yes" if is_outdated(row.evaluator, scorer) else "no",
        ]
        writer.writerow(cells)
    return out.getvalue()


@router.get("/protocols/{protocol_id}/leaderboard.csv")
def leaderboard_csv_file(
    request: Request,
    protocol_id: DbId,
    context: ContextDep,
    backend: str | None = Query(None, max_length=32),
    sort: str | None = Query(None, max_length=80),
    order: str | None = Query(None, pattern="^(asc|desc)$"),
) -> Response:
    """The leaderboard page's rows as CSV (same query parameters, same visibility)."""
    _, view = lookup_view(request, context, protocol_id, backend, sort, order)
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
