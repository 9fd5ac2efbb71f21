"""The leaderboard's plots: the DET curves of the top-ranked submissions and privacy against
utility; both drawn from the same leaderboard view as the page (same ranking, same rows)."""

from __future__ import annotations

import math

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api.deps import ContextDep
from api.pages.leaderboard import lookup_view
from api.pages.rendering import image_response, not_found
from api.schemas import DbId
from services.platform.leaderboard import WER_INCREASE_KEY, LeaderboardView, det_curves_of, det_key

router = APIRouter(include_in_schema=False)


@router.get("/protocols/{protocol_id}/det.{fmt}")
def leaderboard_det_plot(
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
    from services.plotting import render_det_overlay

    title = f"DET: top {len(drawn)}, {view.scenario}, {view.backend}"
    return image_response(render_det_overlay(drawn, title, fmt=fmt), fmt, request)


@router.get("/protocols/{protocol_id}/utility.{fmt}")
def leaderboard_utility_plot(
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
    viewer, view = lookup_view(request, context, protocol_id, backend, None, None)
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
        return not_found(request, viewer, "no submission has both privacy and utility values")
    cost = [float(r.values[WER_INCREASE_KEY] or 0.0) for r in rows]
    sign = 1.0 if view.higher else -1.0  # the front wants higher-is-better privacy
    privacy = [float(r.values[(view.scenario, view.metric)] or 0.0) for r in rows]
    usable = [not view.is_unusable(r) for r in rows]
    # Unusable speech is never on the front: its "privacy" is the absence of speech.
    front = pareto_front(
        [sign * p if u else math.nan for p, u in zip(privacy, usable, strict=True)], cost
    )
    label = view.metric_label
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
    return image_response(body, fmt, request)
