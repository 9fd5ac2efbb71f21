"""The leaderboard's plots: the DET curves of the top-ranked submissions and privacy against
utility; both drawn from the same leaderboard view as the page (same ranking, same rows).

The rows are read on a worker thread; the plot is drawn in the app's CPU pool
(:func:`api.pages.rendering.render_plot`), never on this process's GIL."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from api.context import ApiContext
from api.deps import ContextDep
from api.pages.leaderboard import lookup_view
from api.pages.rendering import image_response, not_found, render_plot
from api.schemas import DbId
from services.platform.leaderboard import WER_INCREASE_KEY, LeaderboardView, det_curves_of, det_key
from services.plotting import render_det_overlay, render_privacy_utility
from services.utility.pareto import pareto_front

router = APIRouter(include_in_schema=False)


def _det_drawn(
    request: Request, context: ApiContext, protocol_id: int, backend: str | None
) -> tuple[dict[str, Any], str] | Response:
    """(the curves to draw, the title) of the DET plot, or the answer instead (404, 422)."""
    viewer, view = lookup_view(request, context, protocol_id, backend, None, None)
    if not isinstance(view, LeaderboardView):
        return view
    top = view.det_rows()
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
        return not_found(request, viewer, "no DET points stored for these submissions")
    return drawn, f"DET: top {len(drawn)}, {view.scenario}, {view.backend}"


@router.get("/protocols/{protocol_id}/det.{fmt}")
async def leaderboard_det_plot(
    request: Request,
    protocol_id: DbId,
    fmt: str,
    context: ContextDep,
    backend: str | None = Query(None, max_length=32),
) -> Response:
    """One DET plot of the top-ranked submissions (protocol scenario, ``backend``), each curve's
    EER marked; drawn from the DET points kept in the job summaries. PNG or SVG."""
    if fmt not in ("png", "svg"):
        return Response("format must be png or svg", status_code=404, media_type="text/plain")
    found = await run_in_threadpool(_det_drawn, request, context, protocol_id, backend)
    if isinstance(found, Response):
        return found
    drawn, title = found
    body = await render_plot(context, render_det_overlay, drawn, title, fmt=fmt)
    return image_response(body, fmt, request)


def _utility_drawn(
    request: Request, context: ApiContext, protocol_id: int, backend: str | None
) -> tuple[tuple[Any, ...], dict[str, Any]] | Response:
    """(the arguments, the keyword arguments) of the privacy-utility plot, or the answer
    instead (404, 422)."""
    viewer, view = lookup_view(request, context, protocol_id, backend, None, None)
    if not isinstance(view, LeaderboardView):
        return view
    rows = [
        r
        for r in view.ranked
        if r.values.get(WER_INCREASE_KEY) is not None
        and r.values.get((view.scenario, view.metric)) is not None
    ]
    if not rows:
        return not_found(request, viewer, "no submission has both privacy and utility values")
    cost = [float(r.values[WER_INCREASE_KEY] or 0.0) for r in rows]
    sign = 1.0 if view.higher else -1.0  # the front wants higher-is-better privacy
    privacy = [float(r.values[(view.scenario, view.metric)] or 0.0) for r in rows]
    usable = [not view.is_unusable(r) for r in rows]
    # Unusable speech is never on the front: its "privacy" is the absence of speech.
    front = pareto_front(
        [sign * p if u else math.nan for p, u in zip(privacy, usable, strict=True)], cost
    )
    points = [
        (f"#{view.ranks[r.submission_id]} {r.submission_name}", c, p, bool(f), u)
        for r, c, p, f, u in zip(rows, cost, privacy, front, usable, strict=True)
    ]
    title = f"Privacy vs utility: {view.protocol.name} v{view.protocol.version} ({view.backend})"
    options = {
        "privacy_label": f"{view.metric_label} ({view.scenario})",
        "utility_bound": view.wer_bound,
    }
    return (points, title), options


@router.get("/protocols/{protocol_id}/utility.{fmt}")
async def leaderboard_utility_plot(
    request: Request,
    protocol_id: DbId,
    fmt: str,
    context: ContextDep,
    backend: str | None = Query(None, max_length=32),
) -> Response:
    """Privacy (the protocol's ranking metric and scenario, ``backend``) against the WER increase
    of every visible submission with both, the Pareto front marked. PNG or SVG."""
    if fmt not in ("png", "svg"):
        return Response("format must be png or svg", status_code=404, media_type="text/plain")
    found = await run_in_threadpool(_utility_drawn, request, context, protocol_id, backend)
    if isinstance(found, Response):
        return found
    args, options = found
    body = await render_plot(context, render_privacy_utility, *args, **options, fmt=fmt)
    return image_response(body, fmt, request)
